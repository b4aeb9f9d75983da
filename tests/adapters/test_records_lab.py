# SPDX-License-Identifier: Apache-2.0
"""Fuzzing the one job reader through the real lab (issue 22, item 7): the lab user submits held jobs, and a
few running ones, whose names, comments, work dirs and output paths a seeded generator fills with every
Unicode line separator, control characters, ``Key=value`` look-alikes of scontrol's own keys (whole forged
``JobId=`` records, ``Nodes=h[1-999999] CPU_IDs=0 GRES=gpu:1(IDX:0)``), brackets and the longest texts
Slurm accepts (measured on 22.05.8 and 24.11.5: a name or comment of 1,024 bytes, an output path or work
dir of 4,095: PATH_MAX; one byte more is "Pathname ... too long"). squeue's JSON, read by
:func:`slurm_gpu.adapters.slurm.SbatchCli.job_records` (the product's path), must give the submitted jobs
one for one: the same ids and no other, the user's texts byte for byte, and the partition, state, nodes and
GRES that ``squeue -O`` (fields without user text, one job a line) reports for each.

SLURM_GPU_FUZZ_SEED picks another seed (the failing seed is in the assertion message); SLURM_GPU_FUZZ_JOBS
the number of held jobs (default 40: about 30 s in the lab). Integration test (marker ``slurm``)."""

from __future__ import annotations

import os
import random
import shutil
import time

import pytest

from slurm_gpu.adapters.slurm import SbatchCli
from slurm_gpu.slurm.release import STDIO_PATHS, since

pytestmark = pytest.mark.slurm

SEPARATORS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\t"]
LOOKALIKES = [
    " JobId=999", "\nJobId=998 JobName=x UserId=root(0) JobState=RUNNING Partition=batch NodeList=h100n1",
    " Nodes=h[1-999999] CPU_IDs=0 GRES=gpu:1(IDX:0)", "   Nodes=h100n1 CPU_IDs=0-31 Mem=1 GRES=gpu:h100:8(IDX:0-7)",
    " UserId=root(0)", " JobState=COMPLETING", " Reason=TimeLimit", " PreemptTime=2026-12-01T00:00:00",
    " Restarts=0", " Partition=spot", " TresPerNode=gres:gpu:h100:8", " TRES=cpu=1,gres/gpu=8", "=", "==",
    " SubmitLine=sbatch --gres=gpu:8", " NumNodes=99", '{"jobs": []}', '"},{"job_id": 7', "\\u0000",
]
PIECES = ["[", "]", "(", ")", ",", ":", "|", "'", '"', "\\", "$", "`", "é", "€", "😀", "\ufeff", " ", "  "]
NAME_MAX = 1024  # bytes, name and comment
PATH_MAX = 4095  # bytes, output paths and work dirs
COMPONENT_MAX = 255  # bytes, one path component


def _text(rng: random.Random, limit: int, banned: str = "", full: bool = False) -> str:
    """Up to ``limit`` UTF-8 bytes of hostile text; ``full``: exactly ``limit`` bytes."""
    parts = []
    for _ in range(rng.randint(1, 12)):
        parts.append(rng.choice((rng.choice(SEPARATORS), rng.choice(LOOKALIKES), rng.choice(PIECES),
                                 "".join(rng.choice("abcXYZ019_-.") for _ in range(rng.randint(1, 8))))))
    text = "".join(parts)
    if full:
        text = text * (limit // max(len(text.encode()), 1) + 1)
    for ch in banned:
        text = text.replace(ch, "_")
    text = text.encode()[:limit].decode("utf-8", "ignore") or "x"
    return text + "a" * (limit - len(text.encode())) if full else text


def _component(rng: random.Random) -> str:
    name = _text(rng, COMPONENT_MAX, banned="/%\x00").strip() or "d"
    return name + "d" if name in (".", "..") else name


def _workdir(rng: random.Random, base: str, user: str, long: bool = False) -> str:
    """A directory under ``base`` (made here, owned by the lab user) with hostile names; ``long``: nearly
    as long as a path may be."""
    path = base
    for _ in range(rng.randint(1, 3)):
        path = os.path.join(path, _component(rng))
    if long:
        while len((path + "/" + "w" * COMPONENT_MAX).encode()) < PATH_MAX - 300:
            path = os.path.join(path, "w" * COMPONENT_MAX)
    os.makedirs(path, exist_ok=True)
    d = path
    while d != base:
        shutil.chown(d, user)
        d = os.path.dirname(d)
    return path


REQUESTS = [(["-p", "batch", "--gres=gpu:h100:1"], "batch"), (["-p", "batch", "--gpus=a100:1"], "batch"),
            (["-p", "spot", "--qos=spot", "--gres=gpu:h100:2"], "spot"),
            (["-p", "batch", "-N", "2", "--gpus-per-node=h100:1"], "batch")]


def _jobs(rng: random.Random, n: int, base: str, user: str) -> list[dict]:
    """``n`` jobs; the first 3 run (one GPU each), the rest are held. Held ones carry the longest texts:
    job 3 a name of NAME_MAX bytes, 4 a comment of NAME_MAX, 5 a work dir near PATH_MAX, 6 an output path
    of PATH_MAX (a held job's output file is never opened); the others, some at random."""
    jobs = []
    for k in range(n):
        hold = k >= 3
        wd = _workdir(rng, base, user, long=k == 5 or (hold and rng.random() < 0.05))
        out = os.path.join(wd, _component(rng))
        err = out if rng.random() < 0.3 else os.path.join(wd, _component(rng))
        if k == 6 or (hold and rng.random() < 0.05):
            out = (wd + "/" + "o" * PATH_MAX).encode()[:PATH_MAX].decode("utf-8", "ignore")
        opts, part = REQUESTS[0] if not hold else rng.choice(REQUESTS)
        jobs.append({"name": _text(rng, NAME_MAX, full=k == 3 or (hold and rng.random() < 0.1)),
                     "comment": _text(rng, NAME_MAX, full=k == 4 or (hold and rng.random() < 0.1)),
                     "workdir": wd, "out": out, "err": err, "opts": opts, "partition": part, "hold": hold})
    return jobs


def _truth(lab) -> dict[str, dict[str, str]]:
    """Every job's structure from ``squeue -O`` (no user text among these fields: one job per line)."""
    keys = ("JobID", "Partition", "State", "NodeList", "tres-per-node", "tres-per-job")
    out = lab.run(["squeue", "-h", "-t", "all", "-O", ",".join(f"{k}:|" for k in keys)], as_root=True,
                  check=True).stdout
    rows = [dict(zip(keys, line.split("|"), strict=False)) for line in out.split("\n") if line]
    return {r["JobID"]: r for r in rows}


def test_squeue_json_gives_the_submitted_jobs_one_for_one(slurm_lab):
    seed = int(os.environ.get("SLURM_GPU_FUZZ_SEED", "2212"))
    n = int(os.environ.get("SLURM_GPU_FUZZ_JOBS", "40"))
    rng = random.Random(seed)
    base = slurm_lab.workdir("fuzz")
    before = {j.job_id for j in SbatchCli(env=slurm_lab.env()).job_records().jobs}
    jobs = _jobs(rng, max(n, 7) + 3, base, slurm_lab.user)
    submitted: dict[str, dict] = {}
    try:
        for job in jobs:
            argv = ["--parsable", *(["--hold"] if job["hold"] else []), "-t", "5", *job["opts"], "-J", job["name"],
                    "--comment", job["comment"], "-D", job["workdir"], "-o", job["out"], "-e", job["err"],
                    "--wrap", "sleep 120"]
            r = slurm_lab.run(["sbatch", *argv], cwd=base)
            assert r.returncode == 0, (seed, r.stderr[-300:], {k: job[k][:80] for k in ("name", "comment")})
            submitted[r.stdout.strip().split(";")[0]] = job
        running = [j for j, job in submitted.items() if not job["hold"]]
        for j in running:  # the three unheld ones run: nodes and GPU indices in the records too
            slurm_lab.wait(j, {"RUNNING"}, timeout_s=60)
        t0 = time.monotonic()
        read = SbatchCli(env=slurm_lab.env()).job_records(topology=True)
        elapsed = time.monotonic() - t0
        truth = _truth(slurm_lab)
        got = {j.fields["JobId"]: j for j in read.jobs if j.job_id not in before}
        assert read.problems == (), (seed, read.problems)
        assert set(got) == set(submitted), (seed, sorted(set(got) ^ set(submitted)))  # none forged, none lost
        for jid, job in submitted.items():
            f, rec = got[jid].fields, got[jid]
            assert (f["JobName"], f.get("Comment")) == (job["name"], job["comment"]), (seed, jid)
            paths = (job["out"], job["err"])
            if since(STDIO_PATHS, slurm_lab.version) == "expanded":  # 26.05: the paths Slurm opens, which drop
                paths = tuple(p.replace("\\", "") for p in paths)  # every backslash of the pattern (measured)
            assert (f["WorkDir"], f["StdOut"], f["StdErr"]) == (job["workdir"], *paths), (seed, jid)
            t = truth[jid]
            assert (f["Partition"], f["JobState"], f["NodeList"]) == (
                t["Partition"], t["State"], t["NodeList"]) == (job["partition"], f["JobState"], f["NodeList"])
            assert f.get("TresPerNode", "N/A") == t["tres-per-node"] or f.get("TresPerJob") == t["tres-per-job"]
            if f["JobState"] == "RUNNING":
                nodes = {a.node for a in rec.allocs}
                assert nodes and all(a.gpu_idx and a.cpu_ids for a in rec.allocs), (seed, jid, rec.allocs)
                assert ",".join(sorted(nodes)) == f["NodeList"] or len(nodes) == 2, (seed, jid, f["NodeList"])
            else:
                assert rec.allocs == () and f["Reason"] == "JobHeldUser", (seed, jid, f["Reason"])
        assert sum(len(j.fields["JobName"].encode()) == NAME_MAX for j in got.values()) >= 1, seed
        assert elapsed < 10, elapsed
    finally:
        if submitted:
            slurm_lab.cancel(*submitted)
        shutil.rmtree(base, ignore_errors=True)
