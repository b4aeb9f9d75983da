# SPDX-License-Identifier: Apache-2.0
"""The node hooks run for real: ``slurm-gpu-prolog``/``-epilog``/``-task-prolog`` as subprocesses, with the
real nvidia-ml-py over the stand-in libnvidia-ml.so.1 (tests/nvml_standin). The drain command is a
recorder script that writes the argv it was given (what we asked Slurm; not a pretend Slurm).

Health failures that are real drain with the specific reason; everything else exits 0 with no drain.
Run as root (the hooks run as root and refuse directories that are not root's)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.nvml_standin.shared import standin_lib, state, write_node

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the node hooks run as root")
STANDIN = Path(__file__).resolve().parents[1] / "nvml_standin"
BIN = Path(sys.executable).parent
JOB = 4242
NODE = "h100n1"




@pytest.fixture(scope="module")
def lib_dir() -> Path:
    return standin_lib()


class Hooks:
    def __init__(self, tmp: Path, lib_dir: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        self.root.mkdir(mode=0o755)
        self.state_file = tmp / "node.state"
        self.record = tmp / "drain.argv"
        self.scontrol = tmp / "scontrol-recorder"
        self.scontrol.write_text(f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {self.record}\n"
                                 f"echo --- >> {self.record}\n")
        self.scontrol.chmod(0o755)
        self.kmsg = tmp / "kmsg"
        self.kmsg.write_text("")
        self.conf = tmp / "hooks.conf"
        r = self.root
        self.conf.write_text(
            "# test config\n"
            f"log = {r}/log/hooks.log\nstate_dir = {r}/state\ntask_dir = {r}/task\njobmap_dir = {r}/jobmap\n"
            f"accounting_file = {r}/acct/gpu-jobs.jsonl\ntextfile_dir = {r}/textfile\n"
            f"scontrol = {self.scontrol}\nkmsg = {self.kmsg}\nkill_grace_s = 2\nnvml_timeout_s = 20\n")
        self.lib_dir = lib_dir
        self.gpus = "2,3"

    def node(self, edit=None, **kw) -> None:
        write_node(self.state_file, edit=edit, **kw)

    def set_gpu(self, index: int, field: str, value: str) -> None:
        text = self.state_file.read_text()
        text, n = re.subn(rf"^gpu\.{index}\.{field}=.*$", f"gpu.{index}.{field}={value}", text, flags=re.M)
        assert n == 1
        self.state_file.write_text(text)

    def env(self, **extra: str) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLURM_JOB_ID": str(JOB), "SLURM_JOB_UID": "1001",
               "SLURMD_NODENAME": NODE, "SLURM_JOB_GPUS": self.gpus, "CUDA_VISIBLE_DEVICES": self.gpus,
               "LD_LIBRARY_PATH": str(self.lib_dir), "SLURM_GPU_NVML_STANDIN": str(self.state_file),
               "SLURM_GPU_HOOKS_CONF": str(self.conf), "PYTHONWARNINGS": "error",
               # no sacct/sacctmgr against whatever cluster this machine's slurm.conf names
               "SLURM_GPU_HOOKS_ADMIN_COMMENT": "no"}
        env.update(extra)
        return {k: v for k, v in env.items() if v is not None}

    def run(self, phase: str, timeout: float = 60, preexec=None, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / f"slurm-gpu-{phase}")], env=self.env(**extra), capture_output=True,
                              text=True, timeout=timeout, check=False, cwd=self.tmp, preexec_fn=preexec)

    def drains(self) -> list[list[str]]:
        if not self.record.exists():
            return []
        return [c.strip("\n").split("\n") for c in self.record.read_text().split("---\n") if c.strip()]

    def acct_lines(self) -> list[dict]:
        p = self.root / "acct" / "gpu-jobs.jsonl"
        return [json.loads(ln) for ln in p.read_text().splitlines()] if p.exists() else []

    def gpu_state(self) -> list[dict]:
        return state.read(self.state_file)["gpus"]


@pytest.fixture
def hooks(tmp_path: Path, lib_dir: Path) -> Hooks:
    h = Hooks(tmp_path, lib_dir)
    h.node()
    return h


def ok(proc: subprocess.CompletedProcess, rc: int = 0) -> str:
    assert proc.returncode == rc, f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def drain_reason(h: Hooks) -> str:
    (call,) = h.drains()
    assert call[:3] == ["update", f"nodename={NODE}", "state=drain"] and len(call) == 4
    assert call[3].startswith("reason=slurm-gpu: ")
    return call[3][len("reason="):]


# ---------------------------------------------------------------------------------------- whole job


def test_prolog_then_epilog_writes_map_and_stats_of_the_jobs_gpus_only(hooks: Hooks):
    ok(hooks.run("prolog"))
    jm = hooks.root / "jobmap"
    assert sorted(os.listdir(jm)) == ["2", "3"]
    assert (jm / "2").read_text() == f"{JOB}\n"
    assert [g["accounting"] for g in hooks.gpu_state()] == ["0", "0", "1", "1", "0", "0", "0", "0"]
    st = hooks.root / "state" / f"{JOB}.json"
    assert st.stat().st_mode & 0o777 == 0o600 and (hooks.root / "state").stat().st_mode & 0o777 == 0o700
    # the job ran: the driver accounted two processes on GPU 2
    hooks.set_gpu(2, "accounted", "7001:80:30:1024:1000:1 7002:40:10:2048:3000:2")
    time.sleep(0.05)
    ok(hooks.run("epilog"))
    assert os.listdir(jm) == []
    assert not st.exists()
    lines = hooks.acct_lines()
    assert [(r["job_id"], r["gpu_index"]) for r in lines] == [(JOB, 2), (JOB, 3)]
    g2 = lines[0]
    assert g2["processes"] == 2 and g2["gpu_util_pct"] == 50.0 and g2["max_memory_bytes"] == 2048 << 20
    assert g2["energy_j"] is not None and g2["energy_j"] > 0 and g2["uid"] == 1001 and g2["node"] == NODE
    assert lines[1]["processes"] == 0 and lines[1]["gpu_util_pct"] is None
    prom = (hooks.root / "textfile" / "slurm_gpu_gpu2.prom").read_text()
    assert f'slurm_gpu_job_utilization_ratio{{gpu="2",uuid="{g2["gpu_uuid"]}",jobid="{JOB}"}} 0.5' in prom
    assert "# TYPE slurm_gpu_job_energy_joules gauge" in prom
    assert sorted(os.listdir(hooks.root / "textfile")) == ["slurm_gpu_gpu2.prom", "slurm_gpu_gpu3.prom"]
    assert hooks.drains() == []


def test_bus_ids_come_from_nvml(hooks: Hooks):
    ok(hooks.run("prolog"))
    ok(hooks.run("epilog"))
    want = [hooks.gpu_state()[i]["bus_id"] for i in (2, 3)]
    assert [r["pci_bus_id"] for r in hooks.acct_lines()] == want


def test_ids_mapped_by_minor_number(hooks: Hooks):
    def reverse_minors(d):
        for i, g in enumerate(d["gpus"]):
            g["minor"] = 7 - i

    hooks.node(edit=reverse_minors)
    with hooks.conf.open("a") as f:
        f.write("gpu_ids = minor\n")
    ok(hooks.run("prolog"))  # Slurm's 2,3 = /dev/nvidia2, /dev/nvidia3 = NVML index 5, 4
    assert sorted(os.listdir(hooks.root / "jobmap")) == ["4", "5"]
    assert [g["accounting"] for g in hooks.gpu_state()] == ["0", "0", "0", "0", "1", "1", "0", "0"]


def _hooks_log(hooks: Hooks) -> str:
    p = hooks.root / "log" / "hooks.log"
    return p.read_text() if p.exists() else ""


def test_whole_gpu_identity_is_checked_against_gres_conf(hooks: Hooks):
    """Issue 20 item 6: the hooks take Slurm's ids 2,3 for NVML indices 2,3 (gpu_ids = index) whose minors are
    reversed (/dev/nvidia5, /dev/nvidia4); a gres.conf listing /dev/nvidia[0-7] in order says Slurm's GPU 2 is
    /dev/nvidia2: the node is misconfigured, which is logged; the job runs, nothing drains. In NVML's order
    (gres.conf listing the files by NVML index) nothing is logged; a gres.conf that autodetects is no finding."""
    def reverse_minors(d):
        for i, g in enumerate(d["gpus"]):
            g["minor"] = 7 - i

    hooks.node(edit=reverse_minors)
    gres = hooks.tmp / "gres.conf"
    gres.write_text(f"NodeName=h100n2 Name=gpu File=/dev/nvidia[0-1]\nNodeName={NODE} Name=gpu Type=h100 "
                    "File=/dev/nvidia[0-3] Cores=0-15\nNodeName=h100n1 Name=gpu Type=h100 File=/dev/nvidia[4-7]\n")
    ok(hooks.run("prolog", SLURM_GPU_HOOKS_GRES_CONF=str(gres)))
    ok(hooks.run("epilog", SLURM_GPU_HOOKS_GRES_CONF=str(gres)))
    log = _hooks_log(hooks)
    assert f"job {JOB}: node misconfigured: Slurm's GPU 2 is /dev/nvidia2 (gres.conf File=), but the hooks took " \
           "/dev/nvidia5" in log, log
    assert "Slurm's GPU 3 is /dev/nvidia3" in log and hooks.drains() == []
    assert sorted(os.listdir(hooks.root / "jobmap")) == []  # the job's steps ran as before (epilog: map gone)
    (hooks.root / "log" / "hooks.log").unlink()
    gres.write_text(f"NodeName={NODE} Name=gpu File=/dev/nvidia7,/dev/nvidia6,/dev/nvidia5,/dev/nvidia4,"
                    "/dev/nvidia3,/dev/nvidia2,/dev/nvidia1,/dev/nvidia0\n")  # NVML's order: no finding
    ok(hooks.run("prolog", SLURM_GPU_HOOKS_GRES_CONF=str(gres)))
    assert "misconfigured" not in _hooks_log(hooks)
    gres.write_text(f"NodeName={NODE} AutoDetect=nvml\nNodeName={NODE} Name=gpu File=/dev/nvidia[0-7]\n")
    ok(hooks.run("epilog", SLURM_GPU_HOOKS_GRES_CONF=str(gres)))
    assert "misconfigured" not in _hooks_log(hooks)


def test_job_without_gpus_does_nothing(hooks: Hooks):
    for phase in ("prolog", "epilog"):
        ok(hooks.run(phase, SLURM_JOB_GPUS="", CUDA_VISIBLE_DEVICES=""))
    assert os.listdir(hooks.root) == ["log"]  # the log is opened; nothing else is made
    assert (hooks.root / "log" / "hooks.log").read_text() == ""
    assert hooks.drains() == []


def test_hook_path_imports_no_click_jinja2_and_no_nvml_without_gpus(hooks: Hooks):
    code = ("import sys\nfrom slurm_gpu.cli.node_hooks import prolog_main\nrc = prolog_main([])\n"
            "print(rc, sorted(m for m in ('click', 'jinja2', 'pynvml', 'yaml') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], env=hooks.env(SLURM_JOB_GPUS="", CUDA_VISIBLE_DEVICES=""),
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.stdout.split("\n")[0] == "0 []", r.stderr
    code = code.replace("'pynvml', ", "")
    r = subprocess.run([sys.executable, "-c", code], env=hooks.env(), capture_output=True, text=True, timeout=60,
                       check=False)
    assert r.stdout.split("\n")[0] == "0 []", r.stderr


def test_epilog_twice_is_harmless(hooks: Hooks):
    ok(hooks.run("prolog"))
    ok(hooks.run("epilog"))
    first = hooks.acct_lines()
    err = ok(hooks.run("epilog"))
    assert hooks.acct_lines() == first and len(first) == 2
    assert "no per-job state" in err and hooks.drains() == []


def test_epilog_leaves_another_jobs_map_file(hooks: Hooks):
    ok(hooks.run("prolog"))
    ok(hooks.run("epilog"))
    ok(hooks.run("prolog", SLURM_JOB_ID="4243"))
    ok(hooks.run("epilog"))  # the old job's epilog again, after GPU 2,3 went to job 4243
    assert (hooks.root / "jobmap" / "2").read_text() == "4243\n"


# ---------------------------------------------------------------------------------------- health


@pytest.fixture
def sleeper():
    procs = []

    def start(ignore_term: bool = False, job: str | None = None) -> subprocess.Popen:
        code = "import signal, time\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
        env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
        if job:
            env["SLURM_JOB_ID"] = job
        p = subprocess.Popen([sys.executable, "-c", code + "print('up', flush=True)\ntime.sleep(600)"],
                             stdout=subprocess.PIPE, text=True, env=env)
        assert p.stdout.readline() == "up\n"
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdout.close()


def test_leftover_process_is_killed_and_others_left_alone(hooks: Hooks, sleeper):
    ok(hooks.run("prolog"))
    ok(hooks.run("prolog", SLURM_JOB_ID="999", SLURM_JOB_GPUS="2", CUDA_VISIBLE_DEVICES="2"))  # shares GPU 2
    mine, stubborn, other = sleeper(job=str(JOB)), sleeper(ignore_term=True), sleeper()
    sharer = sleeper(job="999")  # job 999's process on GPU 2 (shards, MPS; no cgroups here): not a leftover
    # processes in no job's cgroup whose environment names another job: job 1 runs nowhere here, job 999
    # does not hold GPU 3. Before: "belongs to job 1; left alone", and they kept the GPU into the next job
    forger, misplaced = sleeper(job="1"), sleeper(job="999")
    hooks.set_gpu(2, "processes", f"{mine.pid}:100:0:0 {stubborn.pid}:10:0:0 {sharer.pid}:5:0:0 {forger.pid}:5:0:0")
    hooks.set_gpu(3, "processes", f"{misplaced.pid}:5:0:0")
    hooks.set_gpu(5, "processes", f"{other.pid}:100:0:0")  # another job's GPU
    # their parent reaps them as they die (slurmstepd would): a dead child is no zombie for the stand-in
    ended: dict[int, int] = {}
    reapers = [threading.Thread(target=lambda p=p: ended.__setitem__(p.pid, p.wait()))
               for p in (mine, stubborn, forger, misplaced)]
    for t in reapers:
        t.start()
    err = ok(hooks.run("epilog"))
    for t in reapers:
        t.join(10)
    assert ended == {mine.pid: -signal.SIGTERM, stubborn.pid: -signal.SIGKILL, forger.pid: -signal.SIGTERM,
                     misplaced.pid: -signal.SIGTERM}
    assert other.poll() is None and sharer.poll() is None
    assert f"process {sharer.pid} belongs to job 999 (running here on this GPU); left alone" in err
    for pid, job in ((forger.pid, 1), (misplaced.pid, 999)):
        assert f"process {pid} claims job {job} (SLURM_JOB_ID), which does not hold this GPU here" in err
        assert f"leftover process {pid}: sending SIGTERM" in err
    assert f"leftover process {mine.pid}: sending SIGTERM" in err
    assert hooks.drains() == []
    reaper = threading.Thread(target=lambda: ended.__setitem__(sharer.pid, sharer.wait()))
    reaper.start()
    err = ok(hooks.run("epilog", SLURM_JOB_ID="999", SLURM_JOB_GPUS="2", CUDA_VISIBLE_DEVICES="2"))
    reaper.join(10)
    assert ended[sharer.pid] == -signal.SIGTERM  # job 999's own epilog: its leftover
    assert "job 999: GPU 2 (00000000:" in err and f"leftover process {sharer.pid}: sending SIGTERM" in err


def test_leftover_that_survives_sigkill_drains(hooks: Hooks):
    # a process that SIGKILL cannot end (on hardware: one stuck in the driver, state D). Here: a zombie child
    # of the test, which the stand-in lists as alive until it is reaped
    zombie = subprocess.Popen(["true"])
    try:
        for _ in range(200):
            if Path(f"/proc/{zombie.pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
                break
            time.sleep(0.01)
        hooks.set_gpu(3, "processes", f"{zombie.pid}:100:0:0")
        ok(hooks.run("epilog"))
        assert f"leftover process {zombie.pid} survived SIGKILL" in drain_reason(hooks)
        assert "GPU 3 (00000000:" in drain_reason(hooks)
    finally:
        zombie.wait()


@pytest.mark.parametrize(("field", "value", "words"), [
    ("ecc_volatile_uncorrected", "2", "2 uncorrectable ECC error(s)"),
    ("retired_pages", "sbe=;dbe=0x1000;pending=1", "retired pages pending"),
    ("remapped_rows", "0:1:1:0", "row remap pending"),
    ("remapped_rows", "0:1:0:1", "row remapping failed"),
    ("lost", "1", "lost (fallen off the bus"),
])
def test_real_failure_drains_with_the_specific_reason(hooks: Hooks, field, value, words):
    ok(hooks.run("prolog"))
    hooks.set_gpu(3, field, value)
    err = ok(hooks.run("epilog"))
    reason = drain_reason(hooks)
    assert words in reason and "GPU 3" in reason, reason
    assert "GPU health failure" in err


def test_failure_on_another_gpu_is_not_ours(hooks: Hooks):
    ok(hooks.run("prolog"))
    hooks.set_gpu(5, "ecc_volatile_uncorrected", "9")
    hooks.set_gpu(6, "lost", "1")
    ok(hooks.run("epilog"))
    assert hooks.drains() == []


def test_prolog_health_check_refuses_the_job(hooks: Hooks):
    hooks.set_gpu(2, "remapped_rows", "0:1:1:0")
    ok(hooks.run("prolog"))  # off by default
    assert hooks.drains() == []
    ok(hooks.run("prolog", SLURM_GPU_HOOKS_HEALTH_IN_PROLOG="yes"), rc=3)
    assert "GPU 2" in drain_reason(hooks) and "row remap pending" in drain_reason(hooks)


def test_xid_during_the_job(hooks: Hooks):
    ok(hooks.run("prolog"))
    now_us = time.monotonic_ns() // 1000
    bus = {i: hooks.gpu_state()[i]["bus_id"] for i in range(8)}

    def rec(ts: int, i: int, code: int) -> str:
        return f"3,{ts % 997},{ts},-;NVRM: Xid (PCI:{bus[i][4:12].lower()}): {code}, pid=77, name=python, Ch 8\n"

    hooks.kmsg.write_text("6,1,5,-;Linux version 6.1\n" + rec(5, 2, 79)  # before the job: not ours
                          + rec(now_us, 5, 79)  # another job's GPU
                          + rec(now_us + 1, 3, 13))  # an application fault: logged only
    err = ok(hooks.run("epilog"))
    assert hooks.drains() == [] and "Xid 13 during the job (application-level; no drain)" in err
    ok(hooks.run("prolog"))
    hooks.kmsg.write_text(rec(time.monotonic_ns() // 1000, 3, 79))
    ok(hooks.run("epilog"))
    assert "GPU 3" in drain_reason(hooks) and "Xid 79 during the job" in drain_reason(hooks)


def test_gpu_not_seen_by_nvml_drains(hooks: Hooks):
    ok(hooks.run("epilog", SLURM_JOB_GPUS="2,9"))
    assert "GPU 9 allocated by Slurm but not found by NVML (8 GPUs seen)" in drain_reason(hooks)


def test_slice_ids_on_a_static_mig_node_drain_nothing(hooks: Hooks):
    """Static MIG: gres.conf lists slices, so Slurm's ids (0-11 for 12 slices on 4 GPUs) pass the GPU count;
    with MIG mode on they are no lost GPU."""
    def mig_on(d):
        d["gpus"][1]["mig_current"] = 1
    hooks.node(edit=mig_on)
    ok(hooks.run("prolog", SLURM_JOB_GPUS="9"))
    err = ok(hooks.run("epilog", SLURM_JOB_GPUS="9"))
    assert hooks.drains() == [], err
    assert "MIG slice ids" in err


# ---------------------------------------------------------------------------------------- task prolog / steps

STEP_RUNNER = """
import os, sys
from slurm_gpu.node.runner import run_hook
from slurm_gpu.node.steps import default_steps
from slurm_gpu.node.model import JobSetupError

class Demo:
    name = "demo"
    def prolog(self, ctx):
        ctx.state[self.name] = {"gpus": [g.uuid for g in ctx.gpus]}
        ctx.task_lines += ["export DEMO_UUIDS=" + ",".join(g.uuid for g in ctx.gpus), "export BAD LINE", "rm -rf /"]
        if os.environ.get("DEMO_FAIL"):
            raise JobSetupError("profile 9g.99gb does not exist on NVIDIA H100 80GB HBM3")
    def epilog(self, ctx):
        print("demo epilog saw", ctx.state.get(self.name), file=sys.stderr)

steps = default_steps()
sys.exit(run_hook(sys.argv[1], os.environ, steps[:-1] + (Demo(),) + steps[-1:]))
"""


def test_extension_step_reaches_the_task_prolog_and_the_epilog(hooks: Hooks):
    r = subprocess.run([sys.executable, "-c", STEP_RUNNER, "prolog"], env=hooks.env(), capture_output=True,
                       text=True, timeout=60, check=False)
    ok(r)
    uuids = ",".join(hooks.gpu_state()[i]["uuid"] for i in (2, 3))
    t = hooks.run("task-prolog")
    assert ok(t) == "" and t.stdout == f"export DEMO_UUIDS={uuids}\n"
    r = subprocess.run([sys.executable, "-c", STEP_RUNNER, "epilog"], env=hooks.env(), capture_output=True,
                       text=True, timeout=60, check=False)
    assert f"demo epilog saw {{'gpus': {uuids.split(',')!r}}}" in ok(r)
    assert ok(hooks.run("task-prolog")) == "" and hooks.run("task-prolog").stdout == ""


def test_job_setup_error_fails_the_task_not_the_node(hooks: Hooks):
    r = subprocess.run([sys.executable, "-c", STEP_RUNNER, "prolog"], env=hooks.env(DEMO_FAIL="1"),
                       capture_output=True, text=True, timeout=60, check=False)
    ok(r)
    assert hooks.drains() == []
    t = hooks.run("task-prolog")
    ok(t, rc=3)
    assert "print slurm-gpu: GPU set-up for job 4242 failed: profile 9g.99gb does not exist" in t.stdout
    assert 'export SLURM_GPU_SETUP_ERROR="profile 9g.99gb' in t.stdout


def test_lost_gpu_leaves_the_other_gpus_stats(hooks: Hooks):
    ok(hooks.run("prolog"))
    hooks.set_gpu(3, "lost", "1")
    ok(hooks.run("epilog"))
    assert [r["gpu_index"] for r in hooks.acct_lines()] == [2]
    assert drain_reason(hooks).count("lost (fallen off the bus") == 1


def test_map_removed_without_nvml_by_minor_ids(hooks: Hooks, tmp_path: Path):
    def reverse_minors(d):
        for i, g in enumerate(d["gpus"]):
            g["minor"] = 7 - i

    hooks.node(edit=reverse_minors)
    with hooks.conf.open("a") as f:
        f.write("gpu_ids = minor\n")
    ok(hooks.run("prolog"))
    assert sorted(os.listdir(hooks.root / "jobmap")) == ["4", "5"]
    ok(hooks.run("epilog", LD_LIBRARY_PATH=str(tmp_path)))  # NVML gone by the time of the epilog
    assert os.listdir(hooks.root / "jobmap") == []
