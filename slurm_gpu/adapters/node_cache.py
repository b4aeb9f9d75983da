# SPDX-License-Identifier: Apache-2.0
"""The cluster's node records for gpusub's verdict, kept a short while in the one per-user cache
(:mod:`slurm_gpu.adapters.cache`: a 0700 directory of the user's, entries 0600 of the user's, opened
without following a symlink; any problem is a miss).

gpusub's ``check_nodes`` step and its type resolution read what each node offers (partitions, features,
gres, CPUs, memory: :class:`slurm_gpu.policy.nodes.NodeOffer`), which changes only when an admin changes
the nodes. Reading it live is one ``scontrol show node -d -o`` per submission (about 8-12 ms of CPU on
the lab machine). So the offers are kept, as JSON, one entry per ``SLURM_CONF``:

- keyed by the slurm.conf path, its and gres.conf's mtime and size (a reconfigure after an edit is a
  miss), the backend that read them and this package's version (the cache's own line);
- fresh for :data:`TTL_S` seconds after the live read that wrote them (``$GPUSUB_NODES_TTL``: seconds,
  ``0`` reads live every time); an entry written "in the future" (the clock went back) is a miss;
- never the last word on a refusal: gpusub re-reads the records live before it refuses a job on cached
  data, and when sbatch refuses a job decided on cached data (slurm_gpu/submit/gpusub.py). So a stale
  entry can only cost a second read, never refuse a job that the live records (and Slurm) would take.

JSON, not pickle: reading an entry never runs code, and an entry that is not exactly the expected shape
is a miss.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence

from slurm_gpu.adapters.cache import Cache, entry_name, user_cache_dir
from slurm_gpu.errors import UsageError
from slurm_gpu.policy.nodes import NodeOffer

TTL_S = 45.0
TTL_VAR = "GPUSUB_NODES_TTL"
MAX_TTL_S = 3600.0
_MAX_ENTRY = 4 << 20
DEFAULT_CONF = "/etc/slurm/slurm.conf"


def ttl_of(env: Mapping[str, str]) -> float:
    """``$GPUSUB_NODES_TTL`` in seconds (0 to :data:`MAX_TTL_S`; unset: :data:`TTL_S`); a bad value is
    a :class:`UsageError` (one line, exit 2)."""
    raw = env.get(TTL_VAR)
    if raw is None or raw == "":
        return TTL_S
    try:
        if not raw.isascii():  # float() reads other scripts' digits
            raise ValueError
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= MAX_TTL_S:  # NaN fails too
        raise UsageError(f"{TTL_VAR}={raw}: seconds from 0 (read the nodes live) to {MAX_TTL_S:g}")
    return value


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_mtime_ns}:{st.st_size}"


def _conf_key(env: Mapping[str, str], reader: str) -> tuple[str, str]:
    """The entry's slurm.conf and its key: slurm.conf's and gres.conf's (beside it) stamps, the reader."""
    conf = env.get("SLURM_CONF") or DEFAULT_CONF
    gres = os.path.join(os.path.dirname(conf), "gres.conf")
    return conf, json.dumps(["nodes", conf, _stamp(conf), _stamp(gres), reader])


def _cache(env: Mapping[str, str], cache_dir: str | None) -> Cache:
    return Cache(cache_dir or user_cache_dir(env), _MAX_ENTRY)


def _name(conf: str) -> str:
    return entry_name("nodes", conf) + ".json"


def _str_tuple(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("not a list of strings")
    return tuple(value)


def _opt_int(value: object) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise ValueError("not a count")
    return value


def _gres(value: object) -> tuple[tuple[str, str | None, int], ...]:
    if not isinstance(value, list):
        raise ValueError("gres: not a list")
    out: list[tuple[str, str | None, int]] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and (item[1] is None or isinstance(item[1], str)) and type(item[2]) is int):
            raise ValueError("gres: not [name, type, count]")
        out.append((item[0], item[1], item[2]))
    return tuple(out)


def offer_to_json(node: NodeOffer) -> list[object]:
    """One offer as a JSON list (the cluster's records: no ``mig_unknown``, no ``unknown``)."""
    return [node.name, list(node.partitions), sorted(node.features), [list(g) for g in node.gres],
            node.cpus, node.memory_mb]


def offer_from_json(value: object) -> NodeOffer:
    """The inverse of :func:`offer_to_json`; ValueError for anything else."""
    if not isinstance(value, list) or len(value) != 6 or not isinstance(value[0], str):
        raise ValueError("not a node offer")
    return NodeOffer(value[0], _str_tuple(value[1]), frozenset(_str_tuple(value[2])), _gres(value[3]),
                     _opt_int(value[4]), _opt_int(value[5]))


def cached_offers(env: Mapping[str, str], reader: str, cache_dir: str | None = None,
                  now: float | None = None) -> tuple[NodeOffer, ...] | None:
    """The offers a live read by ``reader`` (the backend: its type and scontrol) stored less than
    ``$GPUSUB_NODES_TTL`` seconds ago for this SLURM_CONF; None on a miss (none, stale, another
    slurm.conf, reader or version, a foreign or corrupt entry, TTL 0)."""
    ttl = ttl_of(env)
    if ttl <= 0:
        return None
    conf, key = _conf_key(env, reader)
    raw = _cache(env, cache_dir).get(_name(conf), key)
    if raw is None:
        return None
    now = time.time() if now is None else now
    try:
        data = json.loads(raw)
        written = data["written"]
        if not isinstance(written, (int, float)) or not now - ttl < written <= now:
            return None
        nodes = data["nodes"]
        if not isinstance(nodes, list) or not nodes:
            return None
        return tuple(offer_from_json(n) for n in nodes)
    except (ValueError, KeyError, TypeError):  # json.JSONDecodeError is a ValueError
        return None


def store_offers(env: Mapping[str, str], reader: str, nodes: Sequence[NodeOffer], cache_dir: str | None = None,
                 now: float | None = None) -> bool:
    """Keep ``nodes`` (a live read by ``reader``) for this SLURM_CONF; False when nothing was written
    (TTL 0, no cache, no nodes)."""
    if not nodes or ttl_of(env) <= 0:
        return False
    conf, key = _conf_key(env, reader)
    data = {"written": time.time() if now is None else now, "conf": conf,
            "nodes": [offer_to_json(n) for n in nodes]}
    return _cache(env, cache_dir).put(_name(conf), key, json.dumps(data, separators=(",", ":")).encode())


__all__ = ["TTL_S", "TTL_VAR", "ttl_of", "cached_offers", "store_offers", "offer_to_json", "offer_from_json"]
