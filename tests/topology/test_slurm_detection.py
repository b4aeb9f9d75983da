# SPDX-License-Identifier: Apache-2.0
"""Slurm's own NVML detection as the judge (issue 20): for every recorded machine, the stand-in
libnvidia-ml.so.1 serves it (built from the same capture ``slurm-gpu topo gres-conf`` reads), slurmd -G
runs Slurm's gpu_nvml.so over it (AutoDetect=nvml, debug2, its own mount namespace for
/proc/driver/nvidia-caps/mig-minors, hwloc told the machine's CPUs), and the GRES records it prints are
compared with ours: same devices in the same order, File=, Cores=, Links=, counts. MIG machines: the
records are compared with the driver facts the stand-in serves (GPU-instance ids of the placements, the
mig-minors table, MIG UUIDs) and with our minor formula (slurm_gpu/emit/gres_conf.py ``mig_cap_minors``).

Needs root (unshare), slurmd, a C compiler and Slurm's gpu_nvml.so (``slurm-gpu lab up`` fetches it)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from slurm_gpu.emit.gres_conf import mig_cap_minors, static_mig_lines
from slurm_gpu.lab import install, nvmlnode
from slurm_gpu.policy.model import NodeType
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.topology import load_topology_file
from slurm_gpu.topology.hwloc import topology_from_hwloc
from slurm_gpu.topology.lscpu import parse_lscpu
from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
EXAMPLES = REPO / "examples" / "topology"
STANDIN = REPO / "tests" / "nvml_standin"
CLI = [sys.executable, "-m", "slurm_gpu.cli.main"]
# the judge's slurmd listens here while it detects (SLURM_GPU_LAB_PORT_BASE + 90; nothing else is there)
PORT = int(os.environ.get("SLURM_GPU_LAB_PORT_BASE", "16817")) + 90


def _module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


state = _module("nvml_standin_state_for_detection", STANDIN / "state.py")
MIG_PROFILES = json.loads((STANDIN / "fixtures" / "mig-profiles.json").read_text())["profiles"]
H100_FIXTURE = json.loads((STANDIN / "fixtures" / "h100-8gpu.json").read_text())


@dataclass(frozen=True)
class Machine:
    name: str
    cli: tuple[str, ...]  # slurm-gpu topo gres-conf input options
    gpu_name: str = ""  # NVML name where the capture has none (topo -m prints no names)
    identity: tuple[dict[str, Any], ...] = ()
    mig_layout: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def topology(self) -> Any:
        opts = dict(zip(self.cli[::2], self.cli[1::2], strict=True))
        if "--from-file" in opts:
            return load_topology_file(opts["--from-file"])
        if "--from-hwloc" in opts:
            return topology_from_hwloc(Path(opts["--from-hwloc"]).read_text(), source=self.name)
        layout = parse_lscpu(Path(opts["--lscpu"]).read_text()) if "--lscpu" in opts else None
        return topology_from_nvidia_smi(Path(opts["--from-nvidia-smi"]).read_text(), layout, source=self.name)


def _h100_identity() -> tuple[dict[str, Any], ...]:
    return tuple({"name": g["name"], "uuid": g["uuid"], "bus_id": g["bus_id"], "minor": g["minor"]}
                 for g in H100_FIXTURE["gpus"])


MACHINES = (
    Machine("h100x8", ("--from-file", str(EXAMPLES / "h100x8.yaml")), identity=_h100_identity()),
    Machine("a100x4", ("--from-file", str(EXAMPLES / "a100x4.yaml"))),
    Machine("dgx-a100-nps4", ("--from-nvidia-smi", str(DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt"),
                              "--lscpu", str(DATA / "dgx-a100-epyc7742.lscpu.txt")), "NVIDIA A100-SXM4-40GB"),
    Machine("hgx-h200-8gpu", ("--from-nvidia-smi", str(DATA / "hgx-h200-8gpu.nvidia-smi-topo.txt")),
            "NVIDIA H200"),
    Machine("pcie-8x-rtx4090", ("--from-nvidia-smi", str(DATA / "pcie-8x-rtx4090-2socket.nvidia-smi-topo.txt")),
            "NVIDIA GeForce RTX 4090"),
    Machine("workstation-2x-rtx5090", ("--from-nvidia-smi",
                                       str(DATA / "workstation-2x-rtx5090-threadripper.nvidia-smi-topo.txt")),
            "NVIDIA GeForce RTX 5090"),
    Machine("workstation-5gpu-2numa", ("--from-nvidia-smi", str(DATA / "workstation-5gpu-2numa.nvidia-smi-topo.txt")),
            "NVIDIA GeForce RTX 3090"),
    Machine("h200-1gpu-vm", ("--from-nvidia-smi", str(DATA / "h200-1gpu-vm-driver580.nvidia-smi-topo.txt"),
                             "--lscpu", str(DATA / "h200-1gpu-vm.lscpu-p.txt")), "NVIDIA H200"),
)
# Not here: the two hwloc captures (DGX-2H, Minsky) are filtered extracts whose CPUs keep sparse OS ids (0, 1,
# 24, 25 of 4 CPUs): Slurm maps NVML's machine CPU ids through a dense table of the node's CPUs
# (xcpuinfo_mac_to_abs) and drops such GPUs ("Conversion from machine to abstract failed"), which a real,
# whole node never shows.
# MIG layouts: the A100 80GB of the lab's a100n1 as its static policy lays it out, a DGX A100 (40GB) with
# seven 1g.5gb, and the H100 with all seven 1g.10gb (ids 7..13 whatever the creation order)
MIG_MACHINES = (
    Machine("a100x4-mig", ("--from-file", str(EXAMPLES / "a100x4.yaml")),
            mig_layout=("3g.40gb", "2g.20gb", "2g.20gb"), extra={"memory_gb": 80}),
    Machine("a100x4-mig-lab", ("--from-file", str(EXAMPLES / "a100x4.yaml")),
            mig_layout=("2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"), extra={"memory_gb": 80}),
    Machine("dgx-a100-nps4-mig", MACHINES[2].cli, "NVIDIA A100-SXM4-40GB", mig_layout=("1g.5gb",) * 7,
            extra={"memory_gb": 40}),
    Machine("h100x8-mig", MACHINES[0].cli, identity=_h100_identity(), mig_layout=("1g.10gb",) * 7,
            extra={"memory_gb": 80}),
    Machine("h100x8-mig-mixed", MACHINES[0].cli, identity=_h100_identity(),
            mig_layout=("1g.10gb", "2g.20gb", "3g.40gb"), extra={"memory_gb": 80}),
)


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("unshare") or not os.path.exists("/usr/sbin/slurmd"):
        pytest.skip("needs root, unshare and slurmd")
    plugin = install.find_nvml_plugin()
    system = install.system_plugin_dir()
    if not plugin or not system:
        pytest.skip("Slurm's gpu_nvml.so is not fetched (slurm-gpu lab up fetches it)")
    build = _module("nvml_standin_build_for_detection", STANDIN / "build.py")
    if build.compiler() is None:
        pytest.skip("no C compiler for the stand-in")
    lib = str(build.build())
    root = tmp_path_factory.mktemp("detect")
    minors = root / "mig-minors"
    minors.write_text(nvmlnode.mig_minors_text())

    def detect(m: Machine) -> tuple[list[nvmlnode.DetectedGres], str, dict[str, Any]]:
        if m.name not in done:
            done[m.name] = _detect(m)
        return done[m.name]

    done: dict[str, tuple[list[nvmlnode.DetectedGres], str, dict[str, Any]]] = {}

    def _detect(m: Machine) -> tuple[list[nvmlnode.DetectedGres], str, dict[str, Any]]:
        topo = m.topology()
        profiles = MIG_PROFILES.get(m.identity[0]["name"] if m.identity else m.gpu_name or
                                    (topo.gpus[0].name or ""), {}) if m.mig_layout else None
        fixture = nvmlnode.fixture_from_topology(topo, name=m.gpu_name or None, source=m.name,
                                                 identity=m.identity, mig_profiles=profiles,
                                                 mig_layout=m.mig_layout)
        d = root / m.name
        d.mkdir()
        state.write(d / "node.state", fixture)
        gres = ",".join(f"gpu:{len(topo.gpus) * (len(m.mig_layout) or 1)}" for _ in [0])
        (d / "slurm.conf").write_text("\n".join([
            "ClusterName=judge", "SlurmctldHost=localhost", "SlurmdDebug=debug2", "DebugFlags=Gres",
            f"SlurmdPidFile={d}/slurmd.pid", f"SlurmctldPort={PORT}", f"PluginDir={system}:{plugin}",
            "GresTypes=gpu", f"SlurmdSpoolDir={d}/spool", "SlurmdParameters=config_overrides",
            f"NodeName={m.name} Port={PORT + 1} Gres={gres} Sockets={topo.sockets} "
            f"CoresPerSocket={topo.cores_per_socket} ThreadsPerCore={topo.threads_per_core} RealMemory=1000",
            f"PartitionName=p Nodes={m.name}"]) + "\n")
        (d / "gres.conf").write_text("AutoDetect=nvml\n")
        (d / "spool").mkdir()
        args = (str(d / "slurm.conf"), m.name, str(d / "node.state"), lib, nvmlnode.hwloc_synthetic(topo),
                str(minors))
        r = nvmlnode.run_slurmd_g(*args)
        printed = r.stdout + r.stderr
        log = nvmlnode.run_slurmd_detect(*args)
        (d / "slurmd-G.txt").write_text(printed)
        (d / "slurmd.log").write_text(log)
        dirs[m.name] = d
        return nvmlnode.parse_gres(printed), log, fixture

    dirs: dict[str, Path] = {}
    detect.dirs = dirs  # type: ignore[attr-defined]
    detect.minors = minors  # type: ignore[attr-defined]
    return detect


def _ours(m: Machine) -> list[dict[str, str]]:
    out = subprocess.run([*CLI, "topo", "gres-conf", *m.cli, "--links", "--node-name", m.name],
                         capture_output=True, text=True, timeout=60, check=True, cwd=REPO).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("NodeName="):
            rows.append(dict(w.split("=", 1) for w in line.split()))
    return rows


@pytest.mark.parametrize("m", MACHINES, ids=[m.name for m in MACHINES])
def test_whole_gpus_detected_as_we_emit(judge, m):
    detected, log, fixture = judge(m)
    assert "gpu/nvml" in log and f"{len(fixture['gpus'])} GPU system device(s) detected" in log, log[-3000:]
    ours = _ours(m)
    assert len(detected) == len(ours) == len(fixture["gpus"]), log[-3000:]
    for d, o in zip(detected, ours, strict=True):
        assert (d.files, d.cores, d.links, d.count) == (o["File"], o.get("Cores"), o.get("Links"), 1), (d, o)
    # Slurm logs each GPU's type: the NVML name, lower-cased, spaces as _ (our detected_type_name)
    for g in fixture["gpus"]:
        assert f"    Name: {nvmlnode.detected_type_name(g['name'])}\n" in log
        assert f"    UUID: {g['uuid']}\n" in log


def _slurm_version() -> tuple[int, int]:
    out = subprocess.run(["/usr/sbin/slurmd", "-V"], capture_output=True, text=True, timeout=30).stdout.split()
    major, minor = out[-1].split(".")[:2]
    return int(major), int(minor)


def _expected_mig(fixture: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(File=, GPU, GPU instance, its profile) per MIG device, in NVML's MIG index order (GPU-instance id),
    from the driver facts the stand-in serves and our mig-minors formula."""
    out = []
    for g in fixture["gpus"]:
        for inst in g["mig_instances"]:
            prof = fixture["mig_profiles"][str(inst["profile"])]
            gi_minor, ci_minor = mig_cap_minors(g["minor"], inst["gi"], inst["cis"][0]["ci"])
            out.append((f"/dev/nvidia{g['minor']},/dev/nvidia-caps/nvidia-cap{gi_minor},"
                        f"/dev/nvidia-caps/nvidia-cap{ci_minor}", g, inst, prof))
    return out


@pytest.mark.parametrize("m", MIG_MACHINES, ids=[m.name for m in MIG_MACHINES])
def test_mig_slices_detected_from_driver_facts(judge, m):
    detected, log, fixture = judge(m)
    want = _expected_mig(fixture)
    assert len(detected) == len(want) == len(fixture["gpus"]) * len(m.mig_layout), log[-3000:]
    ours = {o["File"]: o.get("Cores") for o in _ours(m)}
    version = _slurm_version()
    # slurmd prints the slices grouped by their Links= position, not in NVML order: match them by File=
    by_files = {d.files: d for d in detected}
    assert sorted(by_files) == sorted(w[0] for w in want)
    for files, g, inst, prof in want:
        d = by_files[files]
        assert d.cores == ours[f"/dev/nvidia{g['minor']}"]  # a slice has its parent GPU's cores
        uuid = inst["cis"][0]["uuid"]
        block = log[log.index(f"UniqueID: {uuid}") - 400:]
        assert f"GPU Instance (GI) ID: {inst['gi']}\n" in block[:800]
        # the GPU-instance id is the driver's for the placement, not the slice's position in the layout
        assert inst["gi"] == nvmlnode.gi_id(prof["memory_slices"], inst["start"])
        if spelling_for(version).mig_profile_from_attributes:  # 22.05: from the attributes (slices, GiB)
            name = nvmlnode.detected_type_name(g["name"], nvmlnode.mig_profile_22_05(prof["slices"],
                                                                                   prof["memory_mb"]))
        else:
            name = nvmlnode.detected_type_name(g["name"], prof["name"])
        assert f"MIG Profile: {name}\n" in block[:800], block[:800]
    # `slurm-gpu admin emit`'s static lines (AutoDetect=off) name the same devices Slurm detects
    topo = m.topology()
    nt = NodeType(name=m.name, topology="", nodes=(m.name,), gpu_type="gpu", gpus=len(topo.gpus),
                  mig_mode="static", mig_layout=m.mig_layout)
    emitted = static_mig_lines(nt, topo, memory_gb=m.extra["memory_gb"])
    assert sorted(re.search(r"MultipleFiles=(\S+)", ln).group(1) for ln in emitted) == sorted(by_files)  # type: ignore[union-attr]


def test_slurm_registers_detected_slices_and_a_job_gets_the_mig_uuid(judge, tmp_path):
    """A one-node cluster of its own (slurmctld + slurmd with AutoDetect=nvml over the stand-in, the lab
    A100 node's MIG layout): slurmctld accepts the detected slices under the policy's type names, and a
    native ``--gres=gpu:a100_2g.20gb:1`` job runs to COMPLETED with CUDA_VISIBLE_DEVICES holding the MIG
    UUID that Slurm's plugin chose (a UUID the stand-in serves for one of the node's 2g.20gb instances)."""
    import socket
    import time

    m = MIG_MACHINES[1]  # a100x4-mig-lab: 3 x 2g.20gb + 1g.10gb per GPU
    detected, log, fixture = judge(m)
    d = tmp_path
    node_dir = judge.dirs[m.name]
    host = socket.gethostname().split(".")[0]
    topo = m.topology()
    conf = d / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=judge2", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={PORT + 2}", "SlurmUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"StateSaveLocation={d}/ctld", f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldPidFile={d}/ctld.pid", f"SlurmdPidFile={d}/slurmd.pid", f"SlurmctldLogFile={d}/ctld.log",
        f"SlurmdLogFile={d}/slurmd.log", "SlurmdDebug=debug2", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "GresTypes=gpu",
        f"PluginDir={install.system_plugin_dir()}:{install.find_nvml_plugin()}", "SlurmdParameters=config_overrides",
        "ReturnToService=2", "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "MailProg=/bin/true",
        f"NodeName=judge1 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORT + 3} "
        "Gres=gpu:a100_2g.20gb:12,gpu:a100_1g.10gb:4 "
        f"Sockets={topo.sockets} CoresPerSocket={topo.cores_per_socket} ThreadsPerCore=1 RealMemory=1000 "
        "State=UNKNOWN",
        "PartitionName=p Nodes=judge1 Default=YES MaxTime=10"]) + "\n")
    (d / "gres.conf").write_text("AutoDetect=nvml\n")
    for sub in ("ctld", "spool"):
        (d / sub).mkdir()
    env = dict(os.environ, SLURM_CONF=str(conf))
    build = _module("nvml_standin_build_for_registration", STANDIN / "build.py")
    ctld = subprocess.Popen(["/usr/sbin/slurmctld", "-D", "-i", "-f", str(conf)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    argv = nvmlnode.namespace_argv(["/usr/sbin/slurmd", "-D", "-N", "judge1", "-f", str(conf)],
                                   str(judge.minors))
    slurmd = subprocess.Popen(argv, env=nvmlnode.slurmd_env(str(node_dir / "node.state"), str(build.build()),
                                                            nvmlnode.hwloc_synthetic(topo), env),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def client(*a: str) -> str:
        return subprocess.run(list(a), env=env, capture_output=True, text=True, timeout=30).stdout

    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "idle" not in client("sinfo", "-h", "-N", "-o", "%T"):
            time.sleep(1)
        show = client("scontrol", "show", "node", "judge1")
        assert "State=IDLE" in show, show + (d / "ctld.log").read_text()[-2000:]
        assert "gpu:a100_2g.20gb:12" in show and "gpu:a100_1g.10gb:4" in show, show
        out = d / "job.out"
        job = client("sbatch", "--parsable", "--gres=gpu:a100_2g.20gb:1", "-t", "1", "-o", str(out),
                     "--wrap", "echo CVD=$CUDA_VISIBLE_DEVICES").strip()
        assert job.isdigit(), job
        state = ""
        while time.monotonic() < deadline + 60:
            state = client("scontrol", "show", "job", job)
            if "JobState=COMPLETED" in state or "JobState=FAILED" in state:
                break
            time.sleep(1)
        assert "JobState=COMPLETED" in state, state
        cvd = out.read_text().strip().removeprefix("CVD=")
        twog = {c["uuid"] for g in fixture["gpus"] for inst in g["mig_instances"] for c in inst["cis"]
                if fixture["mig_profiles"][str(inst["profile"])]["name"] == "2g.20gb"}
        assert cvd in twog, (cvd, sorted(twog))
        assert f"UniqueID: {cvd}" in log  # the UUID Slurm's plugin detected
    finally:
        for p in (slurmd, ctld):
            if p.poll() is None:
                os.killpg(p.pid, 15)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)
                    p.wait(timeout=10)
