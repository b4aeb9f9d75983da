# SPDX-License-Identifier: Apache-2.0
"""Emulated nodes whose GPUs Slurm's own ``gpu/nvml`` plugin detects (``AutoDetect=nvml``), over the
stand-in ``libnvidia-ml.so.1`` (tests/nvml_standin) serving a recorded machine. docs/topology.md
"Slurm's own detection as the judge" and docs/mig_mps.md "Static MIG from the node" tell what it is for.

What slurmd reads about GPUs, and where each emulated node gets its own copy (nothing on the host changes):

- NVML: the stand-in, ``SLURM_GPU_NVML_STANDIN=<the node's state file>`` and ``LD_LIBRARY_PATH`` in
  slurmd's environment. 22.05 first ``dlopen()``s ``libnvidia-ml.so`` (src/common/gpu.c), the stand-in's
  build directory has that link.
- The CPU topology NVML's CPU affinity is translated against (``xcpuinfo_mac_to_abs``: machine CPU ids ->
  Slurm's abstract ids): hwloc, which reads ``HWLOC_SYNTHETIC`` (:func:`hwloc_synthetic`, the recorded
  node's sockets, cores, threads and Linux CPU numbering) instead of this machine's 2 CPUs.
- ``/proc/driver/nvidia-caps/mig-minors`` (the MIG capability minors, gpu_nvml.c
  ``_nvml_get_mig_minor_numbers``): slurmd runs in its own mount namespace (``unshare -m``) with a tmpfs
  on ``/proc/driver`` holding the node's copy (:func:`namespace_argv`). ``/dev/nvidia-caps/*`` and
  ``/dev/nvidiaN`` are only names in the detected ``File=`` (slurmd opens them only for device cgroups,
  ConstrainDevices=yes, which the lab does not use), so the lab makes none of them.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from slurm_gpu.cpulist import format_cpulist
from slurm_gpu.plain import Record, record
from slurm_gpu.topology.model import Topology

# NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE: the compute-instance profile index of a full-GI CI
CI_PROFILE_OF_SLICES = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}
MIG_MINOR_GPUS = 32  # the driver's mig-minors table lists GPU minors 0-31 (NVIDIA MIG user guide, "Device Nodes")
GIS_PER_GPU = 15  # GPU-instance ids 0-14
CIS_PER_GI = 8  # compute-instance ids 0-7
STANDIN_ENV = "SLURM_GPU_NVML_STANDIN"
MAX_LANES = 18  # NVML_NVLINK_MAX_LINKS (nvml.h 12.x); more NV<k> lanes than that cannot be direct
NVSWITCH_BUS_ID = "00000000:F0:00.0"  # the remote end of a lane into an NVSwitch (made up; no GPU has it)
DEFAULT_DRIVER = "535.161.08"  # a driver >= 470.42.01: MIG devices have their own MIG-<uuid> (gpu_nvml.c)


def gi_id(memory_slices: int, start: int) -> int:
    """The driver's GPU-instance id of a placement (:func:`slurm_gpu.sharing.mig.gpu_instance_id`; the
    stand-in's ``gi_id`` in standin_mig.c is the same rule)."""
    from slurm_gpu.sharing.mig import gpu_instance_id

    return gpu_instance_id(memory_slices, start)


def mig_minors_text(gpus: int = MIG_MINOR_GPUS) -> str:
    """``/proc/driver/nvidia-caps/mig-minors`` as the driver writes it: ``config 1``, ``monitor 2``, then
    for every GPU minor g, GPU instance i (0-14): ``gpu<g>/gi<i>/access`` and its 8 compute instances."""
    lines = ["config 1", "monitor 2"]
    minor = 3
    for g in range(gpus):
        for i in range(GIS_PER_GPU):
            lines.append(f"gpu{g}/gi{i}/access {minor}")
            minor += 1
            for c in range(CIS_PER_GI):
                lines.append(f"gpu{g}/gi{i}/ci{c}/access {minor}")
                minor += 1
    return "\n".join(lines) + "\n"


def cap_minors(gpu_minor: int, gi: int, ci: int = 0) -> tuple[int, int]:
    """(``gpu<g>/gi<i>/access``, ``gpu<g>/gi<i>/ci<c>/access``) minors of :func:`mig_minors_text`."""
    access = 3 + (gpu_minor * GIS_PER_GPU + gi) * (CIS_PER_GI + 1)
    return access, access + 1 + ci


def _uuid(seed: str, prefix: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def place_layout(profiles: Mapping[str, Mapping[str, Any]], layout: Sequence[str]) -> list[tuple[str, int]]:
    """(profile index, start memory slice) for each instance of ``layout`` on an empty GPU with the recorded
    placement table ``profiles``: where the node hooks create them (:func:`slurm_gpu.sharing.mig.place`,
    CreateGpuInstanceWithPlacement). Raises ValueError (MigError) when the layout does not fit."""
    from slurm_gpu.sharing.mig import Layout, Profile, layout_counts, place

    index = {str(p["name"]): idx for idx, p in profiles.items()}
    geometry = {str(p["name"]): Profile(str(p["name"]), int(p["slices"]), int(p["memory_slices"]), int(p["count"]),
                                        tuple(int(s) for s in p["placements"])) for p in profiles.values()}
    return [(index[prof], start) for prof, start in place(Layout.of(True, layout_counts(layout)), geometry)]


def mig_instances(gpu_uuid: str, profiles: Mapping[str, Mapping[str, Any]], layout: Sequence[str],
                  driver: str = DEFAULT_DRIVER) -> list[dict[str, Any]]:
    """The stand-in fixture's ``mig_instances`` of one GPU: GIs with the driver's ids, one full CI each."""
    out = []
    for idx, start in place_layout(profiles, layout):
        p = profiles[idx]
        gi = gi_id(int(p["memory_slices"]), start)
        out.append({"gi": gi, "profile": int(idx), "start": start,
                    "cis": [{"ci": 0, "profile": CI_PROFILE_OF_SLICES[int(p["slices"])],
                             "uuid": _uuid(f"{gpu_uuid}/{gi}/0/{driver}", "MIG")}]})
    return sorted(out, key=lambda i: int(i["gi"]))


def bus_id(topo: Topology, index: int) -> str:
    """The GPU's recorded PCI bus id, else one made up in index order (NVML numbers GPUs by bus id)."""
    g = topo.gpu(index)
    return g.pci_bus_id.upper() if g.pci_bus_id else f"00000000:{0x10 + 8 * index:02X}:00.0"


def nvlink_lanes(topo: Topology, index: int) -> list[str | None]:
    """The remote PCI bus id of each NVLink lane of a GPU, from the topology's NV<k> relations: k lanes
    to each directly linked peer; NVSwitch-ended links (``switched``): k lanes to the switch, whose bus id
    is no GPU's (so Slurm counts them as no link, as on real NVSwitch boards)."""
    lanes: list[str | None] = []
    switched = 0
    sum_lanes = sum(lk.nvlinks for o in topo.gpus if o.index != index
                    for lk in [topo.link_object(f"GPU{index}", f"GPU{o.index}")] if lk is not None)
    for other in topo.gpus:
        lk = None if other.index == index else topo.link_object(f"GPU{index}", f"GPU{other.index}")
        if lk is None or not lk.nvlinks:
            continue
        if lk.switched or sum_lanes > MAX_LANES:
            switched = max(switched, lk.nvlinks)
        else:
            lanes += [bus_id(topo, other.index)] * lk.nvlinks
    return lanes + [NVSWITCH_BUS_ID] * switched


def fixture_from_topology(topo: Topology, *, name: str | None = None, source: str = "",
                          identity: Sequence[Mapping[str, Any]] = (), driver: str = DEFAULT_DRIVER,
                          mig_profiles: Mapping[str, Mapping[str, Any]] | None = None,
                          mig_layout: Sequence[str] = ()) -> dict[str, Any]:
    """A stand-in fixture (tests/nvml_standin/state.py ``render``) for a recorded machine: bus ids, minors,
    CPU affinity (OS ids) and NVLink lanes from ``topo``; names, UUIDs and bus ids from ``identity`` (a
    recorded ``nvidia-smi -q`` or NVML capture, one mapping per GPU) where given; MIG mode on with
    ``mig_layout`` on every GPU when given."""
    gpus = []
    for g in topo.gpus:
        ident = identity[g.index] if g.index < len(identity) else {}
        uuid = str(ident.get("uuid") or _uuid(f"{source}/{g.index}", "GPU"))
        entry: dict[str, Any] = {
            "name": ident.get("name") or g.name or name or "NVIDIA GPU",
            "uuid": uuid,
            "bus_id": str(ident.get("bus_id") or bus_id(topo, g.index)),
            "minor": int(ident.get("minor", g.device_minor)),
            "memory_total_mib": int(ident.get("memory_total_mib") or g.memory_mib or 0),
            "cpus": format_cpulist(topo.gpu_cpus(g.index)),
            "nvlinks": nvlink_lanes(topo, g.index) or None,
            "mig_capable": int(bool(mig_profiles)),
        }
        if mig_layout and mig_profiles:
            entry["mig_current"] = entry["mig_pending"] = 1
            entry["mig_instances"] = mig_instances(uuid, mig_profiles, mig_layout, driver)
        gpus.append(entry)
    return {"source": source, "driver_version": driver, "cuda_version": 12020,
            "mig_profiles": dict(mig_profiles or {}), "gpus": gpus}


def hwloc_synthetic(topo: Topology) -> str:
    """``HWLOC_SYNTHETIC`` for the node's CPUs: sockets x cores x threads, PUs carrying the Linux CPU
    numbers in hwloc's order (socket, core, thread), so NVML's affinity masks (OS ids) mean the same CPUs."""
    order = sorted(topo.cpus, key=lambda c: (c.socket, c.core, c.thread))
    indexes = ",".join(str(c.os_id) for c in order)
    return (f"package:{topo.sockets} [numa] core:{topo.cores_per_socket} "
            f"pu:{topo.threads_per_core}(indexes={indexes})")


_PROC_DRIVER = "/proc/driver"
_NS_SCRIPT = ('set -e; mount -t tmpfs -o mode=0755,size=4m slurm-gpu-nvml "$1"; mkdir "$1/nvidia-caps"; '
              'cp "$2" "$1/nvidia-caps/mig-minors"; shift 2; exec "$@"')


def namespace_argv(argv: Sequence[str], mig_minors: str) -> list[str]:
    """``argv`` run in a private mount namespace whose ``/proc/driver/nvidia-caps/mig-minors`` is a copy of
    the file ``mig_minors`` (a tmpfs over /proc/driver there; the host's /proc is untouched)."""
    return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", _NS_SCRIPT, "slurm-gpu-nvml",
            _PROC_DRIVER, mig_minors, *argv]


def slurmd_env(state: str, lib_dir: str, synthetic: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(base if base is not None else os.environ)
    env.update({STANDIN_ENV: state, "HWLOC_SYNTHETIC": synthetic,
                "LD_LIBRARY_PATH": ":".join(p for p in (lib_dir, env.get("LD_LIBRARY_PATH", "")) if p)})
    return env


@record
class DetectedGres(Record):
    """One GRES record as slurmd prints it (``Gres Name=gpu Type=... Count=... Index=... File=...``)."""

    name: str
    type: str | None
    count: int
    index: int
    files: str
    cores: str | None
    links: str | None
    unique_id: str | None = None


_GRES = re.compile(r"Gres Name=(?P<name>\S+) Type=(?P<type>\S+) Count=(?P<count>[0-9]+) Index=(?P<index>[0-9]+) "
                   r"ID=[0-9]+ File=(?P<file>\S+)(?: Cores=(?P<cores>\S+))?(?: CoreCnt=[0-9]+)?"
                   r"(?: Links=(?P<links>\S+))?")
_DETECTED = re.compile(r"GRES\[gpu\] Type:(?P<type>\S+) Count:[0-9]+ Cores\([0-9]+\):(?P<cores>\S+)"
                       r"\s+Links:(?P<links>\S+) "
                       r"Flags:\S+ File:(?P<file>\S+)(?: UniqueId:(?P<uid>\S+))?")


def parse_gres(text: str) -> list[DetectedGres]:
    """The ``Gres Name=`` lines of ``slurmd -G`` output (22.05 and 24.11 spell them alike). UniqueId (the
    MIG UUID) comes from the debug ``GRES[gpu] ... UniqueId:`` lines of the same File, when printed."""
    uids = {m.group("file"): m.group("uid") for m in _DETECTED.finditer(text) if m.group("uid")}
    out = []
    for m in _GRES.finditer(text):
        t = m.group("type")
        out.append(DetectedGres(m.group("name"), None if t == "(null)" else t, int(m.group("count")),
                                int(m.group("index")), m.group("file"), m.group("cores"), m.group("links"),
                                uids.get(m.group("file")) or None))
    return out


def detected_type_name(nvml_name: str, mig_profile: str | None = None) -> str:
    """The type Slurm's gpu/nvml gives a device (gres_common / gpu_nvml.c): the NVML name lower-cased with
    spaces as ``_``; a MIG device: the parent's name cut at its first ``-``, then ``_<profile>``."""
    if mig_profile is None:
        return nvml_name.lower().replace(" ", "_")
    return f"{nvml_name.split('-', 1)[0]}_{mig_profile}".lower().replace(" ", "_")


def mig_profile_22_05(slices: int, memory_mb: int) -> str:
    """Slurm 22.05's MIG profile name: built from nvmlDeviceGetAttributes, ``<slices>g.<GiB rounded>gb``
    (roundl(memorySizeMB / 1024); the A100 80GB's 3g.40gb, 39.25 GiB, becomes ``3g.39gb``)."""
    from slurm_gpu.sharing.mig import profile_from_attributes

    return profile_from_attributes(slices, memory_mb)


DETECTION_DONE = "slurmd started on"  # logged after the GRES inventory is built (slurmd.c _slurmd_init)


def run_slurmd_detect(conf: str, node: str, state: str, lib_dir: str, synthetic: str, mig_minors: str,
                      timeout_s: float = 60) -> str:
    """Start slurmd for ``node`` of slurm.conf ``conf`` (give it SlurmdDebug=debug2 and DebugFlags=Gres, no
    SlurmdLogFile, a free Port) over the stand-in state ``state`` in its own mount namespace, read its log
    until the GRES inventory is built, stop it, and return the log. (``slurmd -G`` prints the records but
    logs at info only, src/slurmd/slurmd/slurmd.c _print_gres: the plugin's debug2 lines, MIG UUIDs and
    GPU-instance ids among them, need the daemon.)"""
    import signal
    import time

    argv = ["/usr/sbin/slurmd", "-D", "-f", conf, "-N", node]
    proc = subprocess.Popen(namespace_argv(argv, mig_minors), env=slurmd_env(state, lib_dir, synthetic),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if DETECTION_DONE in line or "fatal:" in line or time.monotonic() > deadline:
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        if proc.stdout is not None:
            proc.stdout.close()
    return "".join(lines)


def run_slurmd_g(conf: str, node: str, state: str, lib_dir: str, synthetic: str, mig_minors: str,
                 timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    """``slurmd -G`` (print the node's GRES records and exit) over the stand-in, in its own mount namespace."""
    argv = ["/usr/sbin/slurmd", "-D", "-f", conf, "-N", node, "-G"]
    return subprocess.run(namespace_argv(argv, mig_minors), env=slurmd_env(state, lib_dir, synthetic),
                          capture_output=True, text=True, timeout=timeout_s, check=False)


@record
class NodeNvml(Record):
    """What one emulated node's slurmd needs to detect its GPUs over the stand-in: the state file it serves,
    the stand-in's build directory, ``HWLOC_SYNTHETIC`` and the node's mig-minors copy."""

    node: str
    state: str
    lib_dir: str
    synthetic: str
    mig_minors: str

    def argv(self, argv: Sequence[str]) -> list[str]:
        return namespace_argv(argv, self.mig_minors)

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        return slurmd_env(self.state, self.lib_dir, self.synthetic, base)


def _standin_module(repo: str, name: str) -> Any:
    """tests/nvml_standin/<name>.py of the checkout (the stand-in's state writer), or None."""
    import importlib.util

    path = os.path.join(repo, "tests", "nvml_standin", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"slurm_gpu_lab_nvml_standin_{name}", path)
    if not os.path.isfile(path) or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lab_fixture(topo: Topology, layout: Sequence[str], repo: str, source: str) -> dict[str, Any]:
    """The stand-in fixture of a static-MIG lab node: the recorded topology, the GPU's recorded MIG profile
    table (tests/nvml_standin/fixtures/mig-profiles.json, by NVML name), ``layout`` on every GPU at the
    placements the hooks create it at, with the driver's GPU-instance ids. ValueError: a layout, and no table
    for the GPU (whole GPUs of no recorded table are served as not MIG-capable)."""
    import json

    name = topo.gpus[0].name if topo.gpus else ""
    with open(os.path.join(repo, "tests", "nvml_standin", "fixtures", "mig-profiles.json"), encoding="utf-8") as f:
        tables = json.load(f)["profiles"]
    if name not in tables and layout:
        raise ValueError(f"no recorded MIG profile table for {name!r} (tests/nvml_standin/fixtures/mig-profiles.json)")
    return fixture_from_topology(topo, source=source, mig_profiles=tables.get(name), mig_layout=layout)


def write_state(nvml_dir: str, node: str, topo: Topology, layout: Sequence[str], repo: str) -> str:
    """Write ``<nvml_dir>/<node>.state``, the stand-in's state of ``topo`` with ``layout`` on every GPU
    (empty: whole GPUs, MIG off); the node hooks read it (``SLURM_GPU_NVML_STANDIN_DIR``). Its path."""
    from slurm_gpu.adapters import fs

    state_mod = _standin_module(repo, "state")
    if state_mod is None:
        raise ValueError("no stand-in state writer (tests/nvml_standin/state.py) in this checkout")
    fixture = lab_fixture(topo, layout, repo, source=f"slurm-gpu lab node {node}")
    state = os.path.join(nvml_dir, f"{node}.state")
    fs.write_file(state, state_mod.render(fixture).encode(), mode=0o644, create=True)
    return state


def prepare_node(nvml_dir: str, node: str, topo: Topology, layout: Sequence[str], lib_dir: str,
                 repo: str) -> NodeNvml:
    """Write the node's state (:func:`write_state`) and ``<nvml_dir>/mig-minors``; returns how to start the
    node's slurmd over them."""
    from slurm_gpu.adapters import fs

    state = write_state(nvml_dir, node, topo, layout, repo)
    minors = os.path.join(nvml_dir, "mig-minors")
    fs.write_file(minors, mig_minors_text().encode(), mode=0o644, create=True)
    return NodeNvml(node, state, lib_dir, hwloc_synthetic(topo), minors)


__all__ = ["NodeNvml", "lab_fixture", "prepare_node", "write_state",
           "gi_id", "mig_minors_text", "cap_minors", "place_layout", "mig_instances", "fixture_from_topology",
           "hwloc_synthetic", "namespace_argv", "slurmd_env", "DetectedGres", "parse_gres", "detected_type_name",
           "mig_profile_22_05", "run_slurmd_g", "run_slurmd_detect"]
