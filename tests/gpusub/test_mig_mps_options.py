# SPDX-License-Identifier: Apache-2.0
"""gpusub --mig PROFILE:COUNT[,...] and --mps PERCENT (docs/mig_mps.md, "The user side").

The rendered script is read back with the project's model of sbatch's ``#SBATCH`` lexer and the token
with the hooks' own decoder, so what the prolog will see is checked, not what gpusub thinks it wrote.
Bad values are usage errors (exit 2, one line naming the accepted forms); a request the policy refuses is
a rejection (exit 1). In the lab: the token reaches the job's Comment, and job_submit.lua refuses a bad
token written by hand with plain sbatch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.lab.clients import show_job
from slurm_gpu.sharing import token as token
from slurm_gpu.slurm.sbatch.parse import parse_submission

ROOT = Path(__file__).resolve().parents[2]
MIG_POLICY = str(ROOT / "examples" / "policies" / "mig" / "university-mig.yaml")
GPUSUB = os.path.join(os.path.dirname(sys.executable), "gpusub")


def gpusub(tmp_path: Path, *args: str, policy: str | None = MIG_POLICY) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nnvidia-smi -L\n")
    env = {k: v for k, v in os.environ.items() if k != "GPUSUB_POLICY" and not k.startswith("SBATCH_")}
    env |= {"SLURM_CONF": "/no/such/slurm.conf", "GPUSUB_SLURM_VERSION": "22.05.8", "HOME": str(tmp_path)}
    pol = ["--policy", policy] if policy else []
    return subprocess.run([GPUSUB, *pol, *args, str(script)], capture_output=True, text=True, timeout=60, env=env)


def rendered(tmp_path: Path, *args: str) -> dict[str, str | None]:
    """The sbatch options of the dry-run script, as sbatch reads its #SBATCH lines."""
    r = gpusub(tmp_path, "--dry-run", *args)
    assert r.returncode == 0, r.stderr
    return dict(parse_submission([], {}, r.stdout).options)


# ---- rendering ---------------------------------------------------------------------------------

def test_mig_without_gpus_gets_a_whole_gpu_of_the_dynamic_type(tmp_path: Path) -> None:
    opts = rendered(tmp_path, "--mig", "3g.40gb:2")
    assert token.decode(opts["comment"]) == token.JobRequest(mig=(("3g.40gb", 2),))
    assert opts["comment"] == "slurm-gpu:mig=3g.40gb:2"
    assert opts["gres"] == "gpu:a100:1"  # a100x4 is the policy's dynamic-MIG node type
    assert opts["partition"] == "batch"


def test_the_users_comment_is_kept_and_quoted(tmp_path: Path) -> None:
    text = 'my "run" $HOME \\ it\'s #1'
    opts = rendered(tmp_path, "--comment", text, "--mig", "1g.10gb:2,2g.20gb:1", "--gpus=a100:2")
    assert opts["comment"] == text + " slurm-gpu:mig=1g.10gb:2,2g.20gb:1"
    assert token.decode(opts["comment"]) == token.JobRequest(mig=(("1g.10gb", 2), ("2g.20gb", 1)))
    assert opts["gpus"] == "a100:2" and "gres" not in opts  # the user's GPUs, as written


def test_the_option_replaces_a_token_already_in_the_comment(tmp_path: Path) -> None:
    opts = rendered(tmp_path, "--comment=run-7 slurm-gpu:mps=30", "--mps", "20", "--gpus=h100:2")
    assert opts["comment"] == "run-7 slurm-gpu:mps=20"


def test_mps_keeps_the_users_gpus(tmp_path: Path) -> None:
    opts = rendered(tmp_path, "--mps", "25", "--gres=gpu:h100:2")
    assert opts["comment"] == "slurm-gpu:mps=25" and opts["gres"] == "gpu:h100:2"


def test_mps_without_gpus_gets_one_gpu_the_policy_types(tmp_path: Path) -> None:
    opts = rendered(tmp_path, "--mps", "10")
    assert opts["comment"] == "slurm-gpu:mps=10"
    assert opts["gres"] == "gpu:h100:1"  # untyped gpu:1, typed by partition batch's default_gpu_type


def test_explain_shows_the_request(tmp_path: Path) -> None:
    r = gpusub(tmp_path, "--explain", "--mig", "3g.40gb:2")
    assert r.returncode == 0, r.stderr
    assert "MIG: layout 3g.40gb:2 on each a100 GPU of the job (node types a100x4: dynamic MIG)" in r.stdout
    r = gpusub(tmp_path, "--explain", "--json", "--mps", "25", "--gpus=h100:1")
    d = json.loads(r.stdout)
    assert d["accepted"] and any("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" in x for x in d["reasons"]), d


# ---- refusals ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "words"), [
    (["--mig", "3g.40gb:9"], ["--mig:", "count '9' is not 1-7", "accepted: profile[:count]"]),
    (["--mig", "bogus"], ["--mig:", "accepted:"]),
    (["--mig", "a100_3g.40gb"], ["--mig:", "without a GPU type", "accepted:"]),
    (["--mig", "1g.10gb,1g.10gb"], ["--mig:", "given twice", "accepted:"]),
    (["--mig="], ["--mig:", "accepted:"]),
    (["--mps", "0"], ["--mps:", "accepted: a whole percentage 1-100"]),
    (["--mps", "2.5"], ["--mps:", "accepted: a whole percentage 1-100"]),
    (["--mps", "1e2"], ["--mps:", "accepted: a whole percentage 1-100"]),
    (["--mig", "3g.40gb", "--mps", "25"], ["exclude each other"]),
    (["--mig", "3g.40gb", "--gpu-fraction", "0.25"], ["whole GPUs", "not with --gpu-fraction"]),
])
def test_bad_values_are_usage_errors(tmp_path: Path, args: list[str], words: list[str]) -> None:
    r = gpusub(tmp_path, "--dry-run", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpusub: error: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_without_a_policy_it_is_a_usage_error(tmp_path: Path) -> None:
    r = gpusub(tmp_path, "--dry-run", "--mps", "25", "--gpus=h100:1", policy=None)
    assert r.returncode == 2 and "need a site policy" in r.stderr, r.stderr


@pytest.mark.parametrize(("args", "why"), [
    (["--mps", "75", "--gpus=a100:1"], "MPS share 75% is outside the allowed 10-50%"),
    (["--mig", "3g.40gb:2", "--gpus=h100:1"], "node type h100x8 does not serve per-job MIG layouts (mig_mode none)"),
    (["--mig", "3g.40gb", "--gpus=a100:1", "--partition=mig"],
     "node type a100mig does not serve per-job MIG layouts (mig_mode static)"),
    (["--mig", "7g.80gb", "--gpus=a100:1"], "MIG profile 7g.80gb is not offered on a100 GPUs; allowed: 1g.10gb"),
    (["--mig", "3g.40gb:2,2g.20gb:2"], "MIG layout 3g.40gb:2,2g.20gb:2 needs 10 compute slices; a GPU has 7"),
    (["--mig", "3g.40gb:2,1g.10gb:2", "--gpus=a100:1"], "needs 8 compute slices; a GPU has 7"),
    (["--mig", "3g.40gb", "--partition=mig"], "no node type is in dynamic MIG mode in partition mig"),
])
def test_out_of_policy_is_a_rejection(tmp_path: Path, args: list[str], why: str) -> None:
    r = gpusub(tmp_path, "--dry-run", *args)
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpusub: error: rejected by policy: ") and why in lines[0], r.stderr


def test_a_hand_written_bad_token_is_refused_by_the_policy(tmp_path: Path) -> None:
    r = gpusub(tmp_path, "--dry-run", "--gpus=a100:1", "--comment=slurm-gpu:mig=3g.40gb:8")
    assert r.returncode == 1 and "bad slurm-gpu token in the job comment" in r.stderr, r.stderr


def test_a_plain_submission_imports_no_hook_module(tmp_path: Path) -> None:
    """Start-up: only --mig/--mps (or a token in --comment) load slurm_gpu.sharing."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    code = ("import sys, io; from slurm_gpu.submit import gpusub as g; "
            "from slurm_gpu.ports import SlurmClient; "
            f"g.prepare(['--policy', {MIG_POLICY!r}, '--gpus=h100:1', '--comment=plain run', {str(script)!r}], "
            "{'GPUSUB_SLURM_VERSION': '22.05.8', 'HOME': " + repr(str(tmp_path)) + "}, None); "
            "print(sorted(m for m in sys.modules if m.startswith('slurm_gpu.sharing')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


# ---- in the lab ------------------------------------------------------------------------------------

@pytest.mark.slurm
def test_the_token_reaches_the_jobs_comment(slurm_lab, tmp_path: Path) -> None:
    wd = slurm_lab.workdir("mps")
    r = slurm_lab.gpusub(["--parsable", "--hold", "--mps", "25", "--gpus=h100:1", "--comment=lab run",
                          "--wrap=true"], cwd=wd)
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip().split(";")[0]
    try:
        q = slurm_lab.run(["squeue", "-h", "-j", job, "-o", "%k"], as_root=True)  # %k: the whole comment
        assert q.returncode == 0, q.stderr
        comment = q.stdout.rstrip("\n")
        assert token.decode(comment) == token.JobRequest(mps_pct=25)
        assert comment == "lab run slurm-gpu:mps=25"
    finally:
        slurm_lab.cancel(job)


@pytest.mark.slurm
@pytest.mark.parametrize(("comment", "why"), [
    ("slurm-gpu:mps=75", "MPS share 75% is outside the allowed"),
    ("slurm-gpu:mig=3g.40gb:2", "does not serve per-job MIG layouts"),
    ("x slurm-gpu:mig=3g.40gb:9", "bad slurm-gpu token in the job comment"),
])
def test_job_submit_lua_refuses_a_bad_token_from_plain_sbatch(slurm_lab, comment: str, why: str) -> None:
    wd = slurm_lab.workdir("tok")
    r = slurm_lab.run(["sbatch", "--parsable", "--hold", "--gpus=h100:1", f"--comment={comment}", "--wrap=true"],
                      cwd=wd)
    if r.returncode == 0:
        slurm_lab.cancel(r.stdout.strip().split(";")[0])
    assert r.returncode != 0 and why in r.stderr, (r.stdout, r.stderr)


# ---- a private lab with the MIG policy -------------------------------------------------------------

# Without slurm-gpu's node hooks: this lab checks what Slurm schedules where (gres.conf slices, the token in
# the Comment, job_submit.lua); the hooks that serve a layout are tested in tests/node/test_node_lab.py. With
# them on, the --mig job would fail as it should on a node without an NVIDIA driver (no NVML state here).
PRIVATE = {"SLURM_GPU_LAB_DIR": "/tmp/slurm-gpu-lab-mig", "SLURM_GPU_LAB_PORT_BASE": "25817",
           "SLURM_GPU_LAB_NODE_HOOKS": "0"}


@pytest.mark.slurm
def test_private_mig_lab_serves_slices_and_layouts(slurm_lab) -> None:
    """examples/policies/mig/university-mig.yaml in a lab of its own (the shared one is untouched): a
    --gpu-fraction job lands on a static MIG slice of a100n2, a --mig job on a whole GPU of the dynamic
    a100n1 with the token in its Comment, and the lab's job_submit.lua refuses a layout in partition mig.
    The lab makes only /dev/nvidiaN, so the test makes the /dev/nvidia-caps devices the emitted gres.conf
    names (distinct character devices, as slurmd only stat()s them) and removes the ones it made."""
    import re
    import stat
    import time

    from slurm_gpu.emit.gres_conf import gres_lines
    from slurm_gpu.policy import load_policy
    from slurm_gpu.topology import load_topology_file

    policy = load_policy(MIG_POLICY)
    topos = {nt.name: load_topology_file(nt.topology) for nt in policy.node_types}
    made: list[str] = []
    made_dir = not os.path.isdir("/dev/nvidia-caps")
    env = dict(os.environ, **PRIVATE)
    cli = os.path.join(os.path.dirname(sys.executable), "slurm-gpu")
    try:
        os.makedirs("/dev/nvidia-caps", exist_ok=True)
        minors = {int(m) for line in gres_lines(policy, topos) for m in re.findall(r"nvidia-cap(\d+)", line)}
        for minor in sorted(minors):
            path = f"/dev/nvidia-caps/nvidia-cap{minor}"
            if not os.path.lexists(path):
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(240, minor))
                made.append(path)
        up = subprocess.run([cli, "lab", "up", "--policy", MIG_POLICY], env=env, capture_output=True, text=True,
                            timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        conf = "/tmp/slurm-gpu-lab-mig/etc/slurm.conf"
        lab_policy = Path("/tmp/slurm-gpu-lab-mig/policy").read_text(encoding="utf-8").strip()
        jobs = "/tmp/slurm-gpu-lab-mig/jobs"

        def as_user(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["runuser", "-u", "labuser", "--", "env", f"SLURM_CONF={conf}",
                                   f"GPUSUB_POLICY={lab_policy}", *argv], capture_output=True, text=True,
                                  timeout=60, cwd=jobs)

        frac = as_user(GPUSUB, "--parsable", "--gpu-fraction", "0.25", "-t", "5", "--wrap=true")
        mig = as_user(GPUSUB, "--parsable", "--mig", "3g.40gb:2", "-t", "5", "--wrap=true")
        bad = as_user("sbatch", "--parsable", "--hold", "--partition=mig", "--gpus=a100:1",
                      "--comment=slurm-gpu:mig=3g.40gb", "--wrap=true")
        assert frac.returncode == 0 and mig.returncode == 0, (frac.stderr, mig.stderr)
        assert bad.returncode != 0 and "node type a100mig does not serve per-job MIG layouts" in bad.stderr
        deadline = time.monotonic() + 60
        want = {frac.stdout.strip(): ("a100n2", "gpu:a100_2g.20gb:1", ""),
                mig.stdout.strip(): ("a100n1", "gpu:a100:1", "slurm-gpu:mig=3g.40gb:2")}
        got: dict[str, tuple[str, str, str]] = {}
        while time.monotonic() < deadline and len(got) < 2:
            for job in want:  # slurmctld keeps finished jobs for MinJobAge; sacct stores no comment
                # the one job reader (squeue's JSON): scontrol's job text prints user text raw (26.05: SubmitLine=)
                fields, allocs = show_job(conf, job)
                if fields.get("JobState") == "COMPLETED":
                    gres = ",".join(a.gres.split("(")[0] for a in allocs if a.gres) or (  # gpu:a100:1(IDX:0)
                        fields.get("TresPerNode") or "").replace("gres/", "").replace("gres:", "")  # else the request
                    got[job] = (fields.get("NodeList", ""), gres, fields.get("Comment") or "")
            time.sleep(1)
        assert got == want
        # slurm-gpu cluster --json counts the static slices in their own units (issue 13): one 2g.20gb slice
        # held by a job (the mig partition's DefCpuPerGPU=8 and DefMemPerGPU=60G of a100n2's 32 CPUs and
        # 500G), worked out by hand: 24 CPUs left fit 3 more slice jobs, so of 7 free 2g.20gb slices 3 can
        # start and 4 are stranded; of 4 free 3g.40gb slices 3 and 1; a100n2's GPUs are no whole a100s.
        hold = as_user(GPUSUB, "--parsable", "--gpu-fraction", "0.25", "-t", "5", "--wrap=sleep 120")
        assert hold.returncode == 0, hold.stderr
        held = hold.stdout.strip()
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if show_job(conf, held)[0].get("JobState") == "RUNNING":
                    break
                time.sleep(1)
            view = subprocess.run([cli, "cluster", "--json"], env=dict(env, SLURM_CONF=conf), capture_output=True,
                                  text=True, timeout=60)
            assert view.returncode == 0, view.stderr
            types = json.loads(view.stdout)["types"]
            two, three, whole = types["a100_2g.20gb"], types["a100_3g.40gb"], types["a100"]
            assert (two["unit"], two["total"], two["allocated"], two["free"], two["stranded"]) == ("mig", 8, 1, 7, 4)
            assert two["largest_startable"] == {"one_node": 3, "any_nodes": 3}
            assert two["fragmentation"]["7"] == 0.0 and two["fragmentation"]["8"] == 1.0  # 7 free on one node
            assert (three["total"], three["free"], three["stranded"], three["largest_startable"]["one_node"]) == (
                4, 4, 1, 3)
            assert (whole["total"], whole["free"]) == (4, 4)  # a100n1 (dynamic MIG: whole GPUs) only
        finally:
            subprocess.run(["scancel", held], env=dict(env, SLURM_CONF=conf), capture_output=True, timeout=20)
    finally:
        subprocess.run([cli, "lab", "down"], env=env, capture_output=True, text=True, timeout=120)
        for path in made:
            os.unlink(path)
        if made_dir:
            os.rmdir("/dev/nvidia-caps")
