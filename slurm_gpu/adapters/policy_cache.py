# SPDX-License-Identifier: Apache-2.0
"""load_policy_cached: the validated Policy as JSON in the one per-user cache (slurm_gpu/adapters/cache.py),
keyed by the policy file's real path, mtime and size; the entry also holds the stamp of every include,
checked again when it is read. JSON, not pickle: reading an entry can never run code. Any cache problem
(no or a foreign directory, a corrupt, foreign or stale entry, another version) falls back to load_policy.
"""

from __future__ import annotations

import dataclasses
import json
import os

from slurm_gpu.adapters.cache import Cache, entry_name, file_stamps, user_cache_dir
from slurm_gpu.policy.cache import from_plain
from slurm_gpu.policy.model import Policy

_MAX_ENTRY = 4 * 1024 * 1024


def load_policy_cached(path: str, cache_dir: str | None = None) -> Policy:
    """Like load_policy, reusing a cached parse while no file of the policy changed. ``cache_dir``:
    the cache's directory [the user's cache, :func:`slurm_gpu.adapters.cache.user_cache_dir`]."""
    real = os.path.realpath(path)
    cache = Cache(cache_dir or user_cache_dir(), _MAX_ENTRY)
    name = entry_name("policy-" + os.path.basename(real).replace(".", "_")[:60], real) + ".json"
    main = file_stamps((real,))
    key = json.dumps(main)
    raw = cache.get(name, key) if main is not None else None
    if raw is not None:
        try:
            data = json.loads(raw)
            policy: Policy = from_plain(Policy, data["policy"])
            if data["stamp"] == file_stamps((real, *policy.includes)):
                return policy
        except Exception:  # noqa: BLE001 - any cache problem means "parse again"
            pass
    from slurm_gpu.policy.load import load_policy

    policy = load_policy(path)
    stamp = file_stamps((real, *policy.includes))
    if stamp is not None and main is not None and stamp[0] == main[0]:
        try:
            cache.put(name, key, json.dumps({"stamp": stamp, "policy": dataclasses.asdict(policy)}).encode())
        except (TypeError, ValueError):
            pass  # caching is best effort
    return policy


__all__ = ["load_policy_cached"]
