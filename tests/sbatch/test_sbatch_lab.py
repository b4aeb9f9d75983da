# SPDX-License-Identifier: Apache-2.0
"""Ground truth from the real sbatch: every case of tests/sbatch/cases.py is submitted twice with
``--hold``, once as the user wrote it (command line + SBATCH_* environment + #SBATCH header) and once as
``sbatch <to_argv(parsed options)> <the script without its directives>`` with no SBATCH_* variables.
Slurm's own record of both jobs (the lab helper's job reader: squeue's JSON in scontrol's field names,
docs/records.md) must agree field by field."""

import importlib.util
import os
import re
import shlex
import sys

import pytest

from slurm_gpu.slurm.sbatch.parse import parse_submission, to_argv

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm_alone")]  # Slurm itself

_spec = importlib.util.spec_from_file_location("sbatch_cases", os.path.join(os.path.dirname(__file__), "cases.py"))
cases = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("sbatch_cases", cases)
_spec.loader.exec_module(cases)
CASES = cases.CASES

# Fields that differ between any two submissions (ids, times, the submit line, the script path).
VOLATILE = {"JobId", "ArrayJobId", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime",
            "Command", "SubmitLine", "LastSchedEval", "RunTime", "SuspendTime", "SecsPreSuspend",
            "PreemptEligibleTime", "PreemptTime", "Deadline", "JobId_raw", "AllocNode:Sid"}


@pytest.fixture(scope="module")
def lab(request):
    try:
        return request.getfixturevalue("slurm_lab")
    except pytest.FixtureLookupError:
        pytest.skip("no slurm_lab fixture (tests/conftest.py from the lab helper) to run sbatch against")


def show(lab, job_id: int) -> list[dict[str, str]]:
    records = []
    for fields in sorted(lab.job_records(job_id), key=lambda f: (f.get("HetJobOffset", ""), f.get("ArrayTaskId", ""))):
        for key in ("StdOut", "StdErr", "StdIn"):  # default file names carry the job id
            if key in fields:
                head, _, name = fields[key].rpartition("/")
                fields[key] = head + "/" + re.sub(rf"(?<![0-9]){job_id}(?![0-9])", "<ID>", name)
        records.append({k: v for k, v in fields.items() if k not in VOLATILE})
    return records


def submit(lab, argv, cwd, env) -> tuple[int | None, str]:
    r = lab.run(["sbatch", "--parsable", "--hold", *argv], cwd=cwd, env_extra=env)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return int(r.stdout.strip().split(";")[0]), ""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_same_job_as_sbatch(lab, case):
    _skip_if_other_release(lab, case)
    work = lab.workdir("sbatch-compat")
    jobs = []
    try:
        dep = ""
        if case.needs_job:
            dep_id, err = submit(lab, ["--wrap=true"], work, {})
            assert dep_id, err
            jobs.append(dep_id)
            dep = str(dep_id)
        argv = [a.replace("{dep}", dep) for a in case.argv]
        header = case.header.replace("{dep}", dep)
        body = "srun hostname\n"
        for sub_dir, text in (("plain", "#!/bin/bash\n" + header + body), ("ours", "#!/bin/bash\n" + body)):
            os.makedirs(os.path.join(work, sub_dir))
            with open(os.path.join(work, sub_dir, "job.sh"), "w") as fh:
                fh.write(text)

        plain_id, plain_err = submit(lab, [*argv, "plain/job.sh", *case.args], work, case.env)
        sub = parse_submission([*argv, "job.sh", *case.args], case.env, "#!/bin/bash\n" + header + body,
                               version=lab.version)
        ours_id, ours_err = submit(lab, [*to_argv(sub.options), "ours/job.sh", *sub.script_args], work, {})
        jobs += [j for j in (plain_id, ours_id) if j]
        assert plain_id is not None, f"the case itself is refused by sbatch: {plain_err}"
        assert ours_id is not None, f"sbatch refused the parsed options {to_argv(sub.options)}: {ours_err}"
        ours, plain = show(lab, ours_id), show(lab, plain_id)
        assert len(ours) == len(plain)
        for got, want in zip(ours, plain, strict=True):
            diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
            assert not diff, f"fields that differ (ours, sbatch): {diff}"
    finally:
        if jobs:
            lab.cancel(*jobs)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rendered_script_gives_the_same_job(lab, case):
    """The rendered batch script (its #SBATCH lines + sbatch_argv) makes the same job as plain sbatch."""
    from slurm_gpu.render.script import Payload, render_script
    from slurm_gpu.slurm.release import spelling_for

    if case.needs_job:
        pytest.skip("dependency cases are covered by test_same_job_as_sbatch")
    _skip_if_other_release(lab, case)
    work = lab.workdir("render-compat")
    jobs = []
    try:
        body = "srun hostname\n"
        script = "#!/bin/bash\n" + case.header + body
        sub = parse_submission([*case.argv, "job.sh", *case.args], case.env, script, version=lab.version)
        rendered = render_script(sub, None, None, spelling_for(lab.version), Payload(script, "job.sh"))
        for sub_dir, text in (("plain", script), ("ours", rendered.text)):
            os.makedirs(os.path.join(work, sub_dir))
            with open(os.path.join(work, sub_dir, "job.sh"), "w") as fh:
                fh.write(text)
        plain_id, plain_err = submit(lab, [*case.argv, "plain/job.sh", *case.args], work, case.env)
        ours_id, ours_err = submit(lab, [*rendered.sbatch_argv, "ours/job.sh"], work, {})
        jobs += [j for j in (plain_id, ours_id) if j]
        assert plain_id is not None, plain_err
        assert ours_id is not None, ours_err
        ours, plain = show(lab, ours_id), show(lab, plain_id)
        for got, want in zip(ours, plain, strict=True):
            diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
            assert not diff, f"fields that differ (rendered, sbatch): {diff}"
    finally:
        if jobs:
            lab.cancel(*jobs)


HOSTILE = ["it's", 'say "hi"', "$(touch /tmp/pwned)", "`id`", "a;b", "x # y", "back\\slash", "tab\there",
           "-J", "--hold", "日本語 ✓", "a'b\"c$d`e\\f#g;h", "  lead and trail  ", "%j-%x", "=="]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_directive_values_reach_slurm_intact(lab, value):
    """Job name and comment survive sbatch's #SBATCH lexer exactly (scontrol shows what the user gave)."""
    from slurm_gpu.render.script import Payload, render_script
    from slurm_gpu.slurm.release import spelling_for

    work = lab.workdir("render-hostile")
    sub = parse_submission(["-J", value, "--comment", value, "job.sh"], {}, None)
    rendered = render_script(sub, None, None, spelling_for(lab.version), Payload("#!/bin/bash\ntrue\n", "job.sh"))
    path = os.path.join(work, "job.sh")
    with open(path, "w") as fh:
        fh.write(rendered.text)
    job_id, err = submit(lab, [*rendered.sbatch_argv, path], work, {})
    assert job_id, err
    try:
        out = lab.run(["squeue", "-h", "-j", str(job_id), "-o", "%j"], as_root=True, check=True).stdout
        comment = lab.run(["squeue", "-h", "-j", str(job_id), "-o", "%k"], as_root=True, check=True).stdout
        assert out.rstrip("\n") == value
        assert comment.rstrip("\n") == value
    finally:
        lab.cancel(job_id)


@pytest.mark.parametrize("launch", ["batch", "per-gpu"])
def test_payload_gets_the_exact_argv_in_a_real_job(lab, launch):
    """A rendered job runs in Slurm; its payload (the user's unchanged script, carried inside the job)
    writes its argv."""
    from slurm_gpu.placement.plan import BindingPlan
    from slurm_gpu.render.script import Payload, render_script
    from slurm_gpu.slurm.release import spelling_for

    work = lab.workdir("render-run")
    args = ["a b", "$(touch pwned)", "`id`", "it's", 'q"', "-n", "", "日本", "x;y", "\\", "\n"]
    payload = Payload('#!/bin/bash\nprintf "%s\\0" "$@" > ' + shlex.quote(os.path.join(work, "argv.out")) + "\n",
                      "payload")
    sub = parse_submission(["-J", "argv-check", "-t", "2", "-o", os.path.join(work, "slurm.out"), "job.sh", *args],
                           {}, None)
    plan = BindingPlan(sbatch_options=("--ntasks=1",), srun_options=("--cpu-bind=cores",), env=(("X", "1"),),
                       tasks=1, cpus_per_task=1, gpus_per_task=None, isolation="shared", launch=launch,
                       explanation=())
    rendered = render_script(sub, None, plan, spelling_for(lab.version), payload)
    script = os.path.join(work, "job.sh")
    with open(script, "w") as fh:
        fh.write(rendered.text)
    job_id, err = submit(lab, [*rendered.sbatch_argv, script], work, {})
    assert job_id, err
    lab.run(["scontrol", "release", str(job_id)], as_root=True, check=True)
    assert lab.wait(job_id, timeout_s=90) == "COMPLETED"
    with open(os.path.join(work, "argv.out"), "rb") as fh:
        assert fh.read() == b"".join(a.encode() + b"\0" for a in args)
    assert not os.path.exists(os.path.join(work, "pwned"))


REFUSED = {
    "escaped-space-22.05": ("#SBATCH --job-name=a\\ b\n", []),  # 22.05-23.11: 'b' is a stray word
    "exclusive-and-oversubscribe-24.11": ("#SBATCH --exclusive\n", ["--oversubscribe"]),
    "unmatched-quote": ('#SBATCH --job-name="abc\n', []),
    "stray-word": ("#SBATCH nonsense\n", []),
    "bad-time": ("#SBATCH --time=soon\n", []),
    "ambiguous-prefix": ("#SBATCH --ti=5\n", []),
    "mem-conflict": ("#SBATCH --mem=4G\n", ["--mem-per-cpu=1G"]),
    "no-value": ("", ["--time"]),
    "flag-with-value": ("", ["--hold=yes"]),
    "bad-short": ("", ["-Z"]),
}


# (since, before): the releases whose sbatch refuses the case; the others accept it
REFUSED_IN = {
    "escaped-space-22.05": ((0, 0), (24, 5)),  # from 24.05 "\\ " keeps the space inside the argument
    "exclusive-and-oversubscribe-24.11": ((24, 11), None),  # before: one field, the last one wins
}


def _skip_if_other_release(lab, case) -> None:
    if case.before and tuple(lab.version[:2]) >= case.before:
        pytest.skip(f"sbatch before {case.before[0]}.{case.before[1]:02d} only: this lab runs "
                    f"{lab.version[0]}.{lab.version[1]:02d}, whose sbatch refuses case {case.id}")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_by_both(lab, name):
    """What sbatch refuses, the parser refuses too (with our own one-line message)."""
    from slurm_gpu.slurm.sbatch.parse import OptionError

    since, before = REFUSED_IN.get(name, ((0, 0), None))
    version = tuple(lab.version[:2])
    refused = since <= version and not (before and version >= before)
    header, argv = REFUSED[name]
    work = lab.workdir("refused")
    script = "#!/bin/bash\n" + header + "srun hostname\n"
    with open(os.path.join(work, "job.sh"), "w") as fh:
        fh.write(script)
    job_id, err = submit(lab, [*argv, "job.sh"], work, {})
    if job_id:
        lab.cancel(job_id)
    if not refused:  # a release whose sbatch takes the case: so must the parser
        assert job_id is not None, f"sbatch refused case {name}: {err}"
        parse_submission([*argv, "job.sh"], {}, script, version=version)
        return
    assert job_id is None, f"sbatch accepted case {name}"
    with pytest.raises(OptionError):
        parse_submission([*argv, "job.sh"], {}, script, version=lab.version)


def test_table_matches_the_real_sbatch(lab):
    """Every option of the table that exists in the lab's release is known to the real sbatch with the
    argument kind the table gives it, and every short letter too (getopt's own messages tell)."""
    import subprocess

    from slurm_gpu.slurm.sbatch.table import SBATCH_OPTIONS

    version = tuple(lab.version[:2])
    work = lab.workdir("table")
    with open(os.path.join(work, "job.sh"), "w") as fh:
        fh.write("#!/bin/bash\ntrue\n")
    env = {"PATH": os.environ["PATH"], "SLURM_CONF": lab.slurm_conf}

    def stderr(*argv: str) -> str:
        r = subprocess.run(["sbatch", "--test-only", *argv], cwd=work, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=20)
        return r.stderr

    assert "unrecognized option" in stderr("--no-such-option", "job.sh")  # the check itself can fail
    problems = []
    for opt in SBATCH_OPTIONS:
        if not opt.exists_in(version) or opt.name in ("help", "usage", "version", "wrap", "wait"):
            continue
        kind = opt.arg_in(version)
        alone = stderr(f"--{opt.name}")  # last word: a required value is missing
        with_value = stderr(f"--{opt.name}=x", "job.sh")
        if "unrecognized option" in alone + with_value:
            problems.append(f"--{opt.name}: unknown to sbatch")
        if ("requires an argument" in alone) != (kind == "required"):
            problems.append(f"--{opt.name}: table says {kind}, sbatch: {alone.strip()[:80]}")
        if ("allow an argument" in with_value) != (kind == "none"):
            problems.append(f"--{opt.name}=x: table says {kind}, sbatch: {with_value.strip()[:80]}")
        if opt.short:
            short = stderr(f"-{opt.short}")
            if "invalid option" in short or ("requires an argument" in short) != (kind == "required"):
                problems.append(f"-{opt.short}: table says {kind}, sbatch: {short.strip()[:80]}")
    assert not problems, problems
