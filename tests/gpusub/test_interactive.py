# SPDX-License-Identifier: Apache-2.0
"""gpusub --interactive: predict how a salloc/srun session (no batch script) is classified.

The expected classes are read by hand from examples/policies/university.yaml (classes in order, the
first match wins): mig-small needs --gpu-fraction; interactive needs an interactive session with at
most 2 GPUs and 4 h (partition interactive, QOS normal); debug takes at most 2 GPUs and 30 min
(partition interactive, QOS debug); spot needs --class; priority needs a grant account; production
takes any GPU job (partition batch, QOS normal).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from slurm_gpu.slurm.sbatch.parse import OptionError, parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY = os.path.join(ROOT, "examples", "policies", "university.yaml")


def gpusub(*args: str, env_extra: dict[str, str] | None = None, cwd: str | None = None,
           stdin_text: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "SLURM_", "GPUSUB_"))}
    env.update({"SLURM_CONF": "/no/such/file", "GPUSUB_SLURM_VERSION": "22.05.8", "GPUSUB_POLICY": POLICY})
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", "from slurm_gpu.cli.gpusub import main; main()", *args],
                          capture_output=True, text=True, env=env, timeout=60, cwd=cwd,
                          input=stdin_text if stdin_text is not None else "")


def explain(*args: str, **kw) -> dict:
    r = gpusub("--explain", "--json", *args, **kw)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


# ---- the option reaches the request ------------------------------------------------------------

def test_interactive_reaches_the_request():
    assert to_job_request(parse_submission(["--interactive", "--gpus=1"], {}, None)).interactive is True
    assert to_job_request(parse_submission(["--gpus=1", "job.sh"], {}, None)).interactive is False


def test_interactive_takes_no_value():
    with pytest.raises(OptionError, match="--interactive: takes no value"):
        parse_submission(["--interactive=yes", "job.sh"], {}, None)


def test_interactive_is_command_line_only_as_every_gpusub_option():
    with pytest.raises(OptionError, match="line 2: --interactive is a gpusub option"):
        parse_submission(["job.sh"], {}, "#!/bin/sh\n#SBATCH --interactive\ntrue\n")


# ---- the classification (university policy) -------------------------------------------------

def test_one_hour_a100_session_is_class_interactive_and_the_batch_job_production():
    d = explain("--interactive", "--gpus=a100:1", "-t", "1:00:00")
    assert d["accepted"] and (d["class"], d["partition"], d["qos"]) == ("interactive", "interactive", "normal")
    # the same options as a batch job: 60 min is over debug's 30 min, so production (batch, normal)
    d = explain("--gpus=a100:1", "-t", "1:00:00", "--wrap=true")
    assert d["accepted"] and (d["class"], d["partition"], d["qos"]) == ("production", "batch", "normal")


def test_short_session_is_interactive_before_debug():
    # 20 min fits both interactive and debug; the interactive class comes first for a session only
    d = explain("--interactive", "--gpus=a100:1", "-t", "20")
    assert (d["class"], d["partition"], d["qos"]) == ("interactive", "interactive", "normal")
    d = explain("--gpus=a100:1", "-t", "20", "--wrap=true")
    assert (d["class"], d["partition"], d["qos"]) == ("debug", "interactive", "debug")


def test_session_beyond_the_interactive_class_falls_through():
    # 3 GPUs is over interactive's (and debug's) 2: production, as for a batch job
    d = explain("--interactive", "--gpus=a100:3", "-t", "1:00:00")
    assert (d["class"], d["partition"], d["qos"]) == ("production", "batch", "normal")
    # 5 h is over interactive's 4 h
    d = explain("--interactive", "--gpus=a100:1", "-t", "5:00:00")
    assert (d["class"], d["partition"], d["qos"]) == ("production", "batch", "normal")


def test_the_sessions_command_is_not_read_as_a_script(tmp_path):
    # salloc --gpus=a100:1 -t 60 bash -l: "bash" is a command; no file of that name is needed
    d = explain("--interactive", "--gpus=a100:1", "-t", "60", "bash", "-l", cwd=str(tmp_path))
    assert d["class"] == "interactive"


def test_sbatch_variables_do_not_apply_to_a_session():
    # salloc/srun ignore SBATCH_TIMELIMIT; had gpusub read it (10 h > 4 h) the class would be production
    d = explain("--interactive", "--gpus=a100:1", "-t", "60", env_extra={"SBATCH_TIMELIMIT": "10:00:00"})
    assert d["class"] == "interactive"
    d = explain("--gpus=a100:1", "--wrap=true", env_extra={"SBATCH_TIMELIMIT": "10:00:00"})
    assert d["class"] == "production"  # the batch job does read it


def test_plain_explain_text_works_too():
    r = gpusub("--explain", "--interactive", "--gpus=a100:1", "-t", "60")
    assert r.returncode == 0 and "interactive" in r.stdout and r.stderr == ""


# ---- usage errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [[], ["--json"], ["--dry-run"], ["--test-only"], ["--wait"]])
def test_interactive_without_explain_is_one_line_exit_2(tmp_path, mode):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    for tail in ([str(script)], []):  # with a script, and with the script on standard input
        r = gpusub("--interactive", *mode, "--gpus=a100:1", "-t", "60", *tail, stdin_text="#!/bin/bash\ntrue\n")
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("gpusub: error: --interactive")
        assert "only with --explain" in r.stderr


def test_interactive_with_wrap_is_a_usage_error():
    r = gpusub("--explain", "--interactive", "--gpus=a100:1", "--wrap=hostname")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--wrap" in r.stderr


def test_help_names_the_option():
    r = gpusub("--help")
    assert r.returncode == 0 and "--interactive" in r.stdout
