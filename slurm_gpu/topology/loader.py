# SPDX-License-Identifier: Apache-2.0
"""Load a topology from a file: a YAML descriptor, hwloc XML or our own JSON.

This is the one module of the topology package that reads files; everything it calls is pure.

Descriptor keys (paths relative to the descriptor)::

    nvidia_smi: h100x8.nvidia-smi-topo.txt   # `nvidia-smi topo -m` capture
    lscpu: h100x8.lscpu-p.txt                # `lscpu -p` or `lscpu` (optional with nvidia_smi)
    hwloc: node.xml                          # instead of nvidia_smi/lscpu
    gpu: {name: "NVIDIA H100 80GB HBM3", memory_mib: 81559, mig_capable: true}
    memory_mb: 512000                        # RealMemory for slurm.conf
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.model import Topology, topology_from_json

DESCRIPTOR_KEYS = ("nvidia_smi", "lscpu", "hwloc", "gpu", "memory_mb", "description")
GPU_KEYS = ("name", "memory_mib", "mig_capable")


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TopologyError(
            f"cannot read {what} {str(path)!r}: {e.strerror if isinstance(e, OSError) else e}"
        ) from None


def load_topology_file(path: str | Path) -> Topology:
    """Dispatch on suffix: ``.yaml``/``.yml`` descriptor, ``.xml`` hwloc v2, ``.json`` Topology.to_json()."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return load_descriptor(p)
    if suffix == ".xml":
        from slurm_gpu.topology.hwloc import topology_from_hwloc

        return topology_from_hwloc(_read(p, "hwloc XML"), source=str(p))
    if suffix == ".json":
        import json

        try:
            data = json.loads(_read(p, "topology JSON"))
        except json.JSONDecodeError as e:
            raise TopologyError(f"{p}:{e.lineno}: bad JSON: {e.msg}") from None
        if not isinstance(data, dict):
            raise TopologyError(f"{p}: expected a JSON object from `topo show --json --full`")
        return topology_from_json(data)
    raise TopologyError(f"{p}: unknown topology file type {suffix!r}; expected .yaml, .yml, .xml or .json")


def load_descriptor(path: Path) -> Topology:
    import yaml  # lazy: keeps gpusub start-up fast

    try:
        data = yaml.safe_load(_read(path, "topology descriptor"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise TopologyError(f"{where}: bad YAML: {getattr(e, 'problem', e)}") from None
    return topology_from_descriptor(data, path)


def topology_from_descriptor(data: Any, path: Path) -> Topology:
    if not isinstance(data, dict):
        raise TopologyError(f"{path}: expected a mapping with keys {', '.join(DESCRIPTOR_KEYS)}")
    unknown = sorted(set(data) - set(DESCRIPTOR_KEYS))
    if unknown:
        raise TopologyError(f"{path}: unknown key(s) {', '.join(unknown)}; accepted: {', '.join(DESCRIPTOR_KEYS)}")
    gpu = data.get("gpu") or {}
    if not isinstance(gpu, dict) or set(gpu) - set(GPU_KEYS):
        raise TopologyError(f"{path}: gpu: expected a mapping with keys {', '.join(GPU_KEYS)}")
    memory_mb = data.get("memory_mb")
    if memory_mb is not None and (not isinstance(memory_mb, int) or isinstance(memory_mb, bool) or memory_mb <= 0):
        raise TopologyError(f"{path}: memory_mb: expected a positive integer (MB), got {memory_mb!r}")
    base = path.parent
    has_smi, has_hwloc = "nvidia_smi" in data, "hwloc" in data
    if has_smi == has_hwloc:
        raise TopologyError(f"{path}: give exactly one of nvidia_smi: FILE or hwloc: FILE")
    if has_hwloc:
        if "lscpu" in data:
            raise TopologyError(f"{path}: lscpu: only goes with nvidia_smi:, hwloc XML has the CPUs already")
        from slurm_gpu.topology.hwloc import topology_from_hwloc

        f = base / str(data["hwloc"])
        topo = topology_from_hwloc(_read(f, "hwloc XML"), source=str(f))
        return _apply_gpu_defaults(topo, gpu, memory_mb)
    from slurm_gpu.topology.lscpu import parse_lscpu
    from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

    layout = None
    if "lscpu" in data:
        f = base / str(data["lscpu"])
        layout = parse_lscpu(_read(f, "lscpu output"), source=str(f))
    f = base / str(data["nvidia_smi"])
    return topology_from_nvidia_smi(
        _read(f, "nvidia-smi topo -m capture"), layout, gpu_defaults=gpu, memory_mb=memory_mb, source=str(f)
    )


def _apply_gpu_defaults(topo: Topology, gpu: dict[str, Any], memory_mb: int | None) -> Topology:
    from dataclasses import replace

    gpus = tuple(
        replace(
            g,
            name=g.name if g.name else gpu.get("name"),
            memory_mib=g.memory_mib if g.memory_mib else gpu.get("memory_mib"),
            mig_capable=bool(gpu.get("mig_capable", g.mig_capable)),
        )
        for g in topo.gpus
    )
    return replace(topo, gpus=gpus, memory_mb=memory_mb if memory_mb is not None else topo.memory_mb)
