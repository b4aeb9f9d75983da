# SPDX-License-Identifier: Apache-2.0
"""load_policy_cached: a pickle of the parsed Policy, keyed by path, mtime and size of the file and
every include. Stored under $XDG_CACHE_HOME/slurm-gpu (or ~/.cache/slurm-gpu). Any cache problem
(unwritable dir, corrupt or stale entry, other version) silently falls back to load_policy.
"""

from __future__ import annotations

import os
import pickle
import zlib

from slurm_gpu import __version__
from slurm_gpu.policy.model import Policy

_FORMAT = 1


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "slurm-gpu")


def _stamp(paths: tuple[str, ...]) -> tuple[tuple[str, int, int], ...] | None:
    out = []
    for p in paths:
        try:
            s = os.stat(p)
        except OSError:
            return None
        out.append((p, s.st_mtime_ns, s.st_size))
    return tuple(out)


def load_policy_cached(path: str, cache_dir: str | None = None) -> Policy:
    """Like load_policy, reusing a cached parse while no file of the policy changed."""
    real = os.path.realpath(path)
    directory = cache_dir or default_cache_dir()
    # crc32 of the real path (hashlib would load OpenSSL: ~7 ms of gpusub's start-up)
    base = os.path.basename(real).replace(".", "_")[:60]
    entry = os.path.join(directory, f"policy-{base}-{zlib.crc32(real.encode()):08x}.pickle")
    try:
        with open(entry, "rb") as fh:
            version, stamp, policy = pickle.load(fh)
        if version == (_FORMAT, __version__) and isinstance(policy, Policy) \
                and stamp == _stamp((real, *policy.includes)):
            return policy
    except Exception:  # noqa: BLE001 - any cache problem means "parse again"
        pass
    from slurm_gpu.policy.load import load_policy

    policy = load_policy(path)
    try:
        stamp = _stamp((real, *policy.includes))
        if stamp is not None:
            os.makedirs(directory, exist_ok=True)
            tmp = f"{entry}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                pickle.dump(((_FORMAT, __version__), stamp, policy), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, entry)
    except Exception:  # noqa: BLE001 - caching is best effort
        pass
    return policy
