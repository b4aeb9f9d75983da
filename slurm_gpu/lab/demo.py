# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu lab demo``: submit examples/jobs/hello-gpu.sh with gpusub as the lab user, wait for it,
and show where it ran (node, partition, GPUs, allocated and bound CPUs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.lab import clients
from slurm_gpu.lab.control import Lab, default_policy_path, repo_root


def find_gpusub(lab_dir: str | None = None, user: str | None = None) -> str | None:
    """A gpusub the lab user can run: this environment's, or the lab's world-readable copy of this
    checkout when the lab user cannot read it (a clone in /root). None when gpusub is not installed."""
    from slurm_gpu.lab.control import lab_dir_from_env
    from slurm_gpu.lab.runtime import lab_gpusub
    from slurm_gpu.lab.spec import DEFAULT_USER

    if not os.path.exists(os.path.join(sys.prefix, "bin", "gpusub")):
        return shutil.which("gpusub")
    return lab_gpusub(lab_dir or lab_dir_from_env(), user or os.environ.get("SLURM_GPU_LAB_USER") or DEFAULT_USER,
                      repo_root())


def _submit(lab: Lab, script: str, workdir: str, echo: Callable[[str], None]) -> tuple[int, str]:
    env_extra = {"GPUSUB_POLICY": lab._read("policy") or default_policy_path()}
    gpusub = None if os.environ.get("SLURM_GPU_DEMO_SUBMIT") == "sbatch" else find_gpusub(lab.paths.lab_dir, lab.user)
    if gpusub is None:
        echo("NOTE: gpusub is not installed; submitting with plain sbatch --parsable instead (fallback)")
        return clients.sbatch([script], lab.slurm_conf, user=lab.user, cwd=workdir), "sbatch (fallback)"
    argv = [gpusub, "--json", script]
    echo(f"$ runuser -u {lab.user} -- {' '.join(argv)}")
    r = clients.run(argv, lab.slurm_conf, user=lab.user, cwd=workdir, env_extra=env_extra, timeout_s=60)
    for line in r.stderr.strip().splitlines():
        echo(f"  gpusub: {line}")
    if r.returncode != 0:
        raise SlurmGpuError(f"gpusub failed (exit {r.returncode}): {r.stderr.strip().splitlines()[-1:] or r.stdout}")
    try:
        return int(json.loads(r.stdout)["job_id"]), "gpusub"
    except (ValueError, KeyError, TypeError) as e:
        raise SlurmGpuError(f"gpusub --json printed no job_id: {r.stdout.strip()[:200]!r}") from e


_LINE = re.compile(r"^hello-gpu(?:\.([0-9]+))?: ([A-Za-z_]+)=(.*)$")


def parse_output(text: str) -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    """hello-gpu.sh output -> (job-level facts, task number -> that task's facts)."""
    facts: dict[str, str] = {}
    tasks: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        task, key, value = m.groups()
        facts.setdefault(key, value)
        if task is not None:
            tasks.setdefault(int(task), {})[key] = value
    return facts, tasks


def _write_as_root_into(path: str, data: bytes) -> None:
    """Write a file into the lab user's directory without following anything the user planted there:
    the old entry is unlinked (never followed), and the new one created exclusively."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        os.fchmod(fh.fileno(), 0o755)  # on the open file: the name could be swapped by now


def _locality(lab: Lab, facts: dict[str, str]) -> str:
    """The locality rule for the demo job, from what it printed (node, global GPU ids, CPU_IDs)."""
    from slurm_gpu.cpulist import format_cpulist, parse_cpulist
    from slurm_gpu.placement.locality import NodeAlloc, check_node, parse_gres_conf

    try:
        table = parse_gres_conf(Path(lab.paths.conf_dir, "gres.conf").read_text())
        node = facts["node"]
        alloc = NodeAlloc(node, frozenset(parse_cpulist(facts["CPU_IDs"])),
                          frozenset(parse_cpulist(facts["SLURM_JOB_GPUS"])))
    except (OSError, KeyError, ValueError) as exc:
        return f"not checked ({exc})"
    gpu_cores = table.get(node) or {}
    local = sorted({c for g in alloc.gpu_idx for c in gpu_cores.get(g, ())})
    problems = check_node(alloc, gpu_cores)
    verdict = "OK" if not problems else "FAILS: " + "; ".join(problems)
    return f"GPUs {format_cpulist(alloc.gpu_idx)} have local cores {format_cpulist(local)}: {verdict}"


def task_plugin(lab: Lab) -> str:
    """The lab's ``TaskPlugin`` (from its slurm.conf; "" when unreadable)."""
    try:
        found = re.findall(r"^TaskPlugin=(\S+)", Path(lab.slurm_conf).read_text(), re.M)
    except OSError:
        return ""
    return found[-1] if found else ""


def run_demo(lab: Lab, script: str | None = None, timeout_s: float = 120, echo: Callable[[str], None] = print) -> bool:
    """Returns True when the job COMPLETED."""
    if os.geteuid() != 0:
        raise SlurmGpuError("slurm-gpu lab demo must run as root (it submits as the lab user via runuser)")
    if not lab.healthy():
        raise SlurmGpuError("the lab is not up (or not healthy): run `slurm-gpu lab up` first")
    src = Path(script or repo_root() / "examples" / "jobs" / "hello-gpu.sh")
    if not src.is_file():
        raise SlurmGpuError(f"no such job script: {src}")
    workdir = os.path.join(lab.paths.jobs_dir, "demo")
    os.makedirs(workdir, exist_ok=True)
    shutil.chown(workdir, lab.user)
    dst = os.path.join(workdir, src.name)
    _write_as_root_into(dst, src.read_bytes())
    job_id, how = _submit(lab, dst, workdir, echo)
    echo(f"submitted job {job_id} with {how}; waiting (up to {timeout_s:g} s)")
    fields, allocs = clients.show_job(lab.slurm_conf, job_id)
    stdout_path = fields.get("StdOut") or os.path.join(workdir, f"hello-gpu-{job_id}.out")
    state = clients.wait_job(lab.slurm_conf, job_id, {"COMPLETED"}, timeout_s=timeout_s)
    fields, allocs = clients.show_job(lab.slurm_conf, job_id)
    try:
        text = Path(stdout_path).read_text()
    except OSError:
        text = ""
    facts, tasks = parse_output(text)
    rows = [
        ("job", f"{job_id} {state} (exit {fields.get('ExitCode', '?')}), submitted with {how}"),
        ("node", facts.get("node") or fields.get("NodeList", "?")),
        ("partition / qos", f"{facts.get('partition') or fields.get('Partition', '?')} / {fields.get('QOS', '?')}"),
        (
            "GPUs",
            f"SLURM_JOB_GPUS={facts.get('SLURM_JOB_GPUS', '?')} "
            f"CUDA_VISIBLE_DEVICES={facts.get('CUDA_VISIBLE_DEVICES', '?')}",
        ),
        ("CPU_IDs (scontrol show job -d)", facts.get("CPU_IDs") or "?"),
    ]
    rows.append(("locality (vs gres.conf Cores=)", _locality(lab, facts)))
    plugin = task_plugin(lab)
    for task, kv in sorted(tasks.items()):
        bind = " ".join(f"{k}={v}" for k, v in kv.items() if k.startswith("SLURM_CPU_BIND"))
        if plugin == "task/none":  # the lab: srun carries the request, nobody applies it (docs/lab.md)
            bind = f"{bind} (not bound: TaskPlugin=task/none, see docs/lab.md)".strip()
        rows.append((f"task {task}: SLURM_CPU_BIND*", bind or "(not set)"))
        if "CUDA_VISIBLE_DEVICES" in kv:
            rows.append((f"task {task}: CUDA_VISIBLE_DEVICES", kv["CUDA_VISIBLE_DEVICES"]))
        if "Cpus_allowed_list" in kv:
            rows.append(
                (f"task {task}: real CPUs", f"{kv['Cpus_allowed_list']}  (/proc/self/status: this machine's CPUs)")
            )
    rows.append(("output", stdout_path))
    echo("")
    for k, v in rows:
        echo(f"  {k:<32} {v}")
    if state != "COMPLETED":
        echo(text[-2000:])
    return state == "COMPLETED"
