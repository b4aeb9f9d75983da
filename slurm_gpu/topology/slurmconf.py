# SPDX-License-Identifier: Apache-2.0
"""Slurm configuration generated from a Topology: gres.conf lines, the slurm.conf NodeName line and
``fake_gpus.conf`` (Slurm's file for running GPU autodetection without GPUs).

``Cores=`` uses Slurm abstract core ids (see model.py). Slurm's caveat: with
``--gres-flags=enforce-binding`` and the default select/cons_tres core selection, GPU-core affinity is
honoured per *socket*; when a GPU's local cores are only part of a socket (AMD NPS2/NPS4, Intel SNC),
``SlurmdParameters=numa_node_as_socket`` (slurm.conf, 22.05+) makes Slurm treat each NUMA node as a
socket. ``numa_advice()`` says when that applies.
"""

from __future__ import annotations

from slurm_gpu.cpulist import format_cpulist
from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.model import Topology

_RESERVED = set(" \t\n=#")


def check_word(value: str, what: str) -> str:
    """``value`` when it is one word of slurm.conf / gres.conf (no space, ``=`` or ``#``), else TopologyError."""
    if not value or any(ch in _RESERVED for ch in value):
        raise TopologyError(f"bad {what} {value!r}; expected a non-empty word without spaces, '=' or '#'")
    return value


def links_value(topo: Topology, index: int) -> str:
    """Slurm's ``Links=`` for one GPU: comma list in device-index order, -1 for itself, the number of
    direct NVLinks to each other GPU, 0 otherwise. (Real AutoDetect=nvml reports 0 for every pair on
    NVSwitch systems, where lanes end at a switch; ``topo -m`` cannot tell the two apart.)"""
    out = []
    for other in topo.gpus:
        if other.index == index:
            out.append("-1")
        else:
            lk = topo.link_object(f"GPU{index}", f"GPU{other.index}")
            out.append("0" if lk is None or lk.switched else str(lk.nvlinks))
    return ",".join(out)


def _file_spec(device_dir: str, minors: list[int]) -> str:
    base = device_dir.rstrip("/") + "/nvidia"
    if len(minors) == 1:
        return f"{base}{minors[0]}"
    return f"{base}[{minors[0]}-{minors[-1]}]"


def gres_conf_lines(
    topo: Topology,
    node_names: str,
    gpu_type: str | None,
    device_dir: str = "/dev",
    *,
    links: bool = False,
) -> list[str]:
    """gres.conf lines for one node type.

    GPUs are taken in index order; consecutive GPUs with consecutive minors and identical ``Cores=``
    share one ``File=/dev/nvidia[a-b]`` line. With ``links=True`` each GPU gets its own line with
    ``Links=`` (Slurm requires one device per line then).
    """
    check_word(node_names, "node names")
    if gpu_type is not None:
        check_word(gpu_type, "GPU type")
    if not topo.gpus:
        return []
    head = f"NodeName={node_names} Name=gpu" + (f" Type={gpu_type}" if gpu_type else "")
    groups: list[tuple[list[int], tuple[int, ...], list[int]]] = []  # minors, cores, indexes
    for g in topo.gpus:
        cores = topo.gpu_cores(g.index)
        if not links and groups and groups[-1][1] == cores and groups[-1][0][-1] + 1 == g.device_minor:
            groups[-1][0].append(g.device_minor)
            groups[-1][2].append(g.index)
        else:
            groups.append(([g.device_minor], cores, [g.index]))
    lines = []
    for minors, cores, indexes in groups:
        line = f"{head} File={_file_spec(device_dir, minors)}"
        if cores:
            line += f" Cores={format_cpulist(cores)}"
        if links:
            line += f" Links={links_value(topo, indexes[0])}"
        lines.append(line)
    return lines


def node_conf_line(topo: Topology, node_names: str, gpu_type: str | None, **extra: object) -> str:
    """``NodeName=... Sockets= CoresPerSocket= ThreadsPerCore= [RealMemory=] [Gres=gpu[:type]:N]``
    plus ``extra`` key=value pairs in the order given (e.g. ``Port=``, ``Features=``)."""
    check_word(node_names, "node names")
    parts = [
        f"NodeName={node_names}",
        f"Sockets={topo.sockets}",
        f"CoresPerSocket={topo.cores_per_socket}",
        f"ThreadsPerCore={topo.threads_per_core}",
    ]
    if topo.memory_mb is not None:
        parts.append(f"RealMemory={topo.memory_mb}")
    if topo.gpus:
        parts.append(f"Gres=gpu:{check_word(gpu_type, 'GPU type') + ':' if gpu_type else ''}{len(topo.gpus)}")
    for key, value in extra.items():
        parts.append(f"{check_word(key, 'slurm.conf key')}={check_word(str(value), key + ' value')}")
    return " ".join(parts)


def fake_gpus_conf(topo: Topology, gpu_type: str, device_dir: str = "/dev") -> str:
    """Slurm's ``fake_gpus.conf`` (placed next to slurm.conf, read by slurmd's gpu plugin instead of
    NVML): one line per GPU, ``<type>|<sys_cpu_count>|<cpu_range>|<links>|<device_file>``.
    ``cpu_range`` is in *machine* (OS) cpu ids — slurmd converts it to abstract ids itself."""
    check_word(gpu_type, "GPU type")
    out = []
    for g in topo.gpus:
        cpus = topo.gpu_cpus(g.index)
        rng = format_cpulist(cpus) if cpus else "(null)"
        out.append(
            f"{gpu_type}|{topo.total_cpus}|{rng}|{links_value(topo, g.index)}|"
            f"{device_dir.rstrip('/')}/nvidia{g.device_minor}"
        )
    return "\n".join(out) + ("\n" if out else "")


def numa_advice(topo: Topology) -> str | None:
    """Advice text when some GPU's local cores are only part of its socket (NPS2/NPS4, SNC)."""
    partial = []
    for g in topo.gpus:
        cores = topo.gpu_cores(g.index)
        sock = topo.gpu_socket(g.index)
        if cores and sock is not None and len(cores) < len(topo.socket_cores(sock)):
            partial.append(f"GPU{g.index}")
    if not partial:
        return None
    return (
        f"{', '.join(partial)} are local to part of a socket only; Slurm applies GPU-core binding per "
        "socket, so consider SlurmdParameters=numa_node_as_socket in slurm.conf (then Sockets= counts "
        "NUMA nodes)"
    )
