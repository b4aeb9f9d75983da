# SPDX-License-Identifier: Apache-2.0
"""load_policy_cached: the validated Policy as JSON, keyed by path, mtime and size of the file and
every include. Stored under $XDG_CACHE_HOME/slurm-gpu (or ~/.cache/slurm-gpu).

JSON (not pickle) so that reading a cache entry can never run code; an entry is read only when it is
a regular file owned by the current user and writable by nobody else. Any cache problem (unwritable
or impossible dir, corrupt, foreign or stale entry, other version) silently falls back to load_policy.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import zlib
from typing import Any

from slurm_gpu import __version__
from slurm_gpu.policy.kinds import Nested, Section
from slurm_gpu.policy.model import Policy

_FORMAT = 2  # 1 was a pickle
_MAX_ENTRY = 4 * 1024 * 1024


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "slurm-gpu")


def _stamp(paths: tuple[str, ...]) -> list[list[Any]] | None:
    out = []
    for p in paths:
        try:
            s = os.stat(p)
        except OSError:
            return None
        out.append([p, s.st_mtime_ns, s.st_size])
    return out


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def from_plain(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a model dataclass from its ``dataclasses.asdict`` form (after a JSON round trip)."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        value, kind = data[f.name], f.metadata.get("kind")
        if isinstance(kind, Section):
            kwargs[f.name] = tuple(from_plain(kind.cls, v) for v in value)
        elif isinstance(kind, Nested):
            kwargs[f.name] = from_plain(kind.cls, value)
        else:
            kwargs[f.name] = _tuples(value)
    return cls(**kwargs)


def _read_entry(entry: str) -> Any:
    fd = os.open(entry, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 \
                or st.st_size > _MAX_ENTRY:
            raise ValueError("not our cache entry")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return json.loads(fh.read(_MAX_ENTRY + 1))
    finally:
        os.close(fd)


def load_policy_cached(path: str, cache_dir: str | None = None) -> Policy:
    """Like load_policy, reusing a cached parse while no file of the policy changed."""
    real = os.path.realpath(path)
    directory = cache_dir or default_cache_dir()
    # crc32 of the real path (hashlib would load OpenSSL: ~7 ms of gpusub's start-up)
    base = os.path.basename(real).replace(".", "_")[:60]
    entry = os.path.join(directory, f"policy-{base}-{zlib.crc32(real.encode()):08x}.json")
    try:
        data = _read_entry(entry)
        if data["version"] == [_FORMAT, __version__]:
            policy: Policy = from_plain(Policy, data["policy"])
            if data["stamp"] == _stamp((real, *policy.includes)):
                return policy
    except Exception:  # noqa: BLE001 - any cache problem means "parse again"
        pass
    from slurm_gpu.policy.load import load_policy

    policy = load_policy(path)
    try:
        stamp = _stamp((real, *policy.includes))
        if stamp is not None:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            tmp = f"{entry}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": [_FORMAT, __version__], "stamp": stamp,
                           "policy": dataclasses.asdict(policy)}, fh)
            os.replace(tmp, entry)
    except Exception:  # noqa: BLE001 - caching is best effort
        pass
    return policy
