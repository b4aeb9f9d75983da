# SPDX-License-Identifier: Apache-2.0
"""The process's CPU allocation, CPU affinity and NUMA memory policy (Linux).

- ``read_allocation``: the cpuset of the Slurm job step's cgroup (``/proc/self/cgroup`` names a
  ``job_N`` path; cgroup v2 ``cpuset.cpus.effective`` or v1 ``cpuset.effective_cpus``/``cpuset.cpus``),
  else ``sched_getaffinity(0)``. Never the node's or the socket's cpus.
- ``set_affinity``: ``sched_setaffinity`` for the calling thread, or every thread of the process.
- ``set_mempolicy``: the ``set_mempolicy(2)`` system call through ctypes (no numactl, no libnuma).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from slurm_gpu.cpulist import parse_cpulist

# set_mempolicy(2) system call number per machine (asm/unistd.h; arm64 uses asm-generic)
SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "ppc64le": 261, "ppc64": 261}
MPOL = {"default": 0, "preferred": 1, "bind": 2, "interleave": 3, "local": 4, "preferred_many": 5}


def job_cgroup_cpuset(root: str = "/") -> tuple[tuple[int, ...], str] | None:
    """(cpus, file) of the nearest cgroup on our path, inside a Slurm job, that has a cpuset."""
    base = Path(root)
    try:
        lines = (base / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    names: tuple[str, ...]
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if "/job_" not in path:
            continue
        if controllers == "":
            mount, names = base / "sys/fs/cgroup", ("cpuset.cpus.effective",)
        elif "cpuset" in controllers.split(","):
            mount, names = base / "sys/fs/cgroup/cpuset", ("cpuset.effective_cpus", "cpuset.cpus")
        else:
            continue
        rel = path.strip("/").split("/")
        while rel and any(p.startswith("job_") for p in rel):
            d = mount.joinpath(*rel)
            for name in names:
                try:
                    text = (d / name).read_text().strip()
                except OSError:
                    continue
                if text:
                    return parse_cpulist(text), str(d / name)
            rel = rel[:-1]
    return None


def read_allocation(root: str = "/") -> tuple[tuple[int, ...], str]:
    """(the cpus this process's job step may use, where that came from)."""
    found = job_cgroup_cpuset(root)
    if found is not None:
        return found[0], f"cpuset {found[1]}"
    return tuple(sorted(os.sched_getaffinity(0))), "sched_getaffinity"


def set_affinity(cpus: Collection[int], all_threads: bool = False) -> None:
    """Pin the calling thread (``all_threads``: every thread of the process). OSError on refusal."""
    os.sched_setaffinity(0, cpus)
    if not all_threads:
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, ValueError):
            continue  # the thread ended


def _libc() -> Any:
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def set_mempolicy(policy: str, nodes: Collection[int]) -> None:
    """``set_mempolicy(2)`` for the calling thread (inherited by threads and processes it starts).
    ``policy``: preferred (one node; several: preferred_many, kernel >= 5.15), bind, interleave or
    default. OSError with the errno when the kernel refuses (e.g. seccomp in a container)."""
    machine = os.uname().machine
    if machine not in SET_MEMPOLICY:
        raise OSError(f"set_mempolicy: unknown system call number on {machine}")
    mode = MPOL["preferred_many" if policy == "preferred" and len(nodes) > 1 else policy]
    ctypes, libc = _libc()
    words = max(nodes, default=0) // 64 + 1
    mask = (ctypes.c_ulong * words)()
    for n in nodes:
        mask[n // 64] |= 1 << (n % 64)
    nr = ctypes.c_long(SET_MEMPOLICY[machine])
    if mode == MPOL["default"]:
        rc = libc.syscall(nr, ctypes.c_long(mode), None, ctypes.c_ulong(0))
    else:
        rc = libc.syscall(nr, ctypes.c_long(mode), mask, ctypes.c_ulong(words * 64 + 1))
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"set_mempolicy({policy}, nodes {sorted(nodes)}): {os.strerror(err)}")
