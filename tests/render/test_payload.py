# SPDX-License-Identifier: Apache-2.0
"""The job carries its own payload: the user's script travels inside the rendered one byte for byte and
runs once, with its arguments, stdin, exit code and batch-shell signals as under sbatch. The rendered
scripts really run in bash here (the lab tests run them under Slurm)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from slurm_gpu.render.script import Payload, RenderError, forwarded_signals, payload_of, render_script
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.slurm.sbatch.parse import parse_submission

S2205 = spelling_for((22, 5, 8))


def render(argv, script_bytes: bytes):
    text = script_bytes.decode("utf-8", "surrogateescape")
    sub = parse_submission(argv, {}, text)
    return render_script(sub, None, None, S2205, payload_of(sub, text)).text


def run_rendered(tmp_path, text: str, stdin: bytes = b"", env_extra=None):
    script = tmp_path / "job.sh"
    script.write_bytes(text.encode("utf-8", "surrogateescape"))
    env = dict(os.environ, TMPDIR=str(tmp_path), OUT=str(tmp_path / "copy"), **(env_extra or {}))
    return subprocess.run(["bash", str(script)], input=stdin, capture_output=True, env=env, timeout=30)


HOSTILE = (b"#!/bin/sh\n"
           b"cp \"$0\" \"$OUT\"\n"
           b"printf '%s|' \"$@\" > \"$OUT.args\"\n"
           b"cat > \"$OUT.stdin\"\n"
           b"exit 7\n"
           b"# a lone \r carriage return, bytes that are not UTF-8: \xff\xfe\xc3\n"
           b"EOF\n'EOF'\nGPUSUB_PAYLOAD_0123abcd\n$(touch \"$OUT.pwned\") `touch \"$OUT.pwned\"`\n"
           b"#SBATCH --partition=never-read-here\n"
           b"no newline at the end")


@pytest.mark.parametrize("tail", [b"", b"\n", b"\n\n", b"\r"],
                         ids=["no-final-newline", "newline", "blank-line", "ends-in-carriage-return"])
def test_payload_is_byte_for_byte_and_runs_once(tmp_path, tail):
    original = HOSTILE + tail
    text = render(["job.sh", "a b", "", "$HOME", "-x", "cr\r\nlf"], original)
    assert "\r\n" not in text  # sbatch refuses a script with a DOS line break
    proc = run_rendered(tmp_path, text, stdin=b"input\x00bytes")
    assert proc.returncode == 7, proc.stderr
    assert (tmp_path / "copy").read_bytes() == original
    assert (tmp_path / "copy.args").read_bytes() == b"a b||$HOME|-x|cr\r\nlf|"
    assert (tmp_path / "copy.stdin").read_bytes() == b"input\x00bytes"
    assert not (tmp_path / "copy.pwned").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("gpusub.")] == []  # private dir removed


def test_the_payload_keeps_its_own_interpreter(tmp_path):
    original = b"#!/usr/bin/env python3\nimport os, sys\nopen(os.environ['OUT'], 'w').write(sys.argv[1])\n"
    proc = run_rendered(tmp_path, render(["t.py", "py"], original))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "copy").read_text() == "py"


def test_wrap_becomes_sbatch_s_own_script(tmp_path):
    sub = parse_submission(["--wrap=echo wrapped > \"$OUT\""], {}, None)
    text = render_script(sub, None, None, S2205, payload_of(sub, None)).text
    proc = run_rendered(tmp_path, text)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "copy").read_text() == "wrapped\n"


def test_nul_bytes_are_refused():
    sub = parse_submission(["x.sh"], {}, "#!/bin/sh\n")
    with pytest.raises(RenderError, match="NUL"):
        render_script(sub, None, None, S2205, Payload("#!/bin/sh\n\x00\n", "x.sh"))


def test_batch_shell_signal_reaches_the_script(tmp_path):
    original = (b"#!/bin/bash\ntrap 'echo got-usr1 > \"$OUT\"; exit 0' USR1\n"
                b"echo ready > \"$OUT.ready\"\nwhile :; do sleep 0.1; done\n")
    text = render(["--signal=B:USR1@60", "job.sh"], original)
    script = tmp_path / "job.sh"
    script.write_bytes(text.encode())
    env = dict(os.environ, TMPDIR=str(tmp_path), OUT=str(tmp_path / "copy"))
    proc = subprocess.Popen(["bash", str(script)], env=env)
    try:
        for _ in range(100):
            if (tmp_path / "copy.ready").exists():
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGUSR1)  # Slurm's B: sends it to the batch shell alone
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
    assert (tmp_path / "copy").read_text() == "got-usr1\n"


def test_forwarded_signals_are_the_batch_shell_ones():
    assert forwarded_signals([("signal", "B:USR1@120")]) == ["USR1"]
    assert forwarded_signals([("signal", "RB:SIGUSR2@60")]) == ["USR2"]
    assert forwarded_signals([("signal", "B:10")]) == ["10"]
    assert forwarded_signals([("signal", "USR1@60")]) == []  # steps only: Slurm signals them itself
    assert forwarded_signals([("signal", "B:KILL")]) == []
    assert forwarded_signals([("signal", "B:USR1;rm -rf /")]) == []


def test_payload_name_is_safe():
    assert payload_of(parse_submission(["../x y;rm.sh"], {}, "#!/bin/sh\n"), "#!/bin/sh\n").name == "x_y_rm.sh"
    assert Payload("x", "n").name == "n"
