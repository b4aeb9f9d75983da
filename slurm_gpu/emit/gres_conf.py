# SPDX-License-Identifier: Apache-2.0
"""gres.conf from the policy's node types and their topologies: ``AutoDetect=off`` and one line per
GPU group with its ``File=`` devices and local ``Cores=``. Pure.

**Static MIG** (``mig_mode: static``, docs/mig_mps.md): slurmd schedules the MIG devices themselves, so
each one is a GRES of type ``<gpu type>_<profile>`` (``a100_3g.40gb``, the name Slurm's AutoDetect=nvml
gives a MIG device and that gpusub's fraction requests ask for), one line per device, with the device
files a job of that slice needs in its cgroup as ``MultipleFiles=`` (gres.conf(5), Slurm 21.08+): the
parent GPU ``/dev/nvidiaN`` and the MIG capability devices of its GPU instance and compute instance,
``/dev/nvidia-caps/nvidia-capM``. The capability minors follow the driver's
``/proc/driver/nvidia-caps/mig-minors`` table: ``config`` 1, ``monitor`` 2, then per GPU minor ``g`` and
GPU instance ``i`` (0-14) ``gpu<g>/gi<i>/access`` = 3 + (15 g + i) x 9, followed by its compute
instances ``gpu<g>/gi<i>/ci<c>/access`` (c 0-7). The GPU-instance ids are the driver's for the placements
the hooks create the layout at (:func:`static_mig_devices`; fixed by placement, not by creation order or
the slice's position), each with its one compute instance 0; lines per GPU in NVML's MIG order.
tests/topology/test_slurm_detection.py checks them against Slurm's own AutoDetect=nvml. On hardware,
compare with ``nvidia-smi mig -lgi`` and ``slurmd -G``, or use ``AutoDetect=nvml`` (docs/mig_mps.md).
Dynamic-MIG and non-MIG nodes keep whole-GPU lines: slurmd never sees a per-job layout.

**Shards** (``shards_per_gpu``, docs/cluster.md "Shards"): after a node type's GPU lines, one
``Name=shard`` line per GPU with that GPU's device file and its count of shards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from slurm_gpu.hostlist import compress_hostlist
from slurm_gpu.policy.model import NodeType, Policy

if TYPE_CHECKING:
    from slurm_gpu.topology.model import Topology

FIRST_CAP_MINOR = 3  # mig-minors: config 1, monitor 2, then gpu0/gi0/access
GIS_PER_GPU = 15  # GPU instance ids 0-14
MINORS_PER_GI = 9  # giI/access, then ciC/access for C 0-7


def mig_cap_minors(gpu_minor: int, gi: int, ci: int = 0) -> tuple[int, int]:
    """(minor of ``gpu<g>/gi<i>/access``, minor of ``gpu<g>/gi<i>/ci<c>/access``) in mig-minors."""
    if gpu_minor < 0 or not 0 <= gi < GIS_PER_GPU or not 0 <= ci < MINORS_PER_GI - 1:
        raise ValueError(f"no MIG capability for GPU minor {gpu_minor}, GPU instance {gi}, compute instance {ci}")
    access = FIRST_CAP_MINOR + (gpu_minor * GIS_PER_GPU + gi) * MINORS_PER_GI
    return access, access + 1 + ci


def static_mig_types(node_type: NodeType) -> list[tuple[str, int]]:
    """(gres type, count per node) of a static-MIG node type, types in first-declared order; [] otherwise."""
    if node_type.mig_mode != "static" or not node_type.gpu_type or not node_type.gpus:
        return []
    counts: dict[str, int] = {}
    for prof in node_type.mig_layout:
        name = f"{node_type.gpu_type}_{prof}"
        counts[name] = counts.get(name, 0) + node_type.gpus
    return list(counts.items())


def static_mig_devices(node_type: NodeType, memory_gb: int) -> list[tuple[str, int]]:
    """(profile, GPU-instance id) of each MIG device of one GPU of a static node type, in NVML's MIG order
    (by GPU-instance id): the layout placed as the hooks create it (:func:`slurm_gpu.sharing.mig.place`),
    each placement with the id the driver gives it (:func:`slurm_gpu.sharing.mig.gpu_instance_id`), one
    compute instance 0 each. Never the slice's position in ``mig_layout``."""
    from slurm_gpu.sharing.mig import Layout, gpu_instance_id, layout_counts, nominal_geometry, place

    geometry = nominal_geometry(dict.fromkeys(node_type.mig_layout), memory_gb)
    placed = place(Layout.of(True, layout_counts(node_type.mig_layout)), geometry)
    return sorted(((prof, gpu_instance_id(geometry[prof].memory_slices, start)) for prof, start in placed),
                  key=lambda d: d[1])


def static_mig_lines(node_type: NodeType, topo: Topology, device_dir: str = "/dev",
                     memory_gb: int | None = None) -> list[str]:
    """One ``NodeName=... Name=gpu Type=<type>_<profile> MultipleFiles=... [Cores=...]`` line per MIG device.
    ``memory_gb``: the GPU's memory (the policy's GPU type; else the topology's, else 80)."""
    from slurm_gpu.cpulist import format_cpulist
    from slurm_gpu.topology.slurmconf import check_word

    base = device_dir.rstrip("/")
    nodes = check_word(compress_hostlist(list(node_type.nodes)), "node names")
    out: list[str] = []
    for g in topo.gpus[:node_type.gpus]:
        cores = topo.gpu_cores(g.index)
        mem = memory_gb or (round(g.memory_mib / 1024) if g.memory_mib else 80)
        for prof, gi in static_mig_devices(node_type, mem):
            gi_minor, ci_minor = mig_cap_minors(g.device_minor, gi)
            files = ",".join((f"{base}/nvidia{g.device_minor}", f"{base}/nvidia-caps/nvidia-cap{gi_minor}",
                              f"{base}/nvidia-caps/nvidia-cap{ci_minor}"))
            line = f"NodeName={nodes} Name=gpu Type={check_word(f'{node_type.gpu_type}_{prof}', 'GPU type')} " \
                   f"MultipleFiles={files}"
            if cores:
                line += f" Cores={format_cpulist(cores)}"
            out.append(line)
    return out


def shard_count(node_type: NodeType) -> int:
    """gres/shard per node of a node type (``shards_per_gpu`` x its GPUs; 0: no shards)."""
    return node_type.shards_per_gpu * node_type.gpus if node_type.gpu_type and not static_mig_types(node_type) else 0


def shard_lines(node_type: NodeType, topo: Topology, device_dir: str = "/dev") -> list[str]:
    """Sharding (Slurm 22.05+, gres.html "Sharding"): one ``Name=shard Count=<shards per GPU>
    File=/dev/nvidiaN`` line per GPU, so that each GPU's shards are its own (Slurm copies Type and Cores
    from the GPU's line and ignores them on a shard line)."""
    from slurm_gpu.topology.slurmconf import check_word

    if not shard_count(node_type):
        return []
    nodes = check_word(compress_hostlist(list(node_type.nodes)), "node names")
    return [f"NodeName={nodes} Name=shard Count={node_type.shards_per_gpu} "
            f"File={device_dir.rstrip('/')}/nvidia{g.device_minor}" for g in topo.gpus[:node_type.gpus]]


def gres_names(lines: Iterable[str]) -> tuple[str, ...]:
    """slurm.conf ``GresTypes`` for gres.conf ``lines``: gpu, then every other ``Name=`` they give (shard)."""
    names = {"gpu": None}
    for line in lines:
        for word in line.split():
            if word.startswith("Name="):
                names.setdefault(word[len("Name="):])
    return tuple(names)


def gres_lines(policy: Policy, topologies: Mapping[str, Topology], device_dir: str = "/dev") -> list[str]:
    """The ``NodeName=... Name=gpu Type=... File=... Cores=...`` lines, node type by node type (static
    MIG node types: one ``MultipleFiles=`` line per MIG device)."""
    from slurm_gpu.topology.slurmconf import gres_conf_lines

    out: list[str] = []
    for nt in policy.node_types:
        if nt.gpu_type and nt.gpus and static_mig_types(nt):
            gt = policy.gpu_type(nt.gpu_type)
            out.extend(static_mig_lines(nt, topologies[nt.name], device_dir, int(gt.memory_gb) if gt else None))
        elif nt.gpu_type and nt.gpus:
            out.extend(gres_conf_lines(topologies[nt.name], compress_hostlist(list(nt.nodes)), nt.gpu_type, device_dir))
            out.extend(shard_lines(nt, topologies[nt.name], device_dir))
    return out


def gres_conf(policy: Policy, topologies: Mapping[str, Topology], device_dir: str = "/dev", source: str = "") -> str:
    header = f"# generated by slurm-gpu admin emit from {source or policy.name} and its topology files"
    return "\n".join([header, "AutoDetect=off", *gres_lines(policy, topologies, device_dir)]) + "\n"


__all__ = ["gres_lines", "gres_conf", "mig_cap_minors", "static_mig_types", "static_mig_lines", "static_mig_devices",
           "shard_count", "shard_lines", "gres_names"]
