# SPDX-License-Identifier: Apache-2.0
"""The rendered script's side of the checkpoint protocol (slurm_gpu/render/shell.py: CHECKPOINT and the launch,
slurm_gpu/render/checkpoint.py): when it is on, the sbatch options it sets, the script's structure and
syntax, the same text every time with nothing cached, a golden file, and the wrapper run
locally (no Slurm) with a payload that gets the stop signal. The lab tests (test_lab_requeue.py) run it under Slurm."""

from __future__ import annotations

import difflib
import os
import re
import signal
import subprocess
import time

import pytest

from slurm_gpu.errors import UsageError
from slurm_gpu.render.checkpoint import CheckpointSettings, protocol_options, settings_for, user_lead
from slurm_gpu.render.script import Payload, render_script
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.slurm.sbatch.parse import parse_submission
from slurm_gpu.slurm.sbatch.table import GpusubOptions
from slurm_gpu.submit.gpusub import checkpoint_settings, checkpoint_warnings, prepare, render_prepared
from tests.render.test_golden import GOLDEN_DIR, POLICY, UPDATE, NoSlurm

S2205 = spelling_for((22, 5, 8))
FIXED = {"python": "/opt/slurm gpu/bin/python", "library": "/opt/it's/lib"}  # quoting: a space and a quote


def _prep(argv, tmp_path, script="#!/bin/bash\nsrun python train.py\n"):
    (tmp_path / "train.sh").write_text(script)
    env = {"GPUSUB_SLURM_VERSION": "22.05.8", "GPUSUB_POLICY": POLICY, "XDG_CACHE_HOME": str(tmp_path),
           "HOME": str(tmp_path)}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return prepare([*argv, "train.sh"], env, NoSlurm())
    finally:
        os.chdir(cwd)


def _render(argv, tmp_path, **fixed):
    prep = _prep(argv, tmp_path)
    settings = checkpoint_settings(prep)
    if settings is not None:
        settings = settings._replace(**(FIXED | fixed))
    return prep, settings, render_prepared(prep, None, settings)


def sbatch_lines(text):
    return [line for line in text.splitlines() if line.startswith("#SBATCH ")]


def test_off_by_default_and_the_ckpt_options_need_it(tmp_path):
    prep = _prep(["-G", "h100:1", "-t", "10"], tmp_path)
    assert checkpoint_settings(prep) is None
    text = render_prepared(prep).text
    assert "gpusub_ckpt" not in text and "setsid" not in text and "--open-mode" not in text
    for opt in (["--ckpt-signal", "USR1"], ["--ckpt-grace=30s"]):
        with pytest.raises(UsageError, match="needs --checkpoint"):
            checkpoint_settings(_prep([*opt, "-G", "h100:1", "-t", "10"], tmp_path))


def test_checkpoint_flag_sets_signal_requeue_and_append(tmp_path):
    prep, settings, rendered = _render(["--checkpoint", "-G", "h100:1", "-t", "10"], tmp_path)
    assert settings == CheckpointSettings(signal="USR2", grace_s=60, lead_s=120, max_requeues=3, keep=3,
                                          why="gpusub --checkpoint", **FIXED)
    lines = sbatch_lines(rendered.text)
    assert "#SBATCH --signal=B:USR2@120" in lines and "#SBATCH --requeue" in lines
    assert "#SBATCH --open-mode=append" in lines
    assert "export GPUSUB_CKPT_SIGNAL=USR2 GPUSUB_CKPT_KEEP=3" in rendered.text
    assert "gpusub_ckpt_python='/opt/slurm gpu/bin/python'" in rendered.text
    assert "gpusub_ckpt_library='/opt/it'\"'\"'s/lib'" in rendered.text
    assert '(trap - INT QUIT; exec setsid "$gpusub_payload" "$@") <&0 &' in rendered.text
    # the script stays the payload's parent: no exec of its own (the payload's subshell execs)
    assert not re.search(r"(?m)^\s*exec ", rendered.text.split("chmod 700")[1])


def test_a_checkpoint_required_class_turns_it_on_and_one_signal_wins(tmp_path):
    """The class spot adds --signal=B:<ckpt_signal>@<lead> in the classifier; the job has one --signal."""
    prep, settings, rendered = _render(["--class", "spot", "-G", "h100:1", "-t", "10"], tmp_path)
    assert "--signal=B:USR2@120" in prep.decision.added_options  # the policy's defaults.ckpt_signal
    assert settings is not None and settings.why == "class spot: checkpoint_required"
    signals = [line for line in sbatch_lines(rendered.text) if line.startswith("#SBATCH --signal")]
    assert signals == ["#SBATCH --signal=B:USR2@120"]
    assert "trap gpusub_ckpt_on_stop USR2" in rendered.text
    assert "trap 'kill -" not in rendered.text  # no plain forwarding of the same signal


def test_user_signal_lead_ckpt_signal_and_grace(tmp_path):
    argv = ["--checkpoint", "--ckpt-signal", "SIGUSR1", "--ckpt-grace", "20s", "--signal=B:USR1@50", "-G", "h100:1",
            "-t", "1"]
    prep, settings, rendered = _render(argv, tmp_path)
    assert (settings.signal, settings.grace_s) == ("USR1", 20)
    assert "#SBATCH --signal=B:USR1@50" in sbatch_lines(rendered.text)
    assert "gpusub_ckpt_lead=50" in rendered.text and "gpusub_ckpt_grace=20" in rendered.text
    assert checkpoint_warnings(prep, settings) == []
    prep, settings, _ = _render(["--checkpoint", "--ckpt-grace", "5m", "-G", "h100:1", "-t", "10"], tmp_path)
    assert "not shorter than the signal's lead time (120s)" in checkpoint_warnings(prep, settings)[0]
    with pytest.raises(UsageError, match="--ckpt-signal 'KILL'"):
        _render(["--checkpoint", "--ckpt-signal", "KILL", "-G", "h100:1"], tmp_path)
    with pytest.raises(UsageError, match="--ckpt-grace"):
        _render(["--checkpoint", "--ckpt-grace", "soon", "-G", "h100:1"], tmp_path)


def test_term_as_the_stop_signal_has_no_second_term_trap(tmp_path):
    _, _, rendered = _render(["--checkpoint", "--ckpt-signal", "TERM", "-G", "h100:1", "-t", "10"], tmp_path)
    assert "trap gpusub_ckpt_on_stop TERM" in rendered.text
    assert "trap gpusub_ckpt_on_term TERM" not in rendered.text


def test_protocol_options_and_user_lead():
    s = CheckpointSettings(signal="USR1", lead_s=300)
    assert protocol_options(s, [("signal", "B:TERM@90")]) == ["--signal=B:USR1@90", "--requeue", "--open-mode=append"]
    assert protocol_options(s, []) == ["--signal=B:USR1@300", "--requeue", "--open-mode=append"]
    assert user_lead([("signal", "USR1")]) is None
    assert settings_for(GpusubOptions(), None, None) is None
    assert settings_for(GpusubOptions(checkpoint=True), None, None) == CheckpointSettings(why="gpusub --checkpoint")


def test_no_requeue_from_the_user_is_overridden(tmp_path):
    _, _, rendered = _render(["--checkpoint", "--no-requeue", "--open-mode=truncate", "-G", "h100:1"], tmp_path)
    lines = sbatch_lines(rendered.text)
    assert "#SBATCH --no-requeue" not in lines and "#SBATCH --requeue" in lines
    assert "#SBATCH --open-mode=append" in lines and "#SBATCH --open-mode=truncate" not in lines


@pytest.mark.parametrize("argv", [["--checkpoint"], ["--checkpoint", "--launch=per-gpu"],
                                  ["--class", "spot", "--gpu-isolation=strict", "--launch=per-gpu"]])
def test_bash_syntax(argv, tmp_path):
    _, _, rendered = _render([*argv, "-G", "h100:2", "-t", "10"], tmp_path)
    path = tmp_path / "r.sh"
    path.write_text(rendered.text)
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    if "per-gpu" in " ".join(argv):
        assert 'srun ' in rendered.text and '"$gpusub_payload" "$@" <&0 &' in rendered.text


def test_rendering_is_pure_and_repeatable(tmp_path):
    """The script is written in plain Python (render.shell): the same text every time, with or without the
    submitter's environment (no SBATCH_* in it), and nothing written to the user's cache."""
    (tmp_path / "work").mkdir()
    prep = _prep(["--checkpoint", "--launch=per-gpu", "-G", "h100:2", "-t", "10"], tmp_path / "work")
    settings = checkpoint_settings(prep)._replace(**FIXED)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    first = render_prepared(prep, None, settings)
    assert render_prepared(prep, env, settings) == first == render_prepared(prep, env, settings)
    assert not (tmp_path / "cache").exists()


def test_golden(tmp_path):
    _, _, rendered = _render(["--class", "spot", "-G", "h100:1", "-t", "30"], tmp_path)
    path = os.path.join(GOLDEN_DIR, "checkpoint-spot-22.05.sh")
    if UPDATE:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(rendered.text)
    with open(path, encoding="utf-8") as fh:
        want = fh.read()
    if rendered.text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), rendered.text.splitlines(True), path, "rendered"))
        pytest.fail(f"rendered script differs from {path} (SLURM_GPU_UPDATE_GOLDEN=1 rewrites it):\n{diff}")


# ---- the wrapper run locally: no Slurm (no SLURM_JOB_ID, so it asks Slurm nothing) ----------------------

PAYLOAD = """#!/bin/bash
# a parent and a child in the payload's process group: both must get the stop signal
trap 'echo "parent got USR2"; got=1' USR2
bash -c 'trap "echo child got USR2; exit 0" USR2; echo child up; while :; do sleep 0.1; done' &
echo "parent up"
read -r line
echo "stdin: $line"
got=
while [ -z "$got" ]; do sleep 0.1; done
wait
echo "parent done"
exit 3
"""


def _run_local(tmp_path, payload, grace=30, send_after=None, path_first=None):
    sub = parse_submission(["x.sh"], {}, payload)
    settings = CheckpointSettings(grace_s=grace, python="/nonexistent/python", why="test")
    text = render_script(sub, None, None, S2205, Payload(payload, "x.sh"), checkpoint=settings).text
    script = tmp_path / "job.sh"
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GPUSUB_"))}
    env["TMPDIR"] = str(tmp_path)
    if path_first:
        env["PATH"] = f"{path_first}:{env.get('PATH', '/usr/bin:/bin')}"
    (tmp_path / "stdin.txt").write_text("hello\n")
    with open(tmp_path / "stdin.txt", encoding="utf-8") as stdin:
        proc = subprocess.Popen(["bash", str(script)], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=tmp_path, start_new_session=True)
        try:
            time.sleep(send_after or 1.0)
            proc.send_signal(signal.SIGUSR2)  # as Slurm's --signal=B:USR2 does: the batch shell alone
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    return proc.returncode, out, err


def test_local_stop_reaches_every_process_and_keeps_exit_code_and_stdio(tmp_path):
    rc, out, err = _run_local(tmp_path, PAYLOAD)
    assert rc == 3, err
    lines = out.splitlines()
    assert {"parent up", "child up", "stdin: hello", "parent got USR2", "child got USR2", "parent done"} == set(lines)
    assert "no Slurm job id: the checkpoint protocol is off" in err
    assert "SIGUSR2 (reason: signal) passed on to the payload" in err
    assert "not requeued: the stop signal came from neither the time limit nor a preemption" in err
    assert not any(p.name.startswith("gpusub.") for p in tmp_path.iterdir())  # its private dir is gone


def test_local_payload_that_ignores_the_stop_is_ended_after_the_grace_time(tmp_path):
    payload = "#!/bin/bash\ntrap 'echo ignored' USR2\nwhile :; do sleep 0.1; done\n"
    started = time.monotonic()
    rc, out, err = _run_local(tmp_path, payload, grace=2, send_after=0.5)
    assert rc == 128 + signal.SIGTERM, err
    assert "ignored" in out
    assert "did not end within the grace time (2 s): SIGTERM" in err
    assert time.monotonic() - started < 20


def test_local_stop_before_the_payload_is_ready_is_passed_on_later(tmp_path):
    """Slurm can send --signal's signal within a second of the start: the wrapper passes it on no sooner
    than 1-2 s after the payload's start, so a payload that installs its handler in that time keeps it."""
    payload = ("#!/bin/bash\nsleep 0.5\ntrap 'echo \"handler got USR2\"; exit 0' USR2\necho ready\n"
               "while :; do sleep 0.1; done\n")
    rc, out, err = _run_local(tmp_path, payload, grace=10, send_after=0.3)
    assert rc == 0, err
    assert out.splitlines() == ["ready", "handler got USR2"]


def test_a_stop_before_the_protocols_trap_is_held_not_fatal(tmp_path):
    """Slurm sends --signal's signal at once on a preemption (preempt_send_user_signal): one that lands
    while the batch shell is still reading the protocol's functions, before its trap, must not end the
    shell (found by the lab's burst: FAILED 0:12, no requeue). A slow ``date`` (the protocol's first
    command) holds the shell there while the signal comes."""
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "date").write_text("#!/bin/bash\nsleep 1.5\nexec /bin/date \"$@\"\n")
    (shims / "date").chmod(0o755)
    payload = "#!/bin/bash\ntrap 'echo \"handler got USR2\"; exit 0' USR2\necho ready\nwhile :; do sleep 0.1; done\n"
    rc, out, err = _run_local(tmp_path, payload, grace=10, send_after=0.4, path_first=str(shims))
    assert rc == 0, (rc, err)
    assert out.splitlines() == ["ready", "handler got USR2"]
    assert "SIGUSR2 (reason: signal) passed on to the payload" in err


def test_warns_when_the_grace_time_is_shorter_than_a_recorded_checkpoint(tmp_path):
    """Markers of an earlier job in the work directory recorded a 90 s checkpoint: a 30 s grace warns,
    a 120 s one does not; -D names the work directory; a symlinked .gpusub-ckpt is not followed."""
    from slurm_gpu.adapters import markers as store
    from slurm_gpu.checkpoint.markers import Marker
    from slurm_gpu.submit.gpusub import recorded_checkpoint_cost

    work = tmp_path / "run"
    for job, cost in (("41", 300.0), ("117", 90.0), ("117", 12.5)):  # the newest job (117) counts, its longest
        d = str(work / ".gpusub-ckpt" / job)
        store.write_marker(d, Marker(step=int(cost), path=f"/ck/{cost}", job_id=job, cost_s=cost))
    store.write_marker(str(work / ".gpusub-ckpt" / "200"), Marker(step=1, path="/ck/none", job_id="200"))  # no cost
    assert recorded_checkpoint_cost(str(work)) == (90.0, "117")
    argv = ["--checkpoint", "--ckpt-grace", "30s", "--signal=B:USR2@300", "-G", "h100:1", "-t", "10"]
    prep, settings, _ = _render(argv, tmp_path)
    found = checkpoint_warnings(prep, settings, str(work))
    assert found == ["checkpoint: the grace time (30s) is shorter than the checkpoint job 117 recorded (90s, in "
                     "its markers): the payload may be killed before it has saved; raise --ckpt-grace"]
    prep, settings, _ = _render(["-D", "run", *argv], tmp_path)  # relative to where gpusub runs
    assert checkpoint_warnings(prep, settings, str(tmp_path)) == found
    prep, settings, _ = _render([*argv[:2], "120s", *argv[3:]], tmp_path)
    assert checkpoint_warnings(prep, settings, str(work)) == []
    assert checkpoint_warnings(prep, settings, str(tmp_path / "nowhere")) == []
    link = tmp_path / "linked"
    link.mkdir()
    os.symlink(work / ".gpusub-ckpt", link / ".gpusub-ckpt")
    assert recorded_checkpoint_cost(str(link)) is None
