# SPDX-License-Identifier: Apache-2.0
"""GPU stats end to end in a private lab with the node hooks installed (the fixture of
tests/node/test_node_lab.py, in its own directory and ports): the stand-in NVML serves accounting
records with utilisations the test chooses, the real Epilog writes the job's summary into its
AdminComment with sacctmgr (slurm_gpu/node/summary.py), and ``slurm-gpu jobstats``/``report`` read
it back through sacct. Every expected figure is computed here by hand from the seeded numbers and
Slurm's own ElapsedRaw."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_gpu.cluster.summary_codec import decode
from slurm_gpu.lab import clients
from slurm_gpu.lab.control import default_hooks, policy_spec_factory, private_lab

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
LAB_DIR = "/tmp/slurm-gpu-lab-nodestats"
PORT_BASE = "29817"
CLI = Path(sys.executable).with_name("slurm-gpu")
PRICE = 3.0  # EUR per h100 GPU-hour in the policy copy
MIB = 1 << 20


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"node_stats_lab_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


node_lab = _load("test_node_lab")
node_lab.LAB_DIR = LAB_DIR  # NodeLab's paths: this module's lab
state = node_lab.state


def priced_policy(tmp: Path) -> str:
    path = node_lab.dynamic_policy(tmp)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"prices:\n  - {{name: h100, per_gpu_hour: {PRICE}, currency: EUR}}\n")
    return path


@pytest.fixture(scope="module")
def slab(tmp_path_factory) -> Iterator[tuple[node_lab.NodeLab, str]]:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("needs root and the Slurm packages (slurm-gpu lab)")
    with private_lab(LAB_DIR, PORT_BASE, say=lambda m: print(f"[node-stats lab] {m}")) as the_lab:
        policy = priced_policy(tmp_path_factory.mktemp("policy"))
        the_lab.up(policy_spec_factory(policy), hooks=default_hooks(node_hooks=True, drivers=False), restart=True,
                   policy_path=policy)
        yield node_lab.NodeLab(the_lab), policy


def seed(nlab, node: str, per_gpu: dict[int, list[tuple[int, int, int, int]]], energy_j: int = 0) -> None:
    """While the job runs (after its prolog cleared the buffers): GPU index -> accounted processes
    (gpu_util %, mem_util %, max_mem MiB, time ms); the energy counter moves on by ``energy_j``."""
    path = nlab.state_file(node)
    text = path.read_text()
    for index, procs in per_gpu.items():
        rows = " ".join(f"{4_000_000 + n}:{u}:{m}:{mem}:{ms}:0" for n, (u, m, mem, ms) in enumerate(procs))
        text, n = re.subn(rf"^gpu\.{index}\.accounted=.*$", f"gpu.{index}.accounted={rows}", text, flags=re.M)
        assert n == 1
        e0 = int(re.search(rf"^gpu\.{index}\.energy_mj=(\d+)$", text, flags=re.M).group(1))
        text = re.sub(rf"^gpu\.{index}\.energy_mj=.*$", f"gpu.{index}.energy_mj={e0 + energy_j * 1000}", text,
                      flags=re.M)
    tmp = path.with_name(path.name + ".seed")
    tmp.write_text(text)
    tmp.replace(path)


def job_gpus(nlab, job: int) -> dict[str, list[int]]:
    """node -> the GPU indices Slurm gave the job there (the lab helper's job reader: scontrol -d's IDX)."""
    _, allocs = clients.show_job(nlab.conf, job)
    gpus: dict[str, list[int]] = {a.node: sorted(a.gpu_idx) for a in allocs if a.gpu_idx}
    return gpus


def start_and_seed(nlab, argv: list[str], seeds) -> tuple[int, Path]:
    """Submit a job that waits for ``go`` once its GPUs are known, seed its node(s), let it end."""
    d = nlab.workdir("stats")
    job = nlab.sbatch([*argv, "--wrap", "srun true; touch ready; while [ ! -e go ]; do sleep 0.1; done; sleep 2"], d)
    node_lab._poll(lambda: (d / "ready").exists(), 60)  # the step ran on every node: every prolog is done
    gpus = job_gpus(nlab, job)
    for node, fn in seeds.items():
        seed(nlab, node, fn(gpus[node]))
    (d / "go").touch()
    assert nlab.wait(job) == "COMPLETED", (d / "out").read_text()
    return job, d


def admin_comment(nlab, job: int, nodes: int, timeout_s: float = 40):
    """The summary as sacct shows it, once ``nodes`` nodes' rows are there."""
    def read():
        out = clients.run(["sacct", "-n", "-X", "-P", "-j", str(job), "-o", "AdminComment"], nlab.conf, timeout_s=10)
        s = decode(out.stdout.strip())
        return s if s is not None and len(s.nodes) >= nodes else None
    try:
        return node_lab._poll(read, timeout_s)
    except TimeoutError:
        log = (nlab.hooks / "log" / "node-hooks.log").read_text()
        mine = "\n".join(ln for ln in log.splitlines() if str(job) in ln)
        raise AssertionError(f"no summary; log:\n{mine}") from None


def elapsed(nlab, jobs: list[int]) -> dict[int, int]:
    out = clients.run(["sacct", "-n", "-X", "-P", "-j", ",".join(map(str, jobs)), "-o", "JobIDRaw,ElapsedRaw"],
                      nlab.conf, timeout_s=10, check=True)
    return {int(a): int(b) for a, b in (ln.split("|") for ln in out.stdout.split())}


def cli(nlab, *args: str) -> dict:
    env = dict(os.environ, SLURM_CONF=nlab.conf)
    r = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=60, env=env, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def summary_ms(nlab, job: int) -> list[int]:
    log = (nlab.hooks / "log" / "node-hooks.log").read_text()
    lines = [ln for ln in log.splitlines() if f"job {job}: summary in AdminComment" in ln]
    print("\n".join(lines))
    return [int(m) for m in re.findall(r"summary in AdminComment: stored.*\((\d+) ms;", "\n".join(lines))]


def test_known_utilisation_gives_jobstats_and_report_by_hand(slab):
    nlab, policy = slab
    nlab.give_driver("h100n1")
    # job A, 2 GPUs: the lower one 40 % (one process), the higher one 80 % = (90 x 3 s + 50 x 1 s) / 4 s
    job_a, _ = start_and_seed(nlab, ["-w", "h100n1", "--gpus=h100:2"], {"h100n1": lambda g: {
        g[0]: [(40, 20, 4096, 5000)], g[1]: [(90, 30, 8192, 3000), (50, 30, 1024, 1000)]}})
    # job B, 1 GPU: (30 x 3 s + 10 x 1 s) / 4 s = 25 %
    job_b, _ = start_and_seed(nlab, ["-w", "h100n1", "--gpus=h100:1"], {"h100n1": lambda g: {
        g[0]: [(30, 5, 1024, 3000), (10, 5, 2048, 1000)]}})
    for job, n in ((job_a, 2), (job_b, 1)):
        s = admin_comment(nlab, job, 1)
        assert sorted(s.nodes) == ["h100n1"] and len(s.nodes["h100n1"]) == n
    u_a, u_b = 0.6, 0.25

    js = cli(nlab, "jobstats", str(job_a), "--json", "--policy", policy)
    (a,) = js["jobs"]
    gpus = sorted(a["gpu"], key=lambda g: g["index"])
    assert [g["utilization"] for g in gpus] == [0.4, 0.8]
    assert [g["memory_utilization"] for g in gpus] == [0.2, 0.3]
    assert [g["max_memory_bytes"] for g in gpus] == [4096 * MIB, 8192 * MIB]
    assert a["gpu_utilization"] == pytest.approx(u_a, abs=1e-6)

    t = elapsed(nlab, [job_a, job_b])
    assert t[job_a] > 0 and t[job_b] > 0
    rep = cli(nlab, "report", "--jobs", f"{job_a},{job_b}", "--json", "--policy", policy)
    gt = 2 * t[job_a] + 1 * t[job_b]
    e = (u_a * 2 * t[job_a] + u_b * 1 * t[job_b]) / gt
    total, h100 = rep["total"], rep["types"]["h100"]
    assert total["jobs"] == 2
    assert total["gpu_hours"] == pytest.approx(round(gt / 3600, 6), abs=1e-6)
    assert total["efficiency"] == pytest.approx(round(e, 6), abs=1e-6)
    assert total["effective_gpu_hours"] == pytest.approx(round(e * gt / 3600, 6), abs=1e-6)
    idle = (2 * t[job_a] * (1 - u_a) + t[job_b] * (1 - u_b)) / 3600
    assert total["idle_gpu_hours"] == pytest.approx(round(idle, 6), abs=1e-6)
    assert h100["price_per_gpu_hour"] == PRICE
    assert h100["cost_per_effective_gpu_hour"] == pytest.approx(round(PRICE / e, 4), abs=1e-4)
    assert h100["cost"] == pytest.approx(round(PRICE * gt / 3600, 4), abs=1e-4)
    print(f"epilog summary step: {summary_ms(nlab, job_a) + summary_ms(nlab, job_b)} ms")


def test_two_node_job_keeps_both_nodes_rows(slab):
    nlab, policy = slab
    nlab.give_driver("h100n1")
    nlab.give_driver("h100n2")
    job, _ = start_and_seed(nlab, ["-N", "2", "-w", "h100n[1-2]", "--ntasks-per-node=1", "--gpus-per-node=h100:1"], {
        "h100n1": lambda g: {g[0]: [(30, 10, 1024, 1000)]},
        "h100n2": lambda g: {g[0]: [(70, 10, 1024, 1000)]}})
    s = admin_comment(nlab, job, 2)
    assert sorted(s.nodes) == ["h100n1", "h100n2"]
    assert [g.gpu_util_pct for g in s.nodes["h100n1"]] == [30.0]
    assert [g.gpu_util_pct for g in s.nodes["h100n2"]] == [70.0]
    time.sleep(3)  # both epilogs are done with their confirmation: the rows stayed
    s = admin_comment(nlab, job, 2)
    (j,) = cli(nlab, "jobstats", str(job), "--json", "--policy", policy)["jobs"]
    assert sorted((g["node"], g["utilization"]) for g in j["gpu"]) == [("h100n1", 0.3), ("h100n2", 0.7)]
    (g1,), (g2,) = s.nodes["h100n1"], s.nodes["h100n2"]  # each GPU weighted by its own seconds (its record's)
    assert g1.seconds and g2.seconds
    assert j["gpu_utilization"] == pytest.approx((0.3 * g1.seconds + 0.7 * g2.seconds) / (g1.seconds + g2.seconds),
                                                 abs=1e-6)
    print(f"epilog summary step, 2 nodes: {summary_ms(nlab, job)} ms")
