# SPDX-License-Identifier: Apache-2.0
"""The node hooks installed in a real lab the way an admin would (``slurm-gpu admin install`` through
``lab up``, node hooks on as by default): slurmd runs the shims, the shims run the entry points,
the entry points run the real nvidia-ml-py over the stand-in libnvidia-ml.so.1, whose per-node state the
test writes (``$LAB_DIR/nvml/<node>.state``; no file = no NVIDIA driver on that node).

A private lab (/tmp/slurm-gpu-lab-nodehooks, ports from 28817), module-scoped, taken down at the end:
the shared lab has the hooks too, but its nodes have no NVML state (docs/lab.md). Its policy is the
lab policy with the h100x8 nodes in dynamic MIG mode."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_gpu.lab import clients
from slurm_gpu.lab.control import Lab, default_hooks, policy_spec_factory, private_lab

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
LAB_DIR = "/tmp/slurm-gpu-lab-nodehooks"
PORT_BASE = "28817"
USER = "labuser"
MIG_UUID = re.compile(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"node_lab_standin_{name}", REPO / "tests" / "nvml_standin" /
                                                  f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


state = _load("state")


def dynamic_policy(tmp: Path) -> str:
    """A copy of examples/ whose lab policy serves dynamic MIG on the h100x8 nodes."""
    shutil.copytree(REPO / "examples", tmp / "examples")
    path = tmp / "examples" / "policies" / "university.yaml"
    text = path.read_text()
    text = text.replace("    mig_capable: true\n    features: [hopper, nvlink]",
                        "    mig_capable: true\n    mig_profiles: [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]\n"
                        "    features: [hopper, nvlink]")
    text = text.replace("    nodes: h100n[1-2]\n", "    nodes: h100n[1-2]\n    mig_mode: dynamic\n")
    assert "mig_mode: dynamic" in text and text.count("mig_profiles: [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]") == 2
    path.write_text(text)
    return str(path)


class NodeLab:
    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.conf = lab.slurm_conf
        self.nvml = Path(LAB_DIR) / "nvml"
        self.hooks = Path(LAB_DIR) / "node-hooks"

    def state_file(self, node: str) -> Path:
        return self.nvml / f"{node}.state"

    def give_driver(self, node: str, edit=None) -> Path:
        data = state.load_fixture("h100-8gpu")
        if edit:
            edit(data)
        return state.write(self.state_file(node), data)

    def gpus(self, node: str) -> list[dict]:
        return state.read(self.state_file(node))["gpus"]

    def workdir(self, name: str) -> Path:
        d = Path(self.lab.paths.jobs_dir) / f"{name}-{time.monotonic_ns()}"
        d.mkdir()
        shutil.chown(d, USER)
        return d

    def sbatch(self, argv: list[str], cwd: Path) -> int:
        return clients.sbatch(["-t", "5", "-o", "out", *argv], self.conf, user=USER, cwd=str(cwd))

    def wait(self, job: int, timeout_s: float = 60) -> str:
        return clients.wait_job(self.conf, job, frozenset({"COMPLETED"}), timeout_s)

    def node_reason(self, node: str) -> tuple[str, str]:
        out = clients.run(["sinfo", "-h", "-N", "-n", node, "-o", "%t|%E"], self.conf, timeout_s=10, check=True)
        st, _, reason = out.stdout.splitlines()[0].partition("|")
        return st.strip(), reason.strip()

    def run_dir(self, node: str) -> Path:
        return self.hooks / "run" / node

    def stats(self) -> list[dict]:
        p = self.hooks / "gpu-jobs.jsonl"
        return [json.loads(ln) for ln in p.read_text().splitlines()] if p.exists() else []


@pytest.fixture(scope="module")
def nlab(tmp_path_factory) -> Iterator[NodeLab]:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("needs root and the Slurm packages (slurm-gpu lab)")
    with private_lab(LAB_DIR, PORT_BASE, say=lambda m: print(f"[node-hooks lab] {m}")) as the_lab:
        policy = dynamic_policy(tmp_path_factory.mktemp("policy"))
        the_lab.up(policy_spec_factory(policy), hooks=default_hooks(node_hooks=True, drivers=False), restart=True,
                   policy_path=policy)
        yield NodeLab(the_lab)


def _mig(g: dict) -> dict:
    return {k: v for k, v in g.items() if k.startswith(("gi.", "ci.", "mig_"))}


def _poll(cond, timeout_s: float = 30):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError("condition not met")


def test_no_driver_ordinary_jobs_run_and_nothing_drains(nlab: NodeLab):
    nlab.state_file("h100n2").unlink(missing_ok=True)
    d = nlab.workdir("nodriver")
    jobs = [nlab.sbatch(["-w", "h100n2", "--gpus=h100:2", "--wrap", "echo ok $CUDA_VISIBLE_DEVICES"], d)]
    assert nlab.wait(jobs[0]) == "COMPLETED"
    assert (d / "out").read_text().startswith("ok ")
    assert nlab.node_reason("h100n2")[0] == "idle"
    assert "NVML not usable" in (nlab.hooks / "log" / "node-hooks.log").read_text()


def test_dynamic_mig_job_sees_two_mig_uuids_and_the_gpu_returns_to_its_default(nlab: NodeLab):
    nlab.give_driver("h100n1")
    before = nlab.gpus("h100n1")
    d = nlab.workdir("mig")
    job = nlab.sbatch(["-w", "h100n1", "--gpus=h100:1", "--comment=slurm-gpu:mig=3g.40gb:2", "--wrap",
                       "echo CVD=$CUDA_VISIBLE_DEVICES GPUS=$SLURM_JOB_GPUS; ls " + str(nlab.run_dir("h100n1") /
                                                                                     "dcgm-job-map")], d)
    assert nlab.wait(job) == "COMPLETED", (d / "out").read_text()
    text = (d / "out").read_text()
    cvd = re.search(r"CVD=(\S*)", text).group(1).split(",")
    gpu = int(re.search(r"GPUS=(\d+)", text).group(1))
    assert len(cvd) == 2 and all(MIG_UUID.fullmatch(u) for u in cvd), text
    assert str(gpu) in text.split()  # the job map file of its GPU existed while it ran
    after = nlab.gpus("h100n1")
    assert [_mig(g) for g in after] == [_mig(g) for g in before]  # back to the default: MIG off
    assert not (nlab.run_dir("h100n1") / "dcgm-job-map" / str(gpu)).exists()  # and the map is gone
    (line,) = [r for r in nlab.stats() if r["job_id"] == job]
    assert line["gpu_index"] == gpu and line["node"] == "h100n1"
    assert nlab.node_reason("h100n1")[0] == "idle"


def test_mps_job_sees_its_pipe_directory_and_no_daemon_is_left(nlab: NodeLab):
    nlab.give_driver("h100n1")
    modes = [g["compute_mode"] for g in nlab.gpus("h100n1")]
    d = nlab.workdir("mps")
    job = nlab.sbatch(["-w", "h100n1", "--gpus=h100:1", "--comment=slurm-gpu:mps=25", "--wrap",
                       "echo PIPE=$CUDA_MPS_PIPE_DIRECTORY PCT=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; "
                       "cat $CUDA_MPS_PIPE_DIRECTORY/standin-state.json"], d)
    assert nlab.wait(job) == "COMPLETED", (d / "out").read_text()
    text = (d / "out").read_text()
    pipe = re.search(r"PIPE=(\S+)", text).group(1)
    assert pipe == str(nlab.run_dir("h100n1") / "mps" / str(job) / "pipe") and "PCT=25" in text
    daemon = json.loads(text.splitlines()[1])["pid"]
    assert not Path(f"/proc/{daemon}").exists() or "Z" in Path(f"/proc/{daemon}/stat").read_text().split(")")[-1][:3]
    assert [g["compute_mode"] for g in nlab.gpus("h100n1")] == modes
    assert not Path(pipe).parent.exists()


@pytest.mark.parametrize("claim", ["", "env SLURM_JOB_ID=$((SLURM_JOB_ID + 1000)) "], ids=["own-job", "forged-job-id"])
def test_leftover_process_is_killed(nlab: NodeLab, claim: str):
    """The leftover keeps the job's SLURM_JOB_ID, or claims another job's (one that holds no GPU here;
    the lab tracks processes without cgroups). Before: the forged one was "left alone"."""
    nlab.give_driver("h100n1")
    d = nlab.workdir("leftover" + ("-forged" if claim else ""))
    job = nlab.sbatch(["-w", "h100n1", "--gpus=h100:1", "--wrap",
                       f"setsid {claim}sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid; "
                       "echo $SLURM_JOB_GPUS > gpus; while [ ! -e go ]; do sleep 0.1; done"], d)
    pid = int(_poll(lambda: (d / "pid").exists() and (d / "pid").read_text().strip()))
    gpu = int(_poll(lambda: (d / "gpus").exists() and (d / "gpus").read_text().strip()))
    text = nlab.state_file("h100n1").read_text()
    text = re.sub(rf"^gpu\.{gpu}\.processes=.*$", f"gpu.{gpu}.processes={pid}:1024:0:0", text, flags=re.M)
    nlab.state_file("h100n1").write_text(text)
    (d / "go").touch()
    assert nlab.wait(job) == "COMPLETED"
    _poll(lambda: not Path(f"/proc/{pid}").exists() or ") Z" in Path(f"/proc/{pid}/stat").read_text(), 20)
    assert nlab.node_reason("h100n1")[0] == "idle"


def test_invalid_token_fails_the_job_with_a_clear_message_and_drains_nothing(nlab: NodeLab):
    """job_submit.lua refuses a bad token at submission; a token changed afterwards (root's ``scontrol
    update``, which the plugin does not see for a held job here) must still fail the job in the
    TaskProlog, never the node. Measured on 22.05.8: TaskProlog exit 1 fails the batch step (FAILED 1:0,
    the script does not run; slurmstepd logs 'TaskProlog failed status=1')."""
    nlab.give_driver("h100n1")
    d = nlab.workdir("badtoken")
    job = nlab.sbatch(["--hold", "-w", "h100n1", "--gpus=h100:1", "--wrap", "echo ran"], d)
    clients.run(["scontrol", "update", f"jobid={job}", "comment=slurm-gpu:mig=4g.40gb:1"], nlab.conf, timeout_s=10,
                check=True)
    clients.run(["scontrol", "release", str(job)], nlab.conf, timeout_s=10, check=True)
    final = nlab.wait(job)
    text = (d / "out").read_text()
    assert "slurm-gpu: GPU set-up for job" in text and "4g.40gb is not offered" in text, text
    assert final == "FAILED" and "ran" not in text.split(), (final, text)
    assert nlab.node_reason("h100n1")[0] == "idle"


def test_a_real_health_failure_drains_the_node_with_our_reason(nlab: NodeLab):
    def ecc(data):
        for g in data["gpus"]:
            g["ecc_volatile_uncorrected"] = 2

    nlab.give_driver("a100n1", edit=ecc)
    d = nlab.workdir("ecc")
    try:
        job = nlab.sbatch(["-w", "a100n1", "--gpus=a100:1", "--wrap", "echo ran"], d)
        nlab.wait(job)
        st, reason = _poll(lambda: (r := nlab.node_reason("a100n1"))[0].startswith("drain") and r)
        assert reason.startswith("slurm-gpu: GPU ") and "uncorrectable ECC" in reason, reason
    finally:
        nlab.state_file("a100n1").unlink(missing_ok=True)
        clients.run(["scontrol", "update", "nodename=a100n1", "state=resume"], nlab.conf, timeout_s=10)
