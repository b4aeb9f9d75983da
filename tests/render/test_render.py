# SPDX-License-Identifier: Apache-2.0
"""render_script unit tests: option merging, routing to sbatch's command line, srun input variables
per Slurm spelling, errors, laziness. Expected texts are written by hand."""

import os
import subprocess
import sys

import pytest

from slurm_gpu.placement.plan import BindingPlan
from slurm_gpu.render.script import (
    Payload,
    RenderedScript,
    RenderError,
    comment_text,
    directive_quote,
    effective_options,
    payload_of,
    render_script,
)
from slurm_gpu.request import Decision
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.slurm.sbatch.directives import split_directive
from slurm_gpu.slurm.sbatch.parse import parse_submission

S2205, S2311 = spelling_for((22, 5, 8)), spelling_for((23, 11, 10))
PL = Payload("#!/bin/sh\ntrue\n", "x.sh")


def sub_of(argv, script=None, env=None):
    return parse_submission(argv, env or {}, script)


def plan(**kw):
    base = dict(sbatch_options=(), srun_options=(), env=(), tasks=1, cpus_per_task=1, gpus_per_task=None,
                isolation="shared", launch="batch", explanation=())
    base.update(kw)
    return BindingPlan(**base)


def sbatch_lines(text):
    return [line for line in text.splitlines() if line.startswith("#SBATCH ")]


def test_directive_quote_round_trips_through_sbatch_lexer():
    for value in ["plain", "a b", 'q"uote', "it's", "a#b", "back\\slash", "", "$(x)", "`x`", "-x", "é", "a\\ b"]:
        assert split_directive(" --comment=" + directive_quote(value)) == ["--comment=" + value]
    assert directive_quote("gpu:h100:2") == "gpu:h100:2"
    assert directive_quote("a b") == '"a b"'


def test_effective_options_order_of_authority():
    sub = sub_of(["-p", "mine", "--mem=4G", "-J", "j", "x.sh"])
    decision = Decision(accepted=True, partition="batch", qos="normal", added_options=("--time=60",))
    p = plan(sbatch_options=("--mem-per-gpu=8G", "--ntasks=2"))
    assert effective_options(sub, decision, p) == [
        ("job-name", "j"), ("mem-per-gpu", "8G"), ("ntasks", "2"), ("partition", "batch"), ("qos", "normal"),
        ("time", "60")]


def test_job_name_defaults_to_the_script_name():
    assert ("job-name", "train.sh") in effective_options(sub_of(["dir/train.sh"]), None, None)
    assert ("job-name", "wrap") in effective_options(sub_of(["--wrap=hostname"]), None, None)


def test_client_options_and_newlines_go_to_the_command_line():
    sub = sub_of(["--test-only", "--comment=two\nlines", "-v", "-p", "a", "x.sh"])
    r = render_script(sub, None, None, S2205, PL)
    assert isinstance(r, RenderedScript)
    assert r.sbatch_argv == ("--comment=two\nlines", "--test-only", "--verbose")
    assert sbatch_lines(r.text) == ["#SBATCH --job-name=x.sh", "#SBATCH --partition=a"]


def test_batch_launch_exports_srun_binding_per_spelling():
    p = plan(srun_options=("--cpu-bind=cores", "--tres-bind=gres/gpu:map:0,1", "--mem-bind=local",
                           "--gres-flags=allow-task-sharing", "--unknown-flag"))
    old = render_script(sub_of(["x.sh"]), None, p, S2205, PL).text
    new = render_script(sub_of(["x.sh"]), None, p, S2311, PL).text
    assert "export SLURM_GPU_BIND=map_gpu:0,1\n" in old and "SLURM_TRES_BIND" not in old
    assert "export SLURM_TRES_BIND=gres/gpu:map:0,1\n" in new and "SLURM_GPU_BIND" not in new
    for text in (old, new):
        assert '[ -n "${SLURM_CPU_BIND+set}" ] || export SLURM_CPU_BIND=cores\n' in text
        assert '[ -n "${SLURM_GRES_FLAGS+set}" ] || export SLURM_GRES_FLAGS=allow-task-sharing\n' in text
        assert "# srun option with no input variable (add it to your srun lines): --unknown-flag\n" in text
        assert '(trap - INT QUIT; exec "$gpusub_payload" "$@") <&0 &\n' in text and text.endswith('exit "$gpusub_rc"\n')


def test_srun_launch_with_and_without_shim():
    args = ["x.sh", "a b"]
    p = plan(launch="per-gpu", srun_options=("--cpu-bind=cores",), isolation="strict")
    text = render_script(sub_of(args), None, p, S2205, PL).text
    assert "set -- 'a b'\n" in text and '\nsrun --cpu-bind=cores "$gpusub_payload" "$@"\n' in text
    p = plan(launch="per-gpu", srun_options=("--cpu-bind=cores",), isolation="strict", task_prelude="echo pre")
    text = render_script(sub_of(args), None, p, S2205, PL).text
    assert "SLURM_GPU_SHIM='echo pre\nexec \"$@\"'\n" in text
    assert 'srun --cpu-bind=cores bash -c "$SLURM_GPU_SHIM" slurm-gpu-shim "$gpusub_payload" "$@"\n' in text
    p = plan(launch="per-gpu", isolation="shared", gpus_per_task=2)
    text = render_script(sub_of(args), None, p, S2205, PL).text
    assert "n=2; first=$((LOCAL_RANK * n))" in text


def test_shared_shim_maps_local_rank_to_gpus(tmp_path):
    p = plan(launch="per-gpu", isolation="shared", gpus_per_task=2)
    text = render_script(sub_of(["x.sh"]), None, p, S2205, PL).text
    shim = text.split("SLURM_GPU_SHIM=", 1)[1].split("\nsrun", 1)[0]
    script = (f"SLURM_GPU_SHIM={shim}\n"
              "bash -c \"$SLURM_GPU_SHIM\" shim "
              "bash -c 'echo $LOCAL_RANK $GPUSUB_TASK_GPUS $GPUSUB_TASK_GPU_ORDINALS'\n")
    env = {"PATH": os.environ["PATH"], "SLURM_LOCALID": "1", "CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out == "1 6,7 2,3\n"


def test_payload_name_cannot_look_like_an_option():
    sub = sub_of(["--", "-rf"], script="#!/bin/sh\n")
    text = render_script(sub, None, None, S2205, payload_of(sub, "#!/bin/sh\n")).text
    assert 'gpusub_payload="$gpusub_dir"/rf\n' in text


def test_render_errors():
    with pytest.raises(RenderError, match="environment name 'BAD NAME'"):
        render_script(sub_of(["x.sh"]), None, plan(env=(("BAD NAME", "1"),)), S2205, PL)
    with pytest.raises(RenderError, match="launch 'mpi'"):
        render_script(sub_of(["x.sh"]), None, plan(launch="mpi"), S2205, PL)
    with pytest.raises(RenderError, match="NUL"):
        render_script(sub_of(["-J", "a\0b", "x.sh"]), None, None, S2205, PL)


def test_header_comment_is_one_line_per_field():
    decision = Decision(accepted=True, job_class="c\nd", partition="p\n#SBATCH --qos=evil", qos="q")
    text = render_script(sub_of(["x.sh"]), decision, None, S2205, PL).text
    assert "class=c?d partition=p?#SBATCH --qos=evil qos=q" in text
    assert comment_text("a\rb\x1bc") == "a?b?c"
    assert [line for line in text.splitlines() if "evil" in line and line.startswith("#SBATCH")] == []


def test_a_rendered_submission_never_imports_jinja2():
    """gpusub's script is written in plain Python (render.shell); Jinja2 only compiles job_submit.lua."""
    code = ("import sys\n"
            "from slurm_gpu.render.script import Payload, render_script\n"
            "from slurm_gpu.slurm.release import spelling_for\n"
            "from slurm_gpu.slurm.sbatch.parse import parse_submission\n"
            "sub = parse_submission(['--gpus=2', '--signal=B:USR1@60', 'x.sh', 'a b'], {}, None)\n"
            "text = render_script(sub, None, None, spelling_for((24, 11, 5)), Payload('true\\n', 'x.sh')).text\n"
            "print(text.startswith('#!/bin/bash') and \"'a b'\" in text, 'jinja2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


def test_rendered_with_a_real_plan_passes_bash_n(tmp_path):
    from slurm_gpu.placement.plan import node_layout, plan_binding
    from slurm_gpu.slurm.sbatch.to_request import to_job_request
    from slurm_gpu.topology import load_topology_file

    topo_path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "topology", "h100x8.yaml")
    layout = node_layout(load_topology_file(topo_path), "h100x8", "h100n[1-2]")
    for version in ((22, 5, 8), (23, 11, 10), (24, 11, 5)):
        spelling = spelling_for(version)
        for isolation, launch in (("shared", "batch"), ("strict", "batch"), ("shared", "per-gpu")):
            sub = sub_of(["--gres=gpu:h100:4", "-p", "batch", "train.sh", "--epochs", "3"])
            req = to_job_request(sub)
            decision = Decision(accepted=True, partition="batch", qos="normal", gres="gpu:h100:4", gpu_type="h100",
                                gpus=4)
            p = plan_binding(req, decision, spelling, [layout], launch=launch, isolation=isolation)
            assert p is not None
            r = render_script(sub, decision, p, spelling, PL)
            path = tmp_path / f"job-{version[0]}-{version[1]}-{isolation}-{launch}.sh"
            path.write_text(r.text)
            subprocess.run(["bash", "-n", str(path)], check=True)
            assert "--gres=gpu:h100:4" in r.text and 'slurm-gpu:hook checkpoint' in r.text


def test_wrap_is_not_passed_to_sbatch():
    r = render_script(sub_of(["--wrap=hostname -s"]), None, None, S2205, PL)
    assert r.sbatch_argv == () and "wrap" not in "".join(sbatch_lines(r.text)).replace("job-name=wrap", "")
    assert "#SBATCH --job-name=wrap" in r.text


def test_the_payload_runs_with_the_signal_dispositions_plain_bash_gives_it(tmp_path):
    """A command started with & in a shell without job control ignores SIGINT and SIGQUIT; under sbatch
    the script is the batch shell itself. The rendered script restores them: the payload's ignored
    signals are those of the same script run by bash directly."""
    import subprocess

    from slurm_gpu.submit.gpusub import prepare, render_prepared
    from tests.render.test_golden import POLICY, NoSlurm

    payload = tmp_path / "p.sh"
    payload.write_text("#!/bin/bash\nsed -n 's/^SigIgn:\\t//p' /proc/$$/status\n")
    payload.chmod(0o755)
    env = {"GPUSUB_SLURM_VERSION": "22.05.8", "GPUSUB_POLICY": POLICY, "HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path)}
    prep = prepare(["--gpus=h100:1", "-t", "10", str(payload)], env, NoSlurm())
    script = tmp_path / "job.sh"
    script.write_text(render_prepared(prep).text)
    direct = subprocess.run(["bash", str(payload)], capture_output=True, text=True, timeout=20).stdout
    rendered = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=20,
                              cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}).stdout
    assert rendered == direct and rendered.strip()
