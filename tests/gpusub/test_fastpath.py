# SPDX-License-Identifier: Apache-2.0
"""The replay of repeated submissions: what invalidates it, and that it quotes like shlex."""

from __future__ import annotations

import io
import os
import shlex

from hypothesis import given, strategies as st

from slurm_gpu import fastpath


@given(st.text())
def test_shell_quote_is_shlex_quote(text):
    assert fastpath.shell_quote(text) == shlex.quote(text)


def test_key_depends_on_argv_and_sbatch_environment():
    env = {"HOME": "/h", "SBATCH_PARTITION": "a", "TERM": "xterm"}
    base = fastpath.key_of(["job.sh"], env)
    assert fastpath.key_of(["job.sh"], dict(env, TERM="vt100")) == base  # unrelated variable
    assert fastpath.key_of(["job.sh"], dict(env, SBATCH_PARTITION="b")) != base
    assert fastpath.key_of(["job.sh"], dict(env, GPUSUB_POLICY="/p")) != base
    assert fastpath.key_of(["-p", "a", "job.sh"], env) != base


def make_record(tmp_path, script_text="#!/bin/sh\necho hi\n"):
    script = tmp_path / "job.sh"
    script.write_text(script_text)
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\n")
    return {
        "files": [fastpath.file_stamp(str(policy))], "script_path": str(script),
        "script_digest": fastpath._digest(script_text.encode()), "spool": str(tmp_path / "spool"),
        "name": "job.sh", "text": "#!/bin/bash\nexec " + fastpath.PAYLOAD_TOKEN + "\n",
        "options": ["--hold"], "sbatch": "/nonexistent/sbatch", "json": None, "warnings": [],
    }, script, policy


def test_changed_inputs_fall_through_before_anything_runs(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    record, script, policy = make_record(tmp_path)
    fastpath.store(env, ["job.sh"], record)
    out, err = io.StringIO(), io.StringIO()
    assert fastpath.try_submit(["other.sh"], env, out, err) is None  # no record for this key
    script.write_text("#!/bin/sh\necho changed\n")
    assert fastpath.try_submit(["job.sh"], env, out, err) is None  # script digest differs
    record, script, policy = make_record(tmp_path)
    fastpath.store(env, ["job.sh"], record)
    os.utime(policy, ns=(1, 1))
    assert fastpath.try_submit(["job.sh"], env, out, err) is None  # policy file changed
    assert not (tmp_path / "spool").exists() and out.getvalue() == ""


def test_code_files_include_templates_and_modules():
    names = {os.path.basename(p) for p in fastpath.code_files()}
    assert {"binding.py", "submit.py", "render.py", "batch.sh.j2"} <= names
