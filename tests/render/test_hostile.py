# SPDX-License-Identifier: Apache-2.0
"""Hostile strings through the renderer (hypothesis: 10,000 cases when CI=true, 300 otherwise).

Job names, comments, partitions, script arguments, payload paths and environment values are built
from shell and sbatch metacharacters (quotes, $(), backticks, newlines, ;, #, \\, unicode, a leading -)
plus canary commands. Every rendered script must pass ``bash -n``; sbatch's #SBATCH lexer must read
back exactly the options we meant; running the script (fake srun, a payload that writes its argv
NUL-separated) must hand the payload exactly the user's argv and environment value; no canary may run.
Python-side checks run per case; the bash runs are batched (one driver per CPU) to stay fast.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from slurm_gpu.placement.plan import BindingPlan
from slurm_gpu.render.script import CLIENT_OPTIONS, Payload, effective_options, render_script
from slurm_gpu.request import Decision
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.slurm.sbatch.parse import parse_submission

# 10,000 in CI (the acceptance figure), a few hundred in a local run; SLURM_GPU_HOSTILE_EXAMPLES overrides.
EXAMPLES = int(os.environ.get("SLURM_GPU_HOSTILE_EXAMPLES") or (10000 if os.environ.get("CI") == "true" else 300))
CANARY = os.path.join(tempfile.gettempdir(), f"slurm-gpu-canary-{os.getpid()}")
FRAGMENTS = [
    f"$(touch {CANARY})", f"`touch {CANARY}`", f"; touch {CANARY};", f"\ntouch {CANARY}\n", f"' ; touch {CANARY} ; '",
    f'" ; touch {CANARY} ; "', f"${{IFS}}touch${{IFS}}{CANARY}", f"| touch {CANARY}", f"&& touch {CANARY}",
    "\n#SBATCH --partition=evil\n", "#SBATCH --qos=evil", "\\", "\\\n", "'", '"', "$", "$HOME", "${PATH}", "!",
    "*", "?", "~", "#", " ", "\t", "\r", "-", "--", "-J", "--wrap=evil", "%j", "=", ":", "é", "日本", "\u2028",
    "🙂", "\x1b[31m", "\x07", "{a,b}", "<(x)", ">/dev/null", "2>&1", "&", "\\'", '\\"', "$'\\n'",
]
hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(st.characters(blacklist_characters="\0",
                                                                              blacklist_categories=("Cs",)),
                                                                  max_size=6)), max_size=5).map("".join)
filename = hostile.map(lambda s: s.replace("/", "_")).filter(
    lambda s: s not in ("", ".", "..") and len(s.encode()) < 200)
SPELLINGS = [spelling_for(v) for v in ((22, 5, 8), (23, 2, 7), (23, 11, 10), (24, 11, 5), (25, 11, 0))]

PAYLOAD_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    const char *out = getenv("OUT"); char path[4096]; FILE *f;
    if (!out) return 3;
    f = fopen(out, "wb"); if (!f) return 4;
    for (int i = 1; i < argc; i++) fwrite(argv[i], 1, strlen(argv[i]) + 1, f);
    fclose(f);
    snprintf(path, sizeof path, "%s.env", out);
    f = fopen(path, "wb"); if (!f) return 5;
    const char *v = getenv("HOSTILE"); if (v) fwrite(v, 1, strlen(v), f);
    fclose(f); return 0;
}
"""
SRUN_C = r"""
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0) i++;
    execvp(argv[i], argv + i); return 127;
}
"""
# (a loop: printf with a NUL format and no arguments at all would still write one NUL)
PAYLOAD_SH = ('#!/bin/bash\nfor a in "$@"; do printf "%s\\0" "$a"; done > "$OUT"; printf "%s" "$HOSTILE" > "$OUT.env"\n'
              'cp "$0" "$OUT.self"\nexit 0\n')
SRUN_SH = '#!/bin/bash\nwhile [ $# -gt 0 ] && [[ $1 == --* ]]; do shift; done\nexec "$@"\n'


def _tool(directory: str, name: str, c_source: str, sh_source: str) -> str:
    path = os.path.join(directory, name)
    if shutil.which("cc"):
        src = path + ".c"
        with open(src, "w") as fh:
            fh.write(c_source)
        if subprocess.run(["cc", "-O1", "-o", path, src], capture_output=True).returncode == 0:
            return path
    with open(path, "w") as fh:
        fh.write(sh_source)
    os.chmod(path, 0o755)
    return path


def _plan(launch: str, isolation: str, env_value: str, prelude: bool) -> BindingPlan:
    return BindingPlan(
        sbatch_options=("--cpus-per-gpu=4", "--gres-flags=enforce-binding"),
        srun_options=("--cpu-bind=cores", "--gpu-bind=single:1", "--mem-bind=local"),
        env=(("OMP_NUM_THREADS", "4"), ("HOSTILE", env_value)),
        tasks=2, cpus_per_task=4, gpus_per_task=1, isolation=isolation, launch=launch, explanation=(),
        task_prelude='export LOCAL_RANK="${SLURM_LOCALID:-0}"' if prelude else "",
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed to check rendered scripts")
def test_hostile_strings_never_inject(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _tool(str(bindir), "srun", SRUN_C, SRUN_SH)
    cases: list[tuple[str, tuple[str, ...], str, str]] = []  # (case dir, argv, env value, payload text)

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    # (partition names come from the validated policy, not from the user)
    @given(name=hostile, comment=hostile, partition=st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,19}\Z"),
           args=st.lists(hostile, max_size=4),
           payload_name=filename, env_value=hostile, launch=st.sampled_from(["batch", "per-gpu"]),
           tail=hostile,
           isolation=st.sampled_from(["shared", "strict"]), prelude=st.booleans(),
           spelling=st.sampled_from(SPELLINGS))
    def one(name, comment, partition, args, payload_name, env_value, launch, isolation, prelude, spelling, tail):
        sub = parse_submission(["-J", name, "--comment", comment, "job.sh", *args], {}, None)
        assert sub.script_args == tuple(args) and sub.get("job-name") == name
        decision = Decision(accepted=True, job_class="x\ny", partition=partition, qos="normal")
        plan = _plan(launch, isolation, env_value, prelude)
        case_dir = tempfile.mkdtemp(dir=tmp_path, prefix="c")
        text = PAYLOAD_SH + tail  # hostile bytes after `exit 0`: carried, never run
        assume("\r\n" not in text)  # a DOS line break: sbatch (and gpusub's parse) refuse the script first
        rendered = render_script(sub, decision, plan, spelling, Payload(text, payload_name))
        # sbatch reads back exactly the directive options we meant, and the rest is on its command line
        read_back = parse_submission(["x"], {}, rendered.text)
        meant = [(k, v) for k, v in effective_options(sub, decision, plan)
                 if k not in CLIENT_OPTIONS and not (v and ("\n" in v or "\r" in v))]
        assert list(read_back.options) == meant
        assert {a.split("=", 1)[0] for a in rendered.sbatch_argv} <= {"--job-name", "--comment", "--partition"}
        with open(os.path.join(case_dir, "job.sh"), "w", encoding="utf-8") as fh:
            fh.write(rendered.text)
        cases.append((case_dir, tuple(args), env_value, text))

    one()
    assert len(cases) >= EXAMPLES * 0.99  # filters may drop a few

    # bash: syntax of every script, then run it; cases split over one driver per CPU
    workers = max(1, min(os.cpu_count() or 1, 8))
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    procs = []
    for w in range(workers):
        listing = tmp_path / f"cases-{w}"
        listing.write_bytes(b"".join(c[0].encode() + b"\0" for c in cases[w::workers]))
        driver = (
            'while IFS= read -r -d "" d; do\n'
            '  bash -n "$d/job.sh" || echo "SYNTAX $d"\n'
            '  (cd "$d" && OUT="$d/argv.out" TMPDIR="$d" timeout 20 bash "$d/job.sh") || echo "RUN $d"\n'
            f'done < {listing}\n'
        )
        procs.append(subprocess.Popen(["bash", "-c", driver], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    problems = "".join(p.communicate(timeout=600)[0] for p in procs)
    assert "SYNTAX" not in problems and "RUN" not in problems, problems[:2000]
    assert not os.path.exists(CANARY), "a hostile string ran a command"
    for case_dir, args, env_value, text in cases:
        with open(os.path.join(case_dir, "argv.out"), "rb") as fh:
            got = fh.read()
        want = b"".join(a.encode("utf-8") + b"\0" for a in args)
        assert got == want, (case_dir, got, want)
        with open(os.path.join(case_dir, "argv.out.env"), "rb") as fh:
            assert fh.read() == env_value.encode("utf-8"), case_dir
        with open(os.path.join(case_dir, "argv.out.self"), "rb") as fh:
            assert fh.read() == text.encode("utf-8"), case_dir
