# SPDX-License-Identifier: Apache-2.0
"""Integration tests against the real lab (Slurm from Debian packages). Jobs run as the lab user."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.hostlist import expand_hostlist

pytestmark = pytest.mark.slurm


def policy_doc(lab):
    return yaml.safe_load(Path(lab.policy_path).read_text())


def nodes_gres(sinfo_json: dict) -> dict[str, str]:
    """node -> gres from `sinfo --json`: 22.05 has a "nodes" list, 24.11 a "sinfo" list of node groups."""
    out: dict[str, str] = {}
    if "nodes" in sinfo_json:
        for n in sinfo_json["nodes"]:
            out[n["name"]] = n["gres"]
    else:
        for group in sinfo_json["sinfo"]:
            for name in group["nodes"]["nodes"]:
                out[name] = group["gres"]["total"]
    return out


def gres_cores(lab, node: str, gpu_type: str) -> dict[int, tuple[int, ...]]:
    """GPU minor -> Cores= from the gres.conf the lab is running with."""
    text = Path(lab.paths.conf_dir, "gres.conf").read_text()
    out: dict[int, tuple[int, ...]] = {}
    for line in text.splitlines():
        m = re.match(r"NodeName=(\S+) Name=gpu Type=(\S+) File=\S*nvidia(\[[^\]]+\]|\d+) Cores=(\S+)", line)
        if not m or m.group(2) != gpu_type or node not in expand_hostlist(m.group(1)):
            continue
        minors = m.group(3).strip("[]")
        for minor in parse_cpulist(minors):
            out[minor] = parse_cpulist(m.group(4))
    return out


def partition_for(lab, gpu_type: str, min_nodes: int = 1) -> str:
    """A non-preemptible partition with at least ``min_nodes`` nodes of ``gpu_type`` that accepts QOS normal."""
    doc = policy_doc(lab)
    types = {nt["name"]: nt for nt in doc["node_types"]}
    for p in doc["partitions"]:
        if p.get("preemptible") or (p.get("allowed_qos") and "normal" not in p["allowed_qos"]):
            continue
        n = sum(len(expand_hostlist(types[t]["nodes"])) for t in p["node_types"] if types[t]["gpu_type"] == gpu_type)
        if n >= min_nodes:
            return p["name"]
    pytest.fail(f"the policy has no partition with {min_nodes} {gpu_type} nodes")


def test_sinfo_json_shows_nodes_and_gpu_types(slurm_lab):
    doc = policy_doc(slurm_lab)
    want = {n: nt for nt in doc["node_types"] for n in expand_hostlist(nt["nodes"])}
    got = nodes_gres(slurm_lab.json(["sinfo", "--json"]))
    assert len(got) >= 3 and set(got) == set(want)
    types = set()
    for node, gres in got.items():
        nt = want[node]
        if nt.get("mig_mode") == "static":  # its slices, typed <gpu>_<profile>: gpu:a100_2g.20gb:12(S:0-1),...
            layout = nt["mig_layout"]
            slices = {f"{nt['gpu_type']}_{p}": layout.count(p) * nt["gpus"] for p in layout}
            found = {m.group(1): int(m.group(2)) for m in re.finditer(r"gpu:([\w.]+):(\d+)", gres)}
            assert found == slices, f"{node}: gres {gres!r}"
            continue
        m = re.match(r"gpu:(\w+):(\d+)", gres)
        assert m, f"{node}: gres {gres!r}"
        assert (m.group(1), int(m.group(2))) == (nt["gpu_type"], nt["gpus"])
        types.add(m.group(1))
    assert len(types) >= 2


def test_all_nodes_idle_or_in_use(slurm_lab):
    out = slurm_lab.run(["sinfo", "-h", "-N", "-o", "%N %T"], as_root=True, check=True).stdout
    states = dict(line.split() for line in out.splitlines())
    assert set(states) == set(slurm_lab.spec.node_names)
    # "planned" (Slurm >= 23.02): an idle node the backfill scheduler holds for a pending job
    assert all(s in ("idle", "mixed", "allocated", "completing", "planned") for s in states.values()), states


def test_sacctmgr_lists_the_policy_qos(slurm_lab):
    doc = policy_doc(slurm_lab)
    out = slurm_lab.run(
        ["sacctmgr", "-n", "-P", "show", "qos", "format=name,priority,maxtrespu"], as_root=True, check=True
    ).stdout
    rows = {line.split("|")[0]: line.split("|") for line in out.splitlines()}
    for q in doc["qos"]:
        assert q["name"] in rows, f"QOS {q['name']} missing: {sorted(rows)}"
        assert int(rows[q["name"]][1]) == q.get("priority", 0)
        if q.get("max_gpus_per_user") is not None:
            assert rows[q["name"]][2] == f"gres/gpu={q['max_gpus_per_user']}"


def test_lab_user_has_the_policy_qos(slurm_lab):
    out = slurm_lab.run(
        ["sacctmgr", "-n", "-P", "show", "assoc", "where", f"user={slurm_lab.user}", "format=user,qos"],
        as_root=True,
        check=True,
    ).stdout
    rows = [line.split("|") for line in out.splitlines() if line.strip()]
    assert rows
    for _user, qos in rows:  # one row per account the user belongs to
        assert {q["name"] for q in policy_doc(slurm_lab)["qos"]} <= set(qos.strip().split(","))


def test_unknown_qos_is_rejected(slurm_lab):
    r = slurm_lab.run(["sbatch", "--qos=nosuchqos", "--gpus=1", "-t", "10", "--wrap", "true"])
    # by the lab's job_submit.lua (the policy's message) or, without the plugin, by slurmctld
    assert r.returncode != 0 and re.search(r"unknown QOS 'nosuchqos'|Invalid qos", r.stderr), r.stderr


def test_two_node_job_runs_on_both_nodes(slurm_lab):
    part = partition_for(slurm_lab, "h100", min_nodes=2)
    wd = slurm_lab.workdir("gang")
    job = slurm_lab.sbatch(
        [
            "-p",
            part,
            "-N2",
            "--ntasks-per-node=1",
            "--gres=gpu:h100:1",
            "-t",
            "5",
            "-o",
            f"{wd}/out-%j.txt",
            "--wrap",
            "srun bash -c 'echo ran-on=$SLURMD_NODENAME'",
        ],
        cwd=wd,
    )
    assert slurm_lab.wait(job, timeout_s=90) == "COMPLETED"
    ran = sorted(re.findall(r"ran-on=(\S+)", Path(wd, f"out-{job}.txt").read_text()))
    assert len(ran) == 2 and len(set(ran)) == 2, ran
    fields, _ = slurm_lab.show_job(job)
    assert sorted(expand_hostlist(fields["NodeList"])) == ran


@pytest.mark.parametrize("gpu_type", ["h100", "a100"])
def test_two_gpus_get_distinct_devices_and_cores_on_their_socket(slurm_lab, gpu_type):
    """The job's CPU_IDs lie within the Cores= that gres.conf names for the GPUs it got. (a100x4: GPU
    index order differs from socket order, so this also checks Slurm follows Cores=, not the index.)"""
    part = partition_for(slurm_lab, gpu_type)
    wd = slurm_lab.workdir(f"two-{gpu_type}")
    job = slurm_lab.sbatch(
        [
            "-p",
            part,
            f"--gres=gpu:{gpu_type}:2",
            "--cpus-per-gpu=4",
            "-t",
            "5",
            "-o",
            f"{wd}/out-%j.txt",
            "--wrap",
            "echo JOB_GPUS=$SLURM_JOB_GPUS; echo CVD=$CUDA_VISIBLE_DEVICES; sleep 60",
        ],
        cwd=wd,
    )
    try:
        assert slurm_lab.wait(job, {"RUNNING"}, timeout_s=60) == "RUNNING"
        _, allocs = slurm_lab.show_job(job)
        assert len(allocs) == 1
        alloc = allocs[0]
        gpus = sorted(alloc.gpu_idx)
        assert len(gpus) == 2 and len(set(gpus)) == 2, alloc
        cores = gres_cores(slurm_lab, alloc.node, gpu_type)
        allowed = set().union(*(cores[g] for g in gpus))
        cpu_ids = set(alloc.cpu_ids)
        assert len(cpu_ids) == 8, alloc
        assert cpu_ids <= allowed, f"{alloc}: CPU_IDs outside gres.conf Cores={sorted(allowed)}"
        # RUNNING is the allocation; the script starts after the node's Prolog (no PrologFlags=Alloc,
        # docs/hooks.md), so wait for its first line before the job is cancelled
        out = Path(wd, f"out-{job}.txt")
        deadline = time.monotonic() + 30
        while "CVD=" not in (out.read_text() if out.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        slurm_lab.cancel(job)
    slurm_lab.wait(job, timeout_s=30)
    text = out.read_text()
    assert f"JOB_GPUS={','.join(map(str, gpus))}" in text


def test_both_gpu_pairs_of_the_a100_node_get_their_own_socket(slurm_lab):
    """Two 2-GPU jobs fill the a100 node, so one of them holds GPUs 0-1 (socket 1 in gres.conf) and the
    other GPUs 2-3 (socket 0): each job's CPU_IDs must lie on the cores gres.conf names for its GPUs."""
    node = next(n.name for n in slurm_lab.spec.nodes if n.gpu_type == "a100")
    part = partition_for(slurm_lab, "a100")
    cores = gres_cores(slurm_lab, node, "a100")
    assert cores[0] != cores[2]  # the lab topology: GPU order differs from socket order
    wd = slurm_lab.workdir("a100-pairs")
    jobs = [
        slurm_lab.sbatch(
            [
                "-p",
                part,
                "-w",
                node,
                "--gres=gpu:a100:2",
                "--cpus-per-gpu=2",
                "-q",  # QOS normal (partition_for's): the policy would pick debug, 2 GPUs per user, for 5 min
                "normal",
                "-t",
                "5",
                "-o",
                f"{wd}/out-%j.txt",
                "--wrap",
                "sleep 60",
            ],
            cwd=wd,
        )
        for _ in range(2)
    ]
    try:
        seen: set[int] = set()
        for job in jobs:
            assert slurm_lab.wait(job, {"RUNNING"}, timeout_s=60) == "RUNNING"
            (alloc,) = slurm_lab.show_job(job)[1]
            gpus = sorted(alloc.gpu_idx)
            assert len(gpus) == 2
            allowed = set().union(*(cores[g] for g in gpus))
            assert set(alloc.cpu_ids) <= allowed, f"{alloc}: expected cores in {sorted(allowed)}"
            seen |= set(gpus)
        assert seen == {0, 1, 2, 3}
    finally:
        slurm_lab.cancel(*jobs)
    for job in jobs:
        slurm_lab.wait(job, timeout_s=30)


def test_job_sees_its_gpus_in_the_environment(slurm_lab):
    part = partition_for(slurm_lab, "h100")
    wd = slurm_lab.workdir("env")
    job = slurm_lab.sbatch(
        [
            "-p",
            part,
            "--gres=gpu:h100:2",
            "-t",
            "5",
            "-o",
            f"{wd}/out-%j.txt",
            "--wrap",
            "echo JOB_GPUS=$SLURM_JOB_GPUS; echo CVD=$CUDA_VISIBLE_DEVICES; id -un",
        ],
        cwd=wd,
    )
    assert slurm_lab.wait(job, timeout_s=60) == "COMPLETED"
    text = Path(wd, f"out-{job}.txt").read_text()
    job_gpus = re.search(r"JOB_GPUS=(\S+)", text).group(1).split(",")
    cvd = re.search(r"CVD=(\S+)", text).group(1).split(",")
    assert len(job_gpus) == 2 and len(cvd) == 2
    assert slurm_lab.user in text.split()  # ran as the unprivileged user
