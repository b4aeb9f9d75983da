# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu-pin`` and ``pin_current_process`` as real processes on this machine: the worker's
actual affinity (``/proc/self/status``), memory policy (``get_mempolicy(2)``, read by the child
itself) and CUDA_VISIBLE_DEVICES; never failing the worker; usage errors; start-up imports; and the
job-cgroup cpuset reader against recorded cgroup trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.adapters.affinity import job_cgroup_cpuset
from slurm_gpu.topology.model import Gpu, NumaNode, Thread, build_topology

PIN = os.path.join(os.path.dirname(sys.executable), "slurm-gpu-pin")
STATUS = "grep Cpus_allowed_list /proc/self/status | cut -f2; echo \"CVD=${CUDA_VISIBLE_DEVICES-unset}\""
# The child reads its own memory policy with get_mempolicy(2) (x86_64: 239, arm64: 236).
MEMPOLICY = (
    "import ctypes, os; nr = {'x86_64': 239, 'aarch64': 236}[os.uname().machine]; "
    "libc = ctypes.CDLL(None, use_errno=True); mode = ctypes.c_int(); mask = (ctypes.c_ulong * 16)(); "
    "rc = libc.syscall(ctypes.c_long(nr), ctypes.byref(mode), mask, ctypes.c_ulong(1025), None, ctypes.c_ulong(0)); "
    "print(rc, mode.value, mask[0])"
)
CPUS = sorted(os.sched_getaffinity(0))


def two_cpu_topology(tmp_path: Path, sockets: tuple[int, int] = (0, 0)) -> tuple[str, int, int]:
    """GPU0 local to this process's first cpu a, GPU1 to its second cpu b, one NUMA node (0)."""
    if len(CPUS) < 2:
        pytest.skip("needs a process affinity of at least 2 cpus")
    a, b = CPUS[:2]
    topo = build_topology([Thread(a, sockets[0], a, 0), Thread(b, sockets[1], b, 0)], [NumaNode(0, (a, b))],
                          [Gpu(0, numa_node=0, cpus=(a,)), Gpu(1, numa_node=0, cpus=(b,))])
    path = tmp_path / "2cpu.json"
    path.write_text(json.dumps(topo.to_json()))
    return str(path), a, b


def run(args: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_JOB_GPUS",
                                                           "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES",
                                                           "SLURM_GPU_TOPOLOGY", "SLURM_LOCALID")}
    return subprocess.run([PIN, *args], capture_output=True, text=True, env=base | (env or {}), timeout=30, **kw)


@pytest.mark.parametrize("cvd, first", [("0,1", 0), ("1,0", 1)])
def test_two_workers_get_their_gpus_cpu(tmp_path, cvd, first):
    topo, a, b = two_cpu_topology(tmp_path)
    cpu_of = {0: a, 1: b}
    for rank in (0, 1):
        r = run(["--topology", topo, "sh", "-c", STATUS],
                {"LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2", "CUDA_VISIBLE_DEVICES": cvd})
        assert r.returncode == 0 and r.stderr == "", r.stderr
        gpu = int(cvd.split(",")[rank])
        assert r.stdout.split() == [str(cpu_of[gpu]), f"CVD={cvd}"]


def test_socket_order_is_the_same_for_every_worker(tmp_path):
    topo, a, b = two_cpu_topology(tmp_path, sockets=(1, 0))  # GPU0 on socket 1, GPU1 on socket 0
    outs = [run(["--order", "socket", "--topology", topo, "--", "sh", "-c", STATUS],
                {"LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": "2", "CUDA_VISIBLE_DEVICES": "0,1"}).stdout.split()
            for r in (0, 1)]
    assert outs == [[str(b), "CVD=1,0"], [str(a), "CVD=1,0"]]


def test_unset_cuda_visible_devices_stays_unset(tmp_path):
    topo, a, _ = two_cpu_topology(tmp_path)
    r = run(["--topology", topo, "sh", "-c", STATUS], {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"})
    assert r.stdout.split() == [str(a), "CVD=unset"]


@pytest.mark.parametrize("policy, expected", [("preferred", "0 1 1"), ("bind", "0 2 1"), ("none", "0 0 0")])
def test_memory_policy_is_set(tmp_path, policy, expected):
    topo, _, _ = two_cpu_topology(tmp_path)
    r = run(["--mem-policy", policy, "--topology", topo, sys.executable, "-c", MEMPOLICY],
            {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected


def test_topology_from_environment_and_verbose_note(tmp_path):
    topo, _, b = two_cpu_topology(tmp_path)
    r = run(["-v", "sh", "-c", STATUS], {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "SLURM_GPU_TOPOLOGY": topo,
                                        "CUDA_VISIBLE_DEVICES": "0,1"})
    assert r.stdout.split()[0] == str(b)
    assert r.stderr.startswith("slurm-gpu-pin: note: worker 1/2: GPU 1 (global 1)") and r.stderr.count("\n") == 1


@pytest.mark.parametrize("args, env", [
    (["--topology", "/nonexistent/topo.json"], {"LOCAL_RANK": "0"}),
    (["--topology", "{topo}"], {"LOCAL_RANK": "5", "LOCAL_WORLD_SIZE": "2"}),
    (["--topology", "{topo}"], {"LOCAL_RANK": "zero"}),
    (["--order", "diagonal", "--topology", "{topo}"], {"LOCAL_RANK": "0"}),
    (["--bogus", "--topology", "{topo}"], {"LOCAL_RANK": "0"}),
])
def test_never_fails_the_worker(tmp_path, args, env):
    topo, _, _ = two_cpu_topology(tmp_path)
    before = set(os.sched_getaffinity(0))
    r = run([a.replace("{topo}", topo) for a in args] + ["sh", "-c", STATUS + "; exit 7"], env)
    assert r.returncode == 7
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("slurm-gpu-pin: warning: "), r.stderr
    assert "unpinned" in r.stderr
    from slurm_gpu.cpulist import parse_cpulist

    assert set(parse_cpulist(r.stdout.split()[0])) == before  # ran unpinned


def test_usage_and_missing_command(tmp_path):
    r = run([])
    assert r.returncode == 2 and "usage: slurm-gpu-pin" in r.stderr
    r = run(["--topology"])
    assert r.returncode == 2 and "--topology needs a value" in r.stderr
    r = run(["--", "/nonexistent/cmd"], {"LOCAL_RANK": "0", "SLURM_GPU_TOPOLOGY": two_cpu_topology(tmp_path)[0]})
    assert r.returncode == 127 and "command not found" in r.stderr
    r = run(["--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage: slurm-gpu-pin")


def test_dry_run_prints_the_node_plan_and_execs_nothing(tmp_path):
    topo, a, b = two_cpu_topology(tmp_path)
    marker = tmp_path / "ran"
    r = run(["--dry-run", "--topology", topo, "--", "touch", str(marker)], {"CUDA_VISIBLE_DEVICES": "1,0"})
    assert r.returncode == 0 and not marker.exists()
    plan = json.loads(r.stdout)
    assert plan["local_rank"] is None and plan["local_world_size"] == 2
    assert plan["allocation_from"] in ("sched_getaffinity",) or plan["allocation_from"].startswith("cpuset ")
    assert [(w["gpu"], w["cpus"]) for w in plan["workers"]] == [("1", str(b)), ("0", str(a))]
    r = run(["--dry-run", "--topology", topo], {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"})
    assert [w["local_rank"] for w in json.loads(r.stdout)["workers"]] == [1]
    r = run(["--dry-run", "--topology", str(tmp_path / "missing.json")])
    assert r.returncode == 1 and r.stderr.startswith("slurm-gpu-pin: error: not pinned: ")


def test_python_call_pins_every_thread(tmp_path):
    topo, a, b = two_cpu_topology(tmp_path)
    code = (
        "import os, threading, time\n"
        "ev = threading.Event(); t = threading.Thread(target=ev.wait, daemon=True); t.start()\n"
        "from slurm_gpu.placement.pin_main import pin_current_process\n"
        f"pin = pin_current_process(topology={topo!r})\n"
        "tid = t.native_id\n"
        "line = [x for x in open(f'/proc/self/task/{tid}/status') if x.startswith('Cpus_allowed_list')][0]\n"
        "print(sorted(os.sched_getaffinity(0)), line.split()[1], os.environ['CUDA_VISIBLE_DEVICES'], pin.gpu)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("SLURM_GPU_TOPOLOGY",)}
    env |= {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "CUDA_VISIBLE_DEVICES": "0,1"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.split() == [f"[{b}]", str(b), "0,1", "1"]
    code = ("from slurm_gpu.placement.pin_main import pin_current_process; "
            "print(pin_current_process(topology='/nope.json'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert r.stdout.strip() == "None" and r.stderr.startswith("slurm-gpu-pin: warning: not pinned: ")


def test_start_up_imports_nothing_heavy(tmp_path):
    topo, _, _ = two_cpu_topology(tmp_path)
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "slurm_gpu.placement.pin_main", "--dry-run",
                        "--topology", topo], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in r.stderr.splitlines() if "|" in line}
    assert "slurm_gpu" in imported
    assert not imported & {"jinja2", "click", "yaml", "pynvml", "argparse"}


def _tree(root: Path, cgroup: str, files: dict[str, str]) -> str:
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/cgroup").write_text(cgroup)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(root)


def test_job_cpuset_cgroup_v2(tmp_path):
    step = "system.slice/slurmstepd.scope/job_42/step_0"
    root = _tree(tmp_path, f"0::/{step}/user/task_0\n",
                 {f"sys/fs/cgroup/{step}/cpuset.cpus.effective": "0-3,16-19\n",
                  "sys/fs/cgroup/cpuset.cpus.effective": "0-31\n"})
    cpus, where = job_cgroup_cpuset(root)
    assert cpus == (0, 1, 2, 3, 16, 17, 18, 19) and where.endswith("job_42/step_0/cpuset.cpus.effective")


def test_job_cpuset_cgroup_v1(tmp_path):
    path = "slurm/uid_1001/job_7/step_batch"
    root = _tree(tmp_path, f"5:memory:/{path}\n3:cpuset:/{path}\n",
                 {f"sys/fs/cgroup/cpuset/{path}/cpuset.cpus": "8-11\n"})
    assert job_cgroup_cpuset(root)[0] == (8, 9, 10, 11)


def test_no_job_cgroup_means_no_cpuset(tmp_path):
    """Outside a Slurm job cgroup (this lab: task/affinity only) the node's cpuset is not the allocation."""
    root = _tree(tmp_path, "3:cpuset:/\n0::/user.slice\n", {"sys/fs/cgroup/cpuset/cpuset.cpus": "0-31\n"})
    assert job_cgroup_cpuset(root) is None


def test_rank_without_a_count_means_one_worker_per_gpu(tmp_path):
    topo, _, b = two_cpu_topology(tmp_path)
    r = run(["--topology", topo, "sh", "-c", STATUS], {"LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "0,1"})
    assert r.returncode == 0 and r.stderr == "" and r.stdout.split() == [str(b), "CVD=0,1"]
