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

import os
import stat
from pathlib import Path
from typing import Any

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.model import GpuDefaults, Topology, clip
from slurm_gpu.topology.model_json import topology_from_json

DESCRIPTOR_KEYS = ("nvidia_smi", "lscpu", "hwloc", "gpu", "memory_mb", "description")
GPU_KEYS = ("name", "memory_mib", "mig_capable")
MAX_INPUT_BYTES = 4 * 2**20  # no real capture, lscpu, hwloc XML or topology JSON comes near this


def read_text(path: str | Path, what: str) -> str:
    """Read one input file as UTF-8 text: a regular file only (never a FIFO, device, socket or
    directory; ``/dev/zero`` and ``/dev/urandom`` are refused before any byte is read), at most
    MAX_INPUT_BYTES (at most that many plus one bytes are read). Errors are one-line TopologyErrors."""
    name = str(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # O_NONBLOCK: a FIFO cannot hang us
    except OSError as e:
        raise TopologyError(f"cannot read {what} {name!r}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (device, FIFO or socket)"
            raise TopologyError(f"{name}: {what} is {kind}; give a saved text file")
        if st.st_size > MAX_INPUT_BYTES:
            raise TopologyError(f"{name}: {what} is {st.st_size} bytes; the limit is {MAX_INPUT_BYTES}")
        chunks: list[bytes] = []
        left = MAX_INPUT_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise TopologyError(f"cannot read {what} {name!r}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_INPUT_BYTES:
        raise TopologyError(f"{name}: {what} is larger than the limit of {MAX_INPUT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TopologyError(f"{name}: {what} is not UTF-8 text (byte {e.start}); give the saved text output") from None


_KINDS = {".yaml": "topology descriptor", ".yml": "topology descriptor", ".xml": "hwloc XML", ".json": "topology JSON"}


def _value_error(e: ValueError) -> str:
    if "digits" in str(e):  # Python's int-string limit
        return "a number is longer than Python's 4300-digit limit"
    return clip(str(e), 100)


def load_topology_file(path: str | Path) -> Topology:
    """Dispatch on suffix: ``.yaml``/``.yml`` descriptor, ``.xml`` hwloc v2, ``.json`` Topology.to_json().
    The file is read first (a regular file of bounded size only), whatever its suffix."""
    p = Path(path)
    suffix = p.suffix.lower()
    text = read_text(p, _KINDS.get(suffix, "topology file"))
    if suffix in (".yaml", ".yml"):
        return load_descriptor(p, text)
    if suffix == ".xml":
        from slurm_gpu.topology.hwloc import topology_from_hwloc

        return topology_from_hwloc(text, source=str(p))
    if suffix == ".json":
        import json

        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise TopologyError(f"{p}:{e.lineno}: bad JSON: {e.msg}") from None
        except RecursionError:
            raise TopologyError(
                f"{p}: bad JSON: nested too deeply; expected `topo show --json --full` output") from None
        except ValueError as e:
            raise TopologyError(f"{p}: bad JSON: {_value_error(e)}") from None
        if not isinstance(data, dict):
            raise TopologyError(f"{p}: expected a JSON object from `topo show --json --full`")
        try:
            return topology_from_json(data)
        except TopologyError as e:
            raise TopologyError(f"{p}: {e}") from None
    raise TopologyError(f"{p}: unknown topology file type {clip(suffix)}; expected .yaml, .yml, .xml or .json")


def load_descriptor(path: Path, text: str | None = None) -> Topology:
    import yaml  # lazy: keeps gpusub start-up fast

    if text is None:
        text = read_text(path, "topology descriptor")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise TopologyError(f"{where}: bad YAML: {getattr(e, 'problem', e)}") from None
    except RecursionError:
        raise TopologyError(f"{path}: bad YAML: nested too deeply; a descriptor is a flat mapping") from None
    except ValueError as e:  # e.g. an integer longer than Python's int-string limit (4300 digits)
        raise TopologyError(f"{path}: bad YAML value: {_value_error(e)}") from None
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
    gpu = _check_gpu_defaults(gpu, path)
    memory_mb = data.get("memory_mb")
    if memory_mb is not None and not _positive_int(memory_mb):
        raise TopologyError(f"{path}: memory_mb: expected a positive integer (MB), got {clip(memory_mb)}")
    for key in ("nvidia_smi", "lscpu", "hwloc"):
        if key in data and not isinstance(data[key], str):
            raise TopologyError(f"{path}: {key}: expected a file name, got {clip(data[key])}")
    base = path.parent
    has_smi, has_hwloc = "nvidia_smi" in data, "hwloc" in data
    if has_smi == has_hwloc:
        raise TopologyError(f"{path}: give exactly one of nvidia_smi: FILE or hwloc: FILE")
    if has_hwloc:
        if "lscpu" in data:
            raise TopologyError(f"{path}: lscpu: only goes with nvidia_smi:, hwloc XML has the CPUs already")
        from slurm_gpu.topology.hwloc import topology_from_hwloc

        f = base / str(data["hwloc"])
        topo = topology_from_hwloc(read_text(f, "hwloc XML"), source=str(f))
        return _apply_gpu_defaults(topo, gpu, memory_mb)
    from slurm_gpu.topology.lscpu import parse_lscpu
    from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

    layout = None
    if "lscpu" in data:
        f = base / str(data["lscpu"])
        layout = parse_lscpu(read_text(f, "lscpu output"), source=str(f))
    f = base / str(data["nvidia_smi"])
    return topology_from_nvidia_smi(
        read_text(f, "nvidia-smi topo -m capture"), layout, gpu_defaults=gpu, memory_mb=memory_mb, source=str(f)
    )


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 53


def _check_gpu_defaults(gpu: dict[str, Any], path: Path) -> GpuDefaults:
    """The ``gpu:`` block, checked, as the typed defaults."""
    name = gpu.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > 256):
        raise TopologyError(f"{path}: gpu.name: expected a GPU name (text), got {clip(name)}")
    if gpu.get("memory_mib") is not None and not _positive_int(gpu["memory_mib"]):
        raise TopologyError(f"{path}: gpu.memory_mib: expected a positive integer (MiB), got {clip(gpu['memory_mib'])}")
    if "mig_capable" in gpu and not isinstance(gpu["mig_capable"], bool):
        raise TopologyError(f"{path}: gpu.mig_capable: expected true or false, got {clip(gpu['mig_capable'])}")
    out: GpuDefaults = {}
    if "name" in gpu:
        out["name"] = name
    if "memory_mib" in gpu:
        out["memory_mib"] = gpu["memory_mib"]
    if "mig_capable" in gpu:
        out["mig_capable"] = gpu["mig_capable"]
    return out


def _apply_gpu_defaults(topo: Topology, gpu: GpuDefaults, memory_mb: int | None) -> Topology:
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
