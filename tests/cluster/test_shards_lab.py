# SPDX-License-Identifier: Apache-2.0
"""Shards (gres/shard, Slurm 22.05+) in the cluster view, checked by hand (docs/cluster.md "Shards").

examples/policies/shard/shard.yaml: two nodes h100s1, h100s2 of 8 H100s, each GPU cut into 4 shards
(``shards_per_gpu: 4``). Slurm's documented rules (gres.html, "Sharding"): a GPU is allocated either
whole or as shards, never both, and by default one job's shards on a node come from one GPU (22.05.8:
measured in the lab; 24.11: documented, MULTIPLE_SHARING_GRES_PJ off). The jobs are chosen so that
where Slurm puts them does not change the figures:

- h100s1: shard:3, shard:4 (3 + 4 > 4: two GPUs), gpu:5 (5 of the other 6) -> GPU shards free
  1 (4 - 3), 0 (4 - 4) and 4 on the one untouched GPU; 1 whole GPU free.
- h100s2: shard:2, shard:3 (2 + 3 > 4: two GPUs), gpu:3 -> shards free 2, 1 and 4 on each of the 3
  untouched GPUs; 3 whole GPUs free.

The live test runs them as the lab user in a private lab (its own directory and ports; the shared lab
is not touched) and compares ``slurm-gpu cluster --json`` with that arithmetic; the pure tests give the
model the same state as 22.05 and 24.11 print it, and check the emitter and the policy key."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.cluster.view import from_texts

_spec = importlib.util.spec_from_file_location("cluster_records", Path(__file__).with_name("cluster_records.py"))
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)  # type: ignore[union-attr]

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "examples" / "policies" / "shard" / "shard.yaml")
PRIVATE = {"SLURM_GPU_LAB_DIR": "/tmp/slurm-gpu-lab-shard", "SLURM_GPU_LAB_PORT_BASE": "27817"}
CONF = "/tmp/slurm-gpu-lab-shard/etc/slurm.conf"

GPUS, SHARDS_PER_GPU = 8, 4  # per node, as the policy says
# (node, --gres) of each job; shard jobs first, so that the whole-GPU jobs find GPUs left
JOBS = [("h100s1", "shard:h100:3"), ("h100s1", "shard:h100:4"), ("h100s2", "shard:h100:2"),
        ("h100s2", "shard:h100:3"), ("h100s1", "gpu:h100:5"), ("h100s2", "gpu:h100:3")]


def expected() -> dict[str, dict]:
    """The figures by hand from JOBS and the node's shards (the docstring's arithmetic)."""
    per_node: dict[str, dict[str, list[int]]] = {}
    for node, gres in JOBS:
        name, _type, count = gres.split(":")
        per_node.setdefault(node, {"shard": [], "gpu": []})[name].append(int(count))
    shard_free: list[int] = []  # free shards per GPU that is not held whole (a job's shards: one GPU each)
    gpu_free: list[int] = []
    for jobs in per_node.values():
        shard_free += [SHARDS_PER_GPU - n for n in jobs["shard"]]  # each shard job on a GPU of its own
        untouched = GPUS - len(jobs["shard"]) - sum(jobs["gpu"])
        shard_free += [SHARDS_PER_GPU] * untouched
        gpu_free.append(untouched)
    assert shard_free == [1, 0, 4, 2, 1, 4, 4, 4] and gpu_free == [1, 3]  # the docstring's numbers
    total_shards = 2 * GPUS * SHARDS_PER_GPU
    free = sum(shard_free)
    shard = {
        "unit": "shard", "nodes": 2, "total": total_shards, "allocated": total_shards - free, "free": free,
        "unavailable": 0, "planned": 0, "stranded": 0,
        # the most free shards on one GPU: 4 (the untouched GPUs), on either node
        "largest_startable": {"one_node": 4, "any_nodes": 4 + 4},
        # share of free shards on GPUs with fewer than k free, k = 1 .. 4 shards per GPU
        "fragmentation": {str(k): round(sum(f for f in shard_free if f < k) / free, 6) for k in range(1, 5)},
    }
    assert free == 20 and shard["fragmentation"] == {"1": 0.0, "2": 0.1, "3": 0.2, "4": 0.2}
    gpu = {"unit": "gpu", "total": 16, "allocated": 16 - 4, "free": 4, "stranded": 0,
           "largest_startable": {"one_node": 3, "any_nodes": 4},
           "fragmentation": {"1": 0.0, "2": 0.25, "3": 0.25, **{str(k): 1.0 for k in range(4, 9)}}}
    # job mix: shard jobs of 3, 4, 2, 3 shards -> (F(3) + F(4) + F(2) + F(3)) / 4
    mix = round((0.2 + 0.2 + 0.1 + 0.2) / 4, 6)
    return {"shard:h100": shard, "h100": gpu, "shard_mix": {"2": 1, "3": 2, "4": 1}, "mix": mix}


def check(doc: dict) -> None:
    want = expected()
    shard, gpu = doc["types"]["shard:h100"], doc["types"]["h100"]
    assert {k: shard[k] for k in want["shard:h100"]} == want["shard:h100"]
    assert {k: gpu[k] for k in want["h100"]} == want["h100"]
    assert doc["job_mix"]["shard:h100"] == want["shard_mix"]
    assert shard["fragmentation_job_mix"] == want["mix"]


# ---- the model, given the same state in 22.05's and 24.11's words ----------------------------------

NODE_GRES = "gpu:h100:8(S:0-1),shard:h100:32(S:0-1)"
# where Slurm put them in the 22.05.8 lab: h100s1 shards on GPUs 0 and 1, whole 2-6; h100s2 shards 0, 1, whole 2-4
HELD = {"h100s1": ["shard:h100:3(IDX:0)", "shard:h100:4(IDX:1)", "gpu:h100:5(IDX:2-6)"],
        "h100s2": ["shard:h100:2(IDX:0)", "shard:h100:3(IDX:1)", "gpu:h100:3(IDX:2-4)"]}


def _jobs(prefix: str, held_24: bool = False) -> str:
    lines = []
    shares = {"shard:h100:3(IDX:0)": "shard:h100:3(3/4,0/4,0/4,0/4,0/4,0/4,0/4,0/4)",
              "shard:h100:4(IDX:1)": "shard:h100:4(0/4,4/4,0/4,0/4,0/4,0/4,0/4,0/4)",
              "shard:h100:2(IDX:0)": "shard:h100:2(2/4,0/4,0/4,0/4,0/4,0/4,0/4,0/4)",
              "shard:h100:3(IDX:1)": "shard:h100:3(0/4,3/4,0/4,0/4,0/4,0/4,0/4,0/4)"}
    n = 0
    for node, items in HELD.items():
        for held in items:
            n += 1
            req = held.split("(")[0]
            lines.append(R.job_line(n, "labuser", "RUNNING", node, shares.get(held, held) if held_24 else held,
                                    f"TresPerNode={prefix}{req}", ))
    return R.jobs_json(*lines)


def test_the_model_on_2205_records() -> None:
    """22.05.8's GresUsed counts GPUs, not shards (``shard:h100:2(IDX:0-1)`` for 7 shards, as measured):
    the shards per GPU come from the running jobs' ``GRES=shard:h100:3(IDX:0)``."""
    nodes = "\n".join([
        R.node_line("h100s1", state="MIXED", gres=NODE_GRES, used="gpu:h100:5(IDX:2-6),shard:h100:2(IDX:0-1)",
                    partitions="gpu"),
        R.node_line("h100s2", state="MIXED", gres=NODE_GRES, used="gpu:h100:3(IDX:2-4),shard:h100:2(IDX:0-1)",
                    partitions="gpu"),
    ])
    check(from_texts(nodes, _jobs("gres:")).summary)


def test_the_model_on_2411_records() -> None:
    """23.02+ prints each GPU's held/total shards in GresUsed and in the job's GRES=."""
    nodes = "\n".join([
        R.node_line("h100s1", state="MIXED", gres=NODE_GRES, partitions="gpu",
                    used="gpu:h100:5(IDX:2-6),shard:h100:7(3/4,4/4,0/4,0/4,0/4,0/4,0/4,0/4)"),
        R.node_line("h100s2", state="MIXED", gres=NODE_GRES, partitions="gpu",
                    used="gpu:h100:3(IDX:2-4),shard:h100:5(2/4,3/4,0/4,0/4,0/4,0/4,0/4,0/4)"),
    ])
    check(from_texts(nodes, _jobs("gres/", held_24=True)).summary)


def test_the_model_on_2605_records() -> None:
    """26.05 prints ``-/4`` for a GPU held whole (the GRES_USED "clarity" change of its CHANGELOG): measured on
    26.05.5 with JOBS, Slurm putting the shard jobs on GPUs 0 and 4 and the whole ones on 1-3,5-6 (h100s1)."""
    nodes = "\n".join([
        R.node_line("h100s1", state="MIXED", gres=NODE_GRES, partitions="gpu",
                    used="gpu:h100:5(IDX:1-3,5-6),shard:h100:7(3/4,-/4,-/4,-/4,4/4,-/4,-/4,0/4)"),
        R.node_line("h100s2", state="MIXED", gres=NODE_GRES, partitions="gpu",
                    used="gpu:h100:3(IDX:1-3),shard:h100:5(2/4,-/4,-/4,-/4,3/4,0/4,0/4,0/4)"),
    ])
    check(from_texts(nodes, _jobs("gres/", held_24=True)).summary)


def test_a_gpu_that_2205_lost_from_gres_used_still_counts() -> None:
    """22.05.8 clears a GPU's bit in GresUsed when one of two shard jobs on it ends (measured: the next
    whole-GPU job was given that GPU); the job still running there keeps its shards counted."""
    nodes = R.node_line("h100s1", state="MIXED", gres=NODE_GRES, used="gpu:h100:0(IDX:N/A),shard:h100:0(IDX:N/A)",
                        partitions="gpu")
    jobs = R.jobs_json(R.job_line(1, "labuser", "RUNNING", "h100s1", "shard:h100:2(IDX:4)",
                                  "TresPerNode=gres:shard:h100:2"))
    t = from_texts(nodes, jobs).summary["types"]
    assert (t["shard:h100"]["free"], t["shard:h100"]["largest_startable"]["one_node"]) == (32 - 2, 4)
    assert (t["h100"]["free"], t["h100"]["allocated"]) == (7, 1)
    finished = R.jobs_json(R.job_line(1, "labuser", "COMPLETED", "h100s1", "shard:h100:2(IDX:4)",
                                      "TresPerNode=gres:shard:h100:2"))
    assert from_texts(nodes, finished).summary["types"]["shard:h100"]["free"] == 32


def test_an_untyped_shard_request_counts_for_every_shard_type() -> None:
    nodes = R.node_line("h100s1", gres=NODE_GRES, used="gpu:h100:0(IDX:N/A),shard:h100:0(IDX:N/A)")
    jobs = R.jobs_json(R.job_line(1, "labuser", "PENDING", None, None, "TresPerNode=gres:shard:2"))
    assert from_texts(nodes, jobs).summary["job_mix"] == {"shard:h100": {"2": 1}}


# ---- the emitter and the policy key ----------------------------------------------------------------

def test_the_emitter_gives_each_gpu_its_shards() -> None:
    from slurm_gpu.emit.gres_conf import gres_conf
    from slurm_gpu.emit.slurm_conf import slurm_conf
    from slurm_gpu.policy import load_policy
    from slurm_gpu.topology import load_topology_file

    policy = load_policy(POLICY)
    topos = {nt.name: load_topology_file(nt.topology) for nt in policy.node_types}
    gres = gres_conf(policy, topos).splitlines()
    assert [line for line in gres if "Name=shard" in line] == [
        f"NodeName=h100s[1-2] Name=shard Count=4 File=/dev/nvidia{i}" for i in range(8)]
    conf = slurm_conf(policy, topos).splitlines()
    assert "GresTypes=gpu,shard" in conf
    nodes = [line for line in conf if line.startswith("NodeName=")]
    assert len(nodes) == 2 and all(" Gres=gpu:h100:8,shard:h100:32 " in line for line in nodes)
    plain = load_policy(str(ROOT / "examples" / "policies" / "university.yaml"))
    plain_topos = {nt.name: load_topology_file(nt.topology) for nt in plain.node_types}
    assert "GresTypes=gpu" in slurm_conf(plain, plain_topos).splitlines()
    assert "Name=shard" not in gres_conf(plain, plain_topos)


def test_shards_on_static_mig_are_refused_with_the_line(tmp_path: Path) -> None:
    from slurm_gpu.errors import SlurmGpuError
    from slurm_gpu.policy import load_policy

    text = (ROOT / "examples" / "policies" / "mig" / "university-mig.yaml").read_text(encoding="utf-8")
    text = text.replace("../../topology/", str(ROOT / "examples" / "topology") + "/")
    text = text.replace("    mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]\n",
                        "    mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]\n    shards_per_gpu: 2\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    line = text.splitlines().index("    shards_per_gpu: 2") + 1
    with pytest.raises(SlurmGpuError) as e:
        load_policy(str(bad))
    assert f"bad.yaml:{line}:" in str(e.value) and "shards_per_gpu" in str(e.value)


# ---- the live lab ----------------------------------------------------------------------------------

def _cli(*argv: str, timeout: float = 300, conf: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **PRIVATE)
    if conf:
        env["SLURM_CONF"] = CONF
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


@pytest.fixture(scope="module")
def shard_lab():
    if os.geteuid() != 0:
        pytest.fail("the Slurm lab tests need root (they start slurmctld/slurmd and create /dev/nvidia*)")
    try:
        up = _cli("lab", "up", "--policy", POLICY)
        assert up.returncode == 0, up.stdout + up.stderr
        yield CONF
    finally:
        down = _cli("lab", "down", timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr


@pytest.mark.slurm
def test_cluster_json_counts_shards_by_hand(shard_lab: str) -> None:
    from slurm_gpu.lab import clients
    from slurm_gpu.lab.control import slurm_version
    from slurm_gpu.slurm.records import parse_gres_counts
    from slurm_gpu.slurm.release import spelling_for

    spelling = spelling_for(slurm_version())
    wd = "/tmp/slurm-gpu-lab-shard/jobs"
    ids = []
    try:
        for node, gres in JOBS:
            ids.append(clients.sbatch(["-t", "5", "-w", node, f"--gres={gres}", "-o", "/dev/null",
                                       "--wrap", "sleep 300"], shard_lab, user="labuser", cwd=wd))
        for j in ids:
            assert clients.wait_job(shard_lab, j, {"RUNNING"}, timeout_s=60) == "RUNNING"
        held: dict[str, list[tuple[str, frozenset[int]]]] = {}
        for j, (node, gres) in zip(ids, JOBS, strict=True):
            fields, allocs = clients.show_job(shard_lab, j)
            assert fields["TresPerNode"] == spelling.gres(gres)  # gres:shard:h100:3 (22.05), gres/ (24.11)
            item = parse_gres_counts(allocs[0].gres)[0]  # squeue's gres_detail, as scontrol -d's GRES=
            gpus = item.idx if item.idx is not None else frozenset(
                i for i, (h, _) in enumerate(item.shares or ()) if h)  # 24.11: held/total per GPU
            held.setdefault(node, []).append((gres.split(":")[0], gpus))
        for node, items in held.items():  # Slurm's rules, as the arithmetic assumes them
            shard_gpus = [g for name, g in items if name == "shard"]
            whole = frozenset().union(*(g for name, g in items if name == "gpu"))
            assert all(len(g) == 1 for g in shard_gpus), (node, items)  # one GPU per shard job
            assert len(frozenset().union(*shard_gpus)) == len(shard_gpus), (node, items)  # 3 + 4 > 4: two GPUs
            assert not whole & frozenset().union(*shard_gpus), (node, items)  # never whole and shared
        view = _cli("cluster", "--json", timeout=60, conf=True)
        assert view.returncode == 0, view.stderr
        check(json.loads(view.stdout))
        # the largest shard job that starts is one GPU's 4, though h100s2 has 15 free shards
        probe = clients.sbatch(["-t", "5", "-w", "h100s2", "--gres=shard:h100:5", "-o", "/dev/null", "--wrap",
                                "true"], shard_lab, user="labuser", cwd=wd)
        ids.append(probe)
        with pytest.raises(TimeoutError):
            clients.wait_job(shard_lab, probe, {"RUNNING"}, timeout_s=12)
        assert clients.job_state(shard_lab, probe) == "PENDING"
    finally:
        if ids:
            clients.run(["scancel", *map(str, ids)], shard_lab, timeout_s=20)
