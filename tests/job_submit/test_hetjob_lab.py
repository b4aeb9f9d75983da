# SPDX-License-Identifier: Apache-2.0
"""Heterogeneous jobs through the real slurmctld: the same hetjob scripts submitted (held) with plain
sbatch under the lab's compiled job_submit.lua, with gpusub, and with plain sbatch under Slurm alone
(the lab's plugin swapped for a pass-through). Per component (the records J+0, J+1, ... from the job
reader): the plugin's verdict is gpusub --explain's, each component lands in the partition and QOS
gpusub predicts for that component, gpusub's job and the plugin's agree on partition, QOS and GPU type,
and the counts (nodes, tasks, CPUs, GPUs, time limit) are plain Slurm's in all three.

The expectations are gpusub's predictions and Slurm's own records; the comments say by hand why each
case lands where it does under examples/policies/university.yaml (the lab policy)."""

from __future__ import annotations

import json
import os

import pytest

from slurm_gpu.slurm.records import job_tres

pytestmark = pytest.mark.slurm

SH = "#!/bin/bash\n"
# (name, the #SBATCH lines of each component, policy accepts)
CASES: list[tuple[str, list[str], bool]] = [
    ("cpu-then-gpu", ["-t 60 -n 1", "-t 60 --gpus=h100:1"], True),          # the bug: the CPU part of a GPU job
    ("gpu-then-cpu", ["-t 60 --gpus=a100:2", "-t 60 -n 2"], True),          # GPU part first
    ("two-types", ["-t 60 --gpus=h100:1", "-t 60 --gres=gpu:a100:1"], True),  # each typed on its own
    ("cpu-then-untyped", ["-t 60 -n 2 -c 2", "-t 60 --gpus=1"], True),       # the plugin types it (h100, batch)
    ("short-cpu-parts", ["-t 10 -n 1", "-t 10 -n 2"], True),                  # each fits the debug class
    ("cpu-only", ["-t 60 -n 1", "-t 60 -n 2"], False),                        # a CPU-only job: no class
    ("gpu-too-long", ["-t 60 -n 1", "-t 3-00:00:00 --gpus=h100:1"], False),  # over batch's 2 days
    # 8 + 8 + 4 GPUs in QOS normal: each within 8 per job, 20 over the 16 per user
    ("over-user-cap", ["-t 60 --gpus=h100:8", "-t 60 --gpus=h100:8", "-t 60 --gpus=a100:4"], False),
]


def script(parts: list[str]) -> str:
    return SH + "#SBATCH hetjob\n".join(f"#SBATCH {p}\n" for p in parts) + "srun --het-group=0 true\n"


def write(lab, name: str, text: str) -> tuple[str, str]:
    wd = lab.workdir(f"het-{name}")
    path = os.path.join(wd, "job.sh")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o644)
    return wd, path


def _gpus(rec: dict) -> tuple[int, dict[str, int]]:
    tres = job_tres(rec)
    typed = {k.split(":", 1)[1]: int(v) for k, v in tres.items() if k.startswith("gres/gpu:")}
    return int(tres.get("gres/gpu", 0)), typed


def counts(rec: dict) -> tuple:
    return (rec.get("NumNodes"), rec.get("NumTasks"), rec.get("NumCPUs"), rec.get("TimeLimit"), _gpus(rec)[0])


def components(lab, argv: list[str], wd: str, tool: str = "sbatch") -> tuple[list[dict] | None, str]:
    """Held submission: (the records per component in offset order, or None; stderr)."""
    p = lab.gpusub(["--parsable", "--hold", *argv], cwd=wd) if tool == "gpusub" else \
        lab.run(["sbatch", "--parsable", "--hold", *argv], cwd=wd)
    if p.returncode:
        return None, p.stderr
    job = p.stdout.strip().splitlines()[-1].split(";")[0]
    try:
        recs = lab.job_records(job)
        # every component answers on its own id J+K, as scontrol takes it
        for rec in recs:
            q = lab.run(["scontrol", "-o", "show", "job", f"{job}+{rec['HetJobOffset']}"])
            assert f"HetJobOffset={rec['HetJobOffset']} " in q.stdout, (job, rec["HetJobOffset"], q.stdout)
    finally:
        lab.cancel(job)
    return sorted(recs, key=lambda r: int(r.get("HetJobOffset", 0))), p.stderr


def predict(lab, path: str) -> dict:
    p = lab.gpusub(["--explain", "--json", path])
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


RESULTS: dict[str, dict] = {}


@pytest.mark.parametrize("name, parts, accepts", CASES, ids=[c[0] for c in CASES])
def test_hetjob_with_the_plugin_and_with_gpusub(slurm_lab, name, parts, accepts) -> None:
    wd, path = write(slurm_lab, name, script(parts))
    want = predict(slurm_lab, path)
    assert want["accepted"] == accepts, want  # the hand-written expectation and gpusub agree
    assert len(want["components"]) == len(parts)
    plugin, err = components(slurm_lab, [path], wd)
    assert (plugin is not None) == accepts, f"{name}: plugin {'accepted' if plugin else 'refused'} ({err.strip()})"
    mine, gerr = components(slurm_lab, [path], wd, tool="gpusub")
    assert (mine is not None) == accepts, f"{name}: gpusub {'accepted' if mine else 'refused'} ({gerr.strip()})"
    RESULTS[name] = {"plugin": plugin, "gpusub": mine}
    if not accepts:
        assert want["message"] in err, (err, want["message"])  # the plugin's refusal reaches the user
        assert want["message"] in gerr
        return
    assert plugin is not None and mine is not None
    assert len(plugin) == len(mine) == len(parts)
    for k, (rec, got, pred) in enumerate(zip(plugin, mine, want["components"])):
        where = f"{name} component {k}"
        assert pred["accepted"], (where, pred)
        if pred["class"] is not None:  # the policy placed it: where gpusub predicts, both ways
            assert (rec["Partition"], rec["QOS"]) == (pred["partition"], pred["qos"]), (where, rec, pred)
        assert (got["Partition"], got["QOS"]) == (rec["Partition"], rec["QOS"]), where
        assert _gpus(got) == _gpus(rec), where  # the same GPUs of the same type
        if pred["gres"]:
            assert pred["gres"].split(":")[1] in _gpus(rec)[1], (where, pred["gres"], rec)
        assert counts(got) == counts(rec), where


def test_hetjob_counts_as_plain_slurm(slurm_lab, slurm_alone) -> None:
    """Slurm alone (no policy): every case is accepted with the counts the user asked, which the plugin's
    and gpusub's jobs kept; the refused ones are the policy's refusals, not Slurm's."""
    checked = 0
    for name, parts, accepts in CASES:
        wd, path = write(slurm_lab, name, script(parts))
        plain, err = components(slurm_lab, [path], wd)
        # Slurm's own limits may refuse what the policy refuses too: the per-user cap (the lab's QOS), and on
        # 26.05.5 gpu-too-long at submission ("Job violates accounting/QOS policy (... time limits)", measured),
        # where 22.05.8 and 24.11.5 accept it and leave it pending (PartitionTimeLimit)
        if plain is None and name in ("over-user-cap", "gpu-too-long"):
            assert "limit" in err.lower() or "qos" in err.lower(), err
            continue
        assert plain is not None and len(plain) == len(parts), f"{name}: plain Slurm refused ({err.strip()})"
        seen = RESULTS.get(name)
        if seen is None or not accepts:
            continue
        for k, rec in enumerate(plain):
            assert counts(seen["plugin"][k]) == counts(rec), (name, k, seen["plugin"][k], rec)
            assert counts(seen["gpusub"][k]) == counts(rec), (name, k)
            checked += 1
    assert checked >= 2 * sum(1 for _, _, a in CASES if a) or not RESULTS, (checked, sorted(RESULTS))
