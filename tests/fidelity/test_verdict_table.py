# SPDX-License-Identifier: Apache-2.0
"""One verdict (issue 19): for every request shape of the corpus (tests/fidelity/scripts, each script with
its ``# fidelity-argv/-args/-env`` lines), of README.md's gpusub examples (parsed from the README's
code blocks, not copied) and of tests/fidelity/request-shapes.txt (shapes beyond the corpus),
``gpusub --explain --json`` must accept exactly what ``sbatch --test-only`` accepts, in the lab (as the lab
user, with the lab's compiled job_submit.lua, so plain sbatch meets the same policy).

The oracle, per shape:
- explain accepts: the job gpusub would submit, through ``sbatch --test-only`` (``gpusub --test-only``:
  the rendered script and options, exactly what would be submitted);
- explain refuses: what the policy alone would submit (``GPUSUB_NODES=off gpusub --test-only``: no node
  data, so a refusal for the nodes is not repeated) through ``sbatch --test-only``; where the policy
  itself refuses, or gpusub's parser (exit 2: what sbatch refuses), plain ``sbatch --test-only`` of the
  user's own command line (the lab's job_submit.lua applies the same policy); a command line with
  gpusub's own options that the policy refuses has no sbatch form and is reported as such (``policy``),
  agreeing by construction of the Lua mirror, which tests/job_submit/test_differential.py checks.

In a lab of plain Slurm (``lab up --no-job-submit``, ``make test-fidelity-plain``) nothing enforces the policy
at submission, so where the policy itself refuses there is no oracle: those rows are printed as ``n/a`` and
not counted (gpusub still says why before submission, which is the rule); every other row is judged as above.

The table is printed (``-s``); every row must agree. (``--hold`` is not used: on 22.05 it skips sbatch's
node-configuration check; ``--test-only`` is the oracle.)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import fidelity_harness as harness  # loaded by conftest.py
import pytest

pytestmark = pytest.mark.slurm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# gpusub's own modes, which the table replaces with --explain and --test-only
DROP = {"--explain", "--json", "--dry-run", "--wait", "--test-only"}


@dataclass(frozen=True)
class Shape:
    name: str
    argv: tuple[str, ...]  # options, before the script
    script: str  # a path to the script's text
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


def readme_shapes(path: str = os.path.join(ROOT, "README.md")) -> list[Shape]:
    """Every ``gpusub ...`` line in the README's code blocks, as a shape (its script: a one-line job)."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line.strip())
            if not line.startswith("gpusub ") or "[" in line:  # "[GPUSUB OPTIONS]": the synopsis
                continue
            words = shlex.split(line)[1:]
            argv = [w for w in words[:-1] if w not in DROP]
            out.append(Shape(f"README: {line}", tuple(argv), "", ()))
    return out


def corpus_shapes() -> list[Shape]:
    return [Shape(s.name, s.argv, s.path, s.args, s.env) for s in harness.load_corpus()]


SHAPES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "request-shapes.txt")


def listed_shapes(path: str = SHAPES_FILE) -> list[tuple[str | None, Shape]]:
    """tests/fidelity/request-shapes.txt: request shapes beyond the corpus, one line of options each, with the
    release a line is for (``@22.05 ...``; None: every release)."""
    out: list[tuple[str | None, Shape]] = []
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            ln = raw.strip()
            if not ln or ln.startswith("#"):
                continue
            release = None
            if ln.startswith("@"):
                release, _, ln = ln[1:].partition(" ")
            out.append((release, Shape(f"shape: {ln}", tuple(shlex.split(ln)), "", ())))
    return out


SHAPES = corpus_shapes() + readme_shapes() + [s for _release, s in listed_shapes()]


def shapes_for(version: tuple[int, ...]) -> list[Shape]:
    """The shapes judged on this Slurm: a listed shape marked for one release only there."""
    here = "{}.{:02d}".format(*version[:2])
    listed = {s.name: release for release, s in listed_shapes()}
    return [s for s in SHAPES if listed.get(s.name) in (None, here)]


def _run(lab, argv: list[str], cwd: str, env: dict[str, str]):
    return lab.run(argv, cwd=cwd, timeout_s=60, env_extra=env)


def _accepted_by_test_only(proc) -> bool:
    return proc.returncode == 0 and "to start at" in (proc.stdout + proc.stderr)


def verdict(lab, gpusub: str, shape: Shape, base: str, plugin: bool = True) -> dict[str, str]:
    work = tempfile.mkdtemp(prefix="s-", dir=base)
    script = os.path.join(work, "job.sh")
    if shape.script:
        shutil.copy(shape.script, script)
    else:
        with open(script, "w") as fh:
            fh.write("#!/bin/bash\ntrue\n")
    for p in (work, script):
        shutil.chown(p, lab.user)
    env = dict(shape.env)
    tail = ["job.sh", *shape.args]
    ex = _run(lab, [gpusub, "--explain", "--json", *shape.argv, *tail], work, env)
    try:
        accepted = ex.returncode == 0 and json.loads(ex.stdout)["accepted"]
        why = "" if accepted else (json.loads(ex.stdout).get("message") or "")
    except (ValueError, KeyError):
        accepted, why = False, (ex.stderr.strip().splitlines() or [""])[-1]
    if accepted:
        t = _run(lab, [gpusub, "--test-only", *shape.argv, *tail], work, env)
        oracle, how = _accepted_by_test_only(t), "gpusub's job"
        said = (t.stdout + t.stderr).strip().splitlines()
    else:
        t = _run(lab, [gpusub, "--test-only", *shape.argv, *tail], work, env | {"GPUSUB_NODES": "off"})
        said = (t.stdout + t.stderr).strip().splitlines()
        if t.returncode == 0 or (t.returncode == 1 and "rejected by policy" not in t.stderr):
            oracle, how = _accepted_by_test_only(t), "the policy's job"
        else:
            s = _run(lab, ["sbatch", "--test-only", *shape.argv, *tail], work, env)
            said = (s.stdout + s.stderr).strip().splitlines()
            if ex.returncode == 1 and "unrecognized option" in s.stderr:  # gpusub's own options, refused by policy
                oracle, how = False, "policy"
            elif not plugin and ex.returncode == 1 and _accepted_by_test_only(s):
                # the policy refuses, and plain Slurm without the plugin does not apply the policy
                return {"shape": shape.name, "explain": "refused", "test_only": "accepted",
                        "oracle": "none (no plugin)", "agree": "n/a", "why": why[:90],
                        "slurm": (said[-1] if said else "")[:90]}
            else:
                oracle, how = _accepted_by_test_only(s), "plain sbatch"
    return {"shape": shape.name, "explain": "accepted" if accepted else "refused",
            "test_only": "accepted" if oracle else "refused", "oracle": how,
            "agree": "yes" if accepted == oracle else "NO", "why": why[:90],
            "slurm": (said[-1] if said else "")[:90]}


@pytest.fixture(scope="module")
def table(slurm_lab, policy_plugin):
    from slurm_gpu.lab.demo import find_gpusub

    gpusub = find_gpusub()
    if gpusub is None:
        pytest.fail("gpusub is not installed in this environment")
    base = tempfile.mkdtemp(prefix="gpusub-verdict-", dir="/tmp")
    os.chmod(base, 0o755)
    shutil.chown(base, slurm_lab.user)
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda s: verdict(slurm_lab, gpusub, s, base, policy_plugin),
                             shapes_for(slurm_lab.version)))
    shutil.rmtree(base, ignore_errors=True)
    return rows


def test_shapes_are_parsed_from_corpus_and_readme() -> None:
    readme = [s for s in SHAPES if s.name.startswith("README: ")]
    assert len(readme) >= 5 and any("--gpu-fraction" in s.argv for s in readme)
    listed = [s for s in SHAPES if s.name.startswith("shape: ")]
    assert len(SHAPES) - len(readme) - len(listed) == len(harness.load_corpus()) >= 90
    assert len(listed) >= 50 and any("-B" in s.argv for s in listed)
    only_2205 = [s for release, s in listed_shapes() if release == "22.05"]
    assert len(only_2205) == 2 and len(shapes_for((22, 5, 8))) == len(SHAPES)
    assert [s for s in SHAPES if s not in shapes_for((24, 11, 5))] == only_2205


def test_explain_agrees_with_test_only(table) -> None:
    width = max(len(r["shape"]) for r in table)
    lines = [f"{'shape':<{width}}  explain   test-only oracle          agree  reason / Slurm"]
    for r in table:
        lines.append(f"{r['shape']:<{width}}  {r['explain']:<9} {r['test_only']:<9} {r['oracle']:<16} "
                     f"{r['agree']:<5}  {r['why'] or r['slurm']}")
    agree = sum(r["agree"] == "yes" for r in table)
    judged = [r for r in table if r["agree"] != "n/a"]
    lines.append(f"{agree} of {len(judged)} judged shapes agree ({len(table) - len(judged)} without an oracle "
                 f"here); accepted {sum(r['explain'] == 'accepted' for r in table)}, "
                 f"refused {sum(r['explain'] == 'refused' for r in table)}")
    print("\n" + "\n".join(lines))
    assert len(judged) >= len(table) // 2, "most shapes must have an oracle"
    assert agree == len(judged), "\n".join(line for line in lines if "  NO " in line)
