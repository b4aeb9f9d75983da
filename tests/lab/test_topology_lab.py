# SPDX-License-Identifier: Apache-2.0
"""The fabric in a real Slurm: a private lab (its own directory and ports) from
examples/policies/fabric-lab.yaml, four nodes under two leaf switches (22.05: topology/tree) or in two
NVLink blocks (24.11+: a copy of the policy with ``plugin: block``; 26.05 reads topology.yaml).

Measured with ``scontrol show topology`` and ``scontrol show job``: slurmctld reads the emitted file and
holds the same units; plain sbatch of a 2-node job lands across switches when the free nodes are spread
(topology/tree; topology/block keeps it pending in one block itself);
gpusub's job (class ``multinode``: ``switches: 1@1:00``) waits for one switch and, with the bound exceeded,
starts across after it; with one leaf free it lands there. Run it alone (fixed ports):
``flock /tmp/slurm-gpu-private-lab.lock .venv/bin/python -m pytest tests/lab/test_topology_lab.py -m slurm``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "policies" / "fabric-lab.yaml"
LAB_DIR = "/tmp/slurm-gpu-lab-fabric"
PRIVATE = {"SLURM_GPU_LAB_DIR": LAB_DIR, "SLURM_GPU_LAB_PORT_BASE": "27917"}
CONF = f"{LAB_DIR}/etc/slurm.conf"
BOUND_S = 60  # the class's switches: 1@1:00


def _cli(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **PRIVATE), check=False)


def _plugin(version: tuple[int, int, int]) -> str:
    return "block" if version >= (24, 5, 0) else "tree"


def _policy_for(plugin: str, tmp: Path) -> str:
    """The lab policy with ``plugin`` (a copy whose topology path is absolute)."""
    text = POLICY.read_text().replace("../topology/", f"{ROOT}/examples/topology/")
    text = re.sub(r"(?m)^  plugin: tree.*$", f"  plugin: {plugin}", text)
    path = tmp / f"fabric-lab-{plugin}.yaml"
    path.write_text(text)
    path.chmod(0o644)
    return str(path)


@pytest.fixture(scope="module")
def fabric_lab(tmp_path_factory: pytest.TempPathFactory):
    from slurm_gpu.lab.control import slurm_version

    if os.geteuid() != 0:
        pytest.fail("the Slurm lab tests need root (they start slurmctld/slurmd and create /dev/nvidia*)")
    version = slurm_version()
    d = tmp_path_factory.mktemp("fabric")
    d.chmod(0o755)
    policy = _policy_for(_plugin(version), d)
    try:
        up = _cli("lab", "up", "--policy", policy, "--restart")
        assert up.returncode == 0, up.stdout + up.stderr
        yield CONF, version, policy
    finally:
        down = _cli("lab", "down", timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr


def _occupy(conf: str, node: str, seconds: int) -> int:
    from slurm_gpu.lab import clients

    return clients.sbatch(["-w", node, "--gres=gpu:a100:4", "-t", "5", "-o", "/dev/null", "--wrap",
                           f"sleep {seconds}"], conf, user="labuser", cwd=f"{LAB_DIR}/jobs")


def _gpusub(conf: str, policy_copy: str, *argv: str) -> int:
    from slurm_gpu.lab import clients
    from slurm_gpu.lab.demo import find_gpusub

    exe = find_gpusub()
    assert exe, "gpusub is not installed in this environment"
    proc = clients.run([exe, "--parsable", *argv], conf, user="labuser", cwd=f"{LAB_DIR}/jobs", timeout_s=60,
                       env_extra={"GPUSUB_POLICY": policy_copy})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return int(proc.stdout.strip().split(";")[0])


def _plain_slurm(conf: str, argv: list[str]) -> int:
    """sbatch to Slurm without the policy (the lab's job_submit.lua passes every job through meanwhile)."""
    from slurm_gpu.lab import clients
    from slurm_gpu.lab.jobsubmit import PASS_THROUGH, install_text

    conf_dir = os.path.dirname(conf)
    before = Path(conf_dir, "job_submit.lua").read_text()
    install_text(PASS_THROUGH, conf_dir)
    try:
        return clients.sbatch(argv, conf, user="labuser", cwd=f"{LAB_DIR}/jobs")
    finally:
        install_text(before, conf_dir)


def _switches(conf: str, job: int) -> str | None:
    """The job's switch request as scontrol prints it (squeue's JSON has none on 22.05, openapi v0.0.38)."""
    from slurm_gpu.lab import clients

    text = clients.run(["scontrol", "show", "job", "-o", str(job)], conf, timeout_s=15, check=True).stdout
    m = re.search(r" Switches=(\S+)", text)
    return m.group(1) if m else None


def _nodes(conf: str, job: int) -> tuple[str, ...]:
    from slurm_gpu.hostlist import expand_hostlist
    from slurm_gpu.lab import clients

    fields, _ = clients.show_job(conf, job)
    return tuple(expand_hostlist(fields["NodeList"]))


def _units(conf: str) -> dict[str, frozenset[str]]:
    from slurm_gpu.lab import clients
    from slurm_gpu.slurm.topology_show import parse_show_topology

    text = clients.run(["scontrol", "show", "topology"], conf, timeout_s=15, check=True).stdout
    return {u.name: frozenset(u.nodes) for u in parse_show_topology(text) if u.kind != "aggregate"}


def _local(units: dict[str, frozenset[str]], nodes: tuple[str, ...], plugin: str) -> bool:
    """The nodes share one leaf switch (tree) or one base block."""
    leaves = {n: s for n, s in units.items() if len(s) <= 2} if plugin == "tree" else units
    return any(set(nodes) <= s for s in leaves.values())


@pytest.mark.slurm
def test_slurmctld_reads_the_emitted_topology(fabric_lab: tuple[str, tuple[int, int, int], str]) -> None:
    from slurm_gpu.policy import load_policy

    conf, version, policy_path = fabric_lab
    fabric = load_policy(policy_path).fabric
    units = _units(conf)
    if _plugin(version) == "tree":
        want = {s.name: frozenset(s.nodes) for s in fabric.leaves()}
        assert {n: units[n] for n in want} == want, units
        assert units["spine"] == frozenset().union(*want.values())  # a spine holds every node below it
    else:
        want = {b.name: frozenset(b.nodes) for b in fabric.blocks}
        assert {n: units.get(n) for n in want} == want, units
    conf_dir = Path(conf).parent
    emitted = "topology.yaml" if version >= (25, 5, 0) else "topology.conf"
    assert (conf_dir / emitted).is_file()


@pytest.mark.slurm
def test_gpusub_keeps_a_two_node_job_local_and_plain_sbatch_does_not(
        fabric_lab: tuple[str, tuple[int, int, int], str]) -> None:
    from slurm_gpu.lab import clients

    conf, version, _ = fabric_lab
    policy_copy = Path(Path(conf).parent.parent, "policy").read_text().strip()
    plugin = _plugin(version)
    units = _units(conf)
    jobs: list[int] = []
    try:
        # the free nodes spread: one node busy under each leaf (in each block)
        jobs += [_occupy(conf, "a100n2", 300), _occupy(conf, "a100n4", 300)]
        for j in jobs:
            assert clients.wait_job(conf, j, {"RUNNING"}, timeout_s=60) == "RUNNING"
        plain = _plain_slurm(conf, ["-N", "2", "--gres=gpu:a100:4", "-t", "5", "-o", "/dev/null", "--wrap",
                                    "sleep 60"])
        jobs.append(plain)
        if plugin == "tree":  # topology/tree: best effort, so it starts across switches at once
            assert clients.wait_job(conf, plain, {"RUNNING"}, timeout_s=30) == "RUNNING"
            assert not _local(units, _nodes(conf, plain), plugin), _nodes(conf, plain)
        else:  # topology/block (24.11.5, measured): Slurm itself holds a job of <= a base block in one block
            with pytest.raises(TimeoutError):
                clients.wait_job(conf, plain, {"RUNNING"}, timeout_s=15)
        clients.run(["scancel", str(plain)], conf, timeout_s=15)
        time.sleep(2)
        submitted = time.monotonic()
        mine = _gpusub(conf, policy_copy, "-N", "2", "--gpus-per-node=a100:4", "-t", "5", "-o", "/dev/null",
                       "--wrap", "sleep 60")
        jobs.append(mine)
        if plugin == "tree":
            assert _switches(conf, mine) == "1@00:01:00"
            # the bound exceeded: Slurm starts it across switches after the bound, not before
            assert clients.wait_job(conf, mine, {"RUNNING"}, timeout_s=BOUND_S + 40) == "RUNNING"
            waited = time.monotonic() - submitted
            assert waited >= BOUND_S - 2, waited
            assert not _local(units, _nodes(conf, mine), plugin)
        else:  # --segment=2: one block or nothing; it waits for a whole block
            with pytest.raises(TimeoutError):
                clients.wait_job(conf, mine, {"RUNNING"}, timeout_s=15)
        clients.run(["scancel", str(mine)], conf, timeout_s=15)
        # one leaf (block) frees: gpusub's job lands under it
        clients.run(["scancel", str(jobs[1])], conf, timeout_s=15)
        time.sleep(3)
        local = _gpusub(conf, policy_copy, "-N", "2", "--gpus-per-node=a100:4", "-t", "5", "-o", "/dev/null",
                        "--wrap", "sleep 30")
        jobs.append(local)
        assert clients.wait_job(conf, local, {"RUNNING"}, timeout_s=40) == "RUNNING"
        assert set(_nodes(conf, local)) == {"a100n3", "a100n4"}, _nodes(conf, local)
    finally:
        if jobs:
            clients.run(["scancel", *map(str, jobs)], conf, timeout_s=20)


@pytest.mark.slurm
def test_the_lua_mirror_asks_plain_sbatch_for_one_switch(fabric_lab: tuple[str, tuple[int, int, int], str]) -> None:
    """job_submit.lua sets req_switch/wait4switch as gpusub adds --switches: only for a fixed -N >= 2 that a
    leaf switch holds, never over the job's own --switches, a range or -w."""
    from slurm_gpu.lab import clients

    conf, version, _ = fabric_lab
    tree = _plugin(version) == "tree"  # block: the Lua adds nothing (--segment is not mirrored, docs/topology.md)
    cases = {"-N2": "1@00:01:00" if tree else None, "-N3": None, "-N1-2": None, "-wa100n[1,3]": None,
             "--switches=2": "2@00:05:00"}
    jobs = []
    try:
        for shape, want in cases.items():
            argv = ([shape] if shape.startswith("-w") or shape.startswith("-N") else ["-N2", shape])
            j = clients.sbatch([*argv, "--hold", "--gres=gpu:a100:4", "-t", "5", "-o", "/dev/null", "--wrap", "true"],
                               conf, user="labuser", cwd=f"{LAB_DIR}/jobs")
            jobs.append(j)
            got = _switches(conf, j)
            assert got == want, (shape, got)
    finally:
        if jobs:
            clients.run(["scancel", *map(str, jobs)], conf, timeout_s=20)
