# SPDX-License-Identifier: Apache-2.0
"""sbatch's option language: getopt_long rules, #SBATCH lexing, env vars, precedence, errors.

Expected values are written from sbatch(1), getopt_long(3) and src/sbatch/opt.c, not from the code.
"""

import dataclasses
import gzip
import itertools
import os
import re

import pytest

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.slurm.sbatch.directives import split_directive
from slurm_gpu.slurm.sbatch.parse import (
    OptionError,
    Submission,
    parse_submission,
    sbatch_input_env,
    to_argv,
)
from slurm_gpu.slurm.sbatch.table import BY_ENV, BY_NAME, BY_SHORT, GPUSUB_OPTIONS, SBATCH_OPTIONS, GpusubOptions
from slurm_gpu.slurm.sbatch.to_request import to_job_request


def P(argv, env=None, script=None, **kw):
    return parse_submission(argv, env or {}, script, **kw)


# --- the table --------------------------------------------------------------------------------------

MAN = "/usr/share/man/man1/sbatch.1.gz"


@pytest.mark.skipif(not os.path.exists(MAN), reason="sbatch(1) of the installed Slurm is not on this machine")
def test_table_covers_installed_man_page():
    text = gzip.open(MAN, "rt", errors="replace").read()
    lines = text.split("\n")
    documented = {}
    for prev, line in itertools.pairwise(lines):
        if prev.startswith(".TP") and "\\-\\-" in line:
            clean = line.replace("\\fB", "").replace("\\fR", "").replace("\\fI", "").replace("\\-", "-")
            short = re.match(r"^-([A-Za-z]),", clean)
            for m in re.finditer(r"--([a-z0-9-]+)", clean):
                documented[m.group(1)] = short.group(1) if short else None
    assert len(documented) > 100
    for name, short in documented.items():
        assert name in BY_NAME, f"--{name} documented in sbatch(1) but not in the table"
        assert BY_NAME[name].short == short, name
    env_section = text.split("INPUT ENVIRONMENT VARIABLES")[1].split("OUTPUT ENVIRONMENT VARIABLES")[0]
    for var in set(re.findall(r"\\fB(SBATCH_[A-Z0-9_]+)\\fR", env_section)):
        assert var in BY_ENV or var == "SBATCH_WAIT4SWITCH", var


def test_table_shape():
    assert len(SBATCH_OPTIONS) >= 115
    assert BY_SHORT["p"].name == "partition" and BY_SHORT["G"].name == "gpus" and BY_SHORT["t"].name == "time"
    assert BY_ENV["SBATCH_TIMELIMIT"].name == "time"
    assert BY_ENV["SBATCH_MEM_PER_NODE"].name == "mem"
    assert BY_ENV["SBATCH_ARRAY_INX"].name == "array"
    assert BY_ENV["SBATCH_DEBUG"].name == "verbose"
    assert BY_NAME["exclusive"].arg == "optional" and BY_NAME["hold"].arg == "none"
    assert BY_NAME["tres-bind"].since == (23, 11, 0) and BY_NAME["power"].until == (23, 11, 0)
    assert {o.name for o in GPUSUB_OPTIONS} >= {"explain", "json", "dry-run", "test-only", "wait", "policy",
                                                 "class", "gpu-isolation", "launch", "model-params",
                                                 "precision", "optimizer"}
    assert issubclass(OptionError, SlurmGpuError)


# --- command line -----------------------------------------------------------------------------------

def test_long_forms():
    s = P(["--time=10", "--partition", "gpu", "--hold", "job.sh"])
    assert s.options == (("hold", None), ("partition", "gpu"), ("time", "10"))
    assert s.script_path == "job.sh" and s.script_args == ()


def test_short_forms_and_bundles():
    s = P(["-t10", "-p", "gpu", "-HJname", "-N2", "job.sh"])
    assert dict(s.options) == {"time": "10", "partition": "gpu", "hold": None, "job-name": "name", "nodes": "2"}


def test_required_argument_takes_next_word_even_with_dash():
    assert P(["--comment", "-x", "job.sh"]).get("comment") == "-x"
    assert P(["-J", "--hold", "job.sh"]).get("job-name") == "--hold"


def test_optional_argument_only_with_equals():
    s = P(["--exclusive", "job.sh"])
    assert s.get("exclusive") is None and s.has("exclusive") and s.script_path == "job.sh"
    s = P(["--exclusive", "user", "job.sh"])  # "user" is the script, job.sh its argument
    assert s.script_path == "user" and s.script_args == ("job.sh",)
    assert P(["--exclusive=user", "x"]).get("exclusive") == "user"
    assert P(["-k", "x"]).get("no-kill") is None
    assert P(["-koff", "x"]).get("no-kill") == "off"


def test_abbreviations():
    assert P(["--part=gpu", "x"]).get("partition") == "gpu"
    assert P(["--gres-f=enforce-binding", "x"]).get("gres-flags") == "enforce-binding"
    assert P(["--tasks-per=2", "x"]).get("ntasks-per-node") == "2"  # undocumented alias
    assert P(["--time", "5", "x"]).get("time") == "5"  # exact match beats the prefix of --time-min
    with pytest.raises(OptionError, match=r"'--ti' is ambiguous; possibilities: --time, --time-min"):
        P(["--ti=5", "x"])
    with pytest.raises(OptionError, match="ambiguous"):
        P(["--ntasks-per=2", "x"])
    with pytest.raises(OptionError, match="ambiguous"):
        P(["--clus=a", "x"])  # --cluster, --cluster-constraint, --clusters


def test_stop_at_first_non_option_and_double_dash():
    s = P(["-p", "a", "train.sh", "--lr", "0.1", "-p", "b"])
    assert s.get("partition") == "a" and s.script_args == ("--lr", "0.1", "-p", "b")
    s = P(["--hold", "--", "-weird.sh", "x"])
    assert s.script_path == "-weird.sh" and s.script_args == ("x",)
    assert P(["-"]).script_path == "-"


def test_errors_name_option_and_forms():
    with pytest.raises(OptionError, match=r"^--time: bad time 'abc': not a time; accepted: M, M:S, H:M:S"):
        P(["--time=abc", "x"])
    with pytest.raises(OptionError, match=r"^--time: requires a value"):
        P(["--time"])
    with pytest.raises(OptionError, match=r"-t: requires a value"):
        P(["-t"])
    with pytest.raises(OptionError, match=r"--hold: takes no value"):
        P(["--hold=1", "x"])
    with pytest.raises(OptionError, match=r"invalid option -- 'Z'"):
        P(["-Z", "x"])
    with pytest.raises(OptionError, match=r"--gres: bad value 'gpu:'"):
        P(["--gres=gpu:", "x"])
    with pytest.raises(OptionError, match=r"--ntasks: bad value '0'"):
        P(["-n", "0", "x"])
    with pytest.raises(OptionError, match=r"--wrap: script arguments are not permitted"):
        P(["--wrap=hostname", "x.sh"])


def test_version_limits():
    assert P(["--tres-bind=gres/gpu:closest", "x"]).has("tres-bind")
    # unknown in 22.05: sbatch says "unrecognized option '--tres-bind'" (measured), and so do we
    with pytest.raises(OptionError, match=r"^unrecognized option '--tres-bind'"):
        P(["--tres-bind", "gres/gpu:closest", "x"], version=(22, 5))
    assert P(["--requeue=expedite", "x"], version=(25, 11)).get("requeue") == "expedite"
    with pytest.raises(OptionError, match="takes no value"):
        P(["--requeue=expedite", "x"], version=(22, 5))


PYXIS_HELP = """Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]

Parallel run options:
  -A, --account=name          charge job to specified account

Options provided by plugins:
      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH
                              [pyxis] the image to use for the container
      --container-mount-home  [pyxis] bind mount the user's home directory
      --container-writable    [pyxis] make the container filesystem writable

Help options:
  -h, --help                  show this help message
"""


def test_spank_options_from_help_and_only_those_pass():
    from slurm_gpu.slurm.sbatch.table import spank_options_from_help

    spank = spank_options_from_help(PYXIS_HELP)
    assert [(o.name, o.arg) for o in spank] == [("container-image", "required"), ("container-mount-home", "none"),
                                                ("container-writable", "none")]
    s = P(["--container-image", "nvcr.io/nvidia/pytorch:24.01", "--container-mount-home", "x"], spank_options=spank)
    assert s.get("container-image") == "nvcr.io/nvidia/pytorch:24.01" and s.has("container-mount-home")
    assert s.script_path == "x"
    s = P(["x"], script="#!/bin/sh\n#SBATCH --container-writable\n", spank_options=spank)
    assert s.has("container-writable")
    assert P(["--container-mount", "x"], spank_options=spank).has("container-mount-home")  # a unique prefix
    assert spank_options_from_help("Usage: sbatch\n\nHelp options:\n  -h, --help  help\n") == ()
    # without the plugin (the lab's sbatch has none) sbatch refuses it, and so do we
    with pytest.raises(OptionError, match=r"^unrecognized option '--container-image=x'"):
        P(["--container-image=x", "x"])
    with pytest.raises(OptionError, match=r"^line 2: unrecognized option '--foo'"):
        P(["x"], script="#!/bin/sh\n#SBATCH --foo\n")


def test_unknown_options_get_a_did_you_mean():
    with pytest.raises(OptionError,
                       match=r"^unrecognized option '--gpu-isolaton=strict'; did you mean --gpu-isolation\?"):
        P(["--gpu-isolaton=strict", "x"])
    with pytest.raises(OptionError, match=r"did you mean --partition\?"):
        P(["--partiton=batch", "x"])
    with pytest.raises(OptionError, match=r"did you mean --gres-flags\?"):
        P(["x"], script="#!/bin/sh\n#SBATCH --gres-flgs=enforce-binding\n")
    # a gpusub typo is never taken as a plugin option, even when plugins are there
    from slurm_gpu.slurm.sbatch.table import spank_options_from_help

    with pytest.raises(OptionError, match=r"did you mean --gpu-isolation\?"):
        P(["--gpu-isolaton", "strict", "x"], spank_options=spank_options_from_help(PYXIS_HELP))


def test_gpusub_options_on_command_line_only():
    s = P(["--dry-run", "--json", "--explain", "--policy", "p.yaml", "--class=train", "--gpu-isolation", "shared",
           "--launch=batch", "--model-params", "7B", "--precision=bf16", "--optimizer", "adam", "x.sh"])
    assert s.options == ()
    assert s.gpusub == GpusubOptions(dry_run=True, json=True, explain=True, policy="p.yaml", job_class="train",
                                     gpu_isolation="shared", launch="batch", model_params="7B",
                                     precision="bf16", optimizer="adam")
    with pytest.raises(OptionError, match=r"--launch: bad value 'mpi'; accepted: batch, per-gpu"):
        P(["--launch=mpi", "x"])
    with pytest.raises(OptionError, match="--model-params"):
        P(["--model-params=lots", "x"])
    # in a script, a gpusub option is not sbatch's: sbatch would refuse it; we refuse it too
    with pytest.raises(OptionError, match="line 2"):
        P([], script="#!/bin/sh\n#SBATCH --launch=batch\n")


def test_test_only_passes_through_and_wait_is_ours():
    s = P(["--test-only", "--wait", "x"])
    assert s.has("test-only") and not s.has("wait")
    assert s.gpusub == GpusubOptions(test_only=True, wait=True)


def test_gpusub_options_record_has_a_field_per_option():
    """One declaration per option: the table names each option's field, the record has exactly those."""
    import dataclasses

    assert [f.name for f in dataclasses.fields(GpusubOptions)] == [o.key for o in GPUSUB_OPTIONS]
    for o in GPUSUB_OPTIONS:
        default = getattr(GpusubOptions(), o.key)
        assert default is (None if o.takes_value else False), o


def test_gpusub_options_of_maps_every_key_to_its_field():
    """GpusubOptions.of (the parser's typed constructor) reads each key into its own field, and only its
    kind: a flag is set by True, a value by text."""
    for o in GPUSUB_OPTIONS:
        given: str | bool = "v" if o.takes_value else True
        opts = GpusubOptions.of({o.key: given})
        assert opts == GpusubOptions(**{o.key: given}), o
        wrong: str | bool = True if o.takes_value else "v"
        assert GpusubOptions.of({o.key: wrong}) == GpusubOptions(), o


# --- #SBATCH lines ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, words",
    [
        (" --time=5 -p gpu", ["--time=5", "-p", "gpu"]),
        (' --job-name="a b"', ["--job-name=a b"]),
        (" --job-name='a \"b\"'", ['--job-name=a "b"']),
        (' --comment="x"y', ["--comment=xy"]),
        (" --time=5 # a comment", ["--time=5"]),
        (" --job-name=a#b", ["--job-name=a"]),  # an unquoted # starts a comment even inside a word
        (' --job-name="a#b"', ["--job-name=a#b"]),
        (" --job-name=a\\#b", ["--job-name=a#b"]),
        (' --comment="a\\"b"', ['--comment=a"b']),
        (" --comment=a\\\\b", ["--comment=a\\b"]),
        (' --comment "" --time=5', ["--comment"]),  # an empty word ends the line in sbatch
        ("", []),
        ("   ", []),
    ],
)
def test_split_directive(text, words):
    assert split_directive(text) == words


def test_split_directive_escaped_space_by_version():
    assert split_directive(" --job-name=a\\ b", (24, 5)) == ["--job-name=a b"]
    assert split_directive(" --job-name=a\\ b", (22, 5)) == ["--job-name=a", "b"]


def test_split_directive_errors():
    with pytest.raises(ValueError, match="unmatched"):
        split_directive(' --job-name="abc')
    with pytest.raises(ValueError, match="unexpected ':'"):
        split_directive(" :foo")


SCRIPT = """#!/bin/bash
# a comment

#SBATCH --time=30
    #SBATCH --partition=ignored-indented-is-a-comment
#SBATCH -N 2 --ntasks-per-node=4   # trailing comment
#SLURM --qos=debug
#SBATCH --job-name
#SBATCH "two words"
srun hostname
#SBATCH --account=too-late
"""


def test_script_directives_stop_where_sbatch_stops():
    s = P(["job.sh"], script=SCRIPT)
    assert dict(s.options) == {"time": "30", "nodes": "2", "ntasks-per-node": "4", "qos": "debug",
                               "job-name": "two words"}
    assert set(s.origin.values()) == {"script"}


def test_script_errors_carry_line_numbers():
    with pytest.raises(OptionError, match=r"^line 3: --time: bad time 'soon'"):
        P(["x"], script="#!/bin/sh\n#SBATCH -p a\n#SBATCH --time=soon\n")
    with pytest.raises(OptionError, match=r"^line 2: invalid directive 'nonsense'"):
        P(["x"], script="#!/bin/sh\n#SBATCH nonsense\n")
    with pytest.raises(OptionError, match=r"^line 2: unmatched"):
        P(["x"], script='#!/bin/sh\n#SBATCH -J "x\n')
    with pytest.raises(OptionError, match=r"^line 2: #PBS/#BSUB"):
        P(["x"], script="#!/bin/sh\n#PBS -l walltime=1:00:00\n")
    assert P(["--ignore-pbs", "x"], script="#!/bin/sh\n#PBS -l walltime=1:00:00\n").has("ignore-pbs")
    s = P(["x"], script="#!/bin/sh\n#SBATCH -n1\n#SBATCH hetjob\n#SBATCH -n2\n")
    assert s.components == ((("ntasks", "1"),), (("ntasks", "2"),)) and s.options == (("ntasks", "1"),)


def test_early_pass_options_are_ignored_in_scripts():
    s = P(["x"], script="#!/bin/sh\n#SBATCH --wrap=hostname --quiet -v\n#SBATCH -p a\n")
    assert s.options == (("partition", "a"),) and s.wrap is None


def test_wrap_skips_the_script():
    s = P(["--wrap=hostname"], script="#!/bin/sh\n#SBATCH -p a\n")
    assert s.wrap == "hostname" and s.options == (("wrap", "hostname"),)
    assert to_job_request(s).job_name == "wrap"


# --- environment and precedence ---------------------------------------------------------------------

def test_env_and_precedence():
    script = "#!/bin/sh\n#SBATCH -p script -t 5 --qos=s --account=a\n"
    env = {"SBATCH_PARTITION": "env", "SBATCH_TIMELIMIT": "10", "SBATCH_QOS": "eq", "HOME": "/root"}
    s = P(["-p", "cli", "x"], env, script)
    assert dict(s.options) == {"partition": "cli", "time": "10", "qos": "eq", "account": "a"}
    assert s.origin == {"partition": "cli", "time": "env", "qos": "env", "account": "script"}


def test_env_flags():
    # "" / "yes" / a non-zero number set a flag; anything else resets it (slurm_process_option)
    assert P(["x"], {"SBATCH_NO_REQUEUE": ""}).has("no-requeue")
    assert P(["x"], {"SBATCH_NO_REQUEUE": "yes"}).has("no-requeue")
    assert P(["x"], {"SBATCH_NO_REQUEUE": "1"}).has("no-requeue")
    assert not P(["x"], {"SBATCH_NO_REQUEUE": "no"}, "#!/bin/sh\n#SBATCH --no-requeue\n").has("no-requeue")
    assert P(["x"], {"SBATCH_EXCLUSIVE": "user"}).get("exclusive") == "user"


def test_env_order_for_two_variables():
    assert P(["x"], {"SBATCH_CLUSTERS": "a", "SLURM_CLUSTERS": "b"}).get("clusters") == "b"
    assert P(["x"], {"SLURM_HINT": "nomultithread", "SBATCH_HINT": "compute_bound"}).get("hint") == "compute_bound"


def test_env_errors_name_the_variable():
    with pytest.raises(OptionError, match=r"^SBATCH_TIMELIMIT: --time: bad time 'x'"):
        P(["x"], {"SBATCH_TIMELIMIT": "x"})


def test_same_field_options():
    s = P(["--oversubscribe", "x"], script="#!/bin/sh\n#SBATCH --exclusive\n")
    assert s.has("oversubscribe") and not s.has("exclusive")
    s = P(["--no-requeue", "x"], script="#!/bin/sh\n#SBATCH --requeue\n")
    assert s.has("no-requeue") and not s.has("requeue")


def test_exclusive_and_oversubscribe_conflict_from_24_11():
    """sbatch 24.11.5 refuses both (cli or script); 22.05.8 lets the last one win (checked on both)."""
    header = "#!/bin/sh\n#SBATCH --exclusive\n"
    assert P(["--oversubscribe", "x"], script=header, version=(22, 5)).has("oversubscribe")
    for argv, script in ((["--oversubscribe", "x"], header), (["--exclusive", "-s", "x"], None)):
        with pytest.raises(OptionError, match="--exclusive and --oversubscribe are mutually exclusive"):
            P(argv, script=script, version=(24, 11))
    # SBATCH_EXCLUSIVE in the environment is overridden, not refused (24.11.5: OverSubscribe=YES)
    s = P(["--oversubscribe", "x"], {"SBATCH_EXCLUSIVE": ""}, version=(24, 11))
    assert s.has("oversubscribe") and not s.has("exclusive")


def test_memory_options():
    s = P(["x"], {"SBATCH_MEM_PER_CPU": "1G"}, "#!/bin/sh\n#SBATCH --mem=4G\n")
    assert dict(s.options) == {"mem": "4G"}  # set in the script beats the environment here
    with pytest.raises(OptionError, match="mutually exclusive"):
        P(["--mem-per-cpu=1G", "x"], {}, "#!/bin/sh\n#SBATCH --mem=4G\n")
    with pytest.raises(OptionError, match="SBATCH_MEM_PER_NODE"):
        P(["x"], {"SBATCH_MEM_PER_CPU": "1G", "SBATCH_MEM_PER_NODE": "1G"})
    assert dict(P(["--mem=8G", "--mem=16G", "x"]).options) == {"mem": "16G"}


def test_verbose_counts():
    s = P(["-vv", "--verbose", "x"])
    assert s.options == (("verbose", None),) * 3


def test_sbatch_input_env():
    assert sbatch_input_env({"SBATCH_QOS": "a", "HOME": "/", "SLURM_HINT": "x", "SBATCH_WAIT4SWITCH": "1"}) == {
        "SBATCH_QOS": "a", "SLURM_HINT": "x", "SBATCH_WAIT4SWITCH": "1"}


# --- outputs ----------------------------------------------------------------------------------------

def test_to_argv_round_trip():
    s = P(["-J", "a b", "--hold", "--exclusive", "-t", "1-0", "--gres=gpu:a100:2", "x"])
    argv = to_argv(s.options)
    assert argv == ["--exclusive", "--gres=gpu:a100:2", "--hold", "--job-name=a b", "--time=1-0"]
    assert P(argv + ["x"]).options == s.options


@pytest.mark.parametrize(
    "argv, expect",
    [
        (["--gres=gpu:h100:4"], dict(gpus_per_node=4, gpu_type="h100", total=4)),
        (["--gres=gpu:2", "-N", "2"], dict(gpus_per_node=2, gpu_type=None, total=4)),
        (["--gres=gpu:a100:1,shard:2"], dict(gpus_per_node=1, gpu_type="a100", total=1)),
        (["--gres=gres/gpu:a100_3g.20gb:1"], dict(gpus_per_node=1, mig_profile="3g.20gb", total=1)),
        (["-G", "8"], dict(gpus=8, total=8)),
        (["--gpus=a100:2"], dict(gpus=2, gpu_type="a100", total=2)),
        (["--gpus-per-node=h100:8", "--nodes=2-4"], dict(gpus_per_node=8, nodes=2, total=16)),
        (["--gpus-per-task=1", "-n", "4"], dict(gpus_per_task=1, ntasks=4, total=4)),
        (["--tres-per-task=gres/gpu:2", "-n", "2"], dict(gpus_per_task=2, total=4)),
        (["--gpus-per-socket=2"], dict(gpus_per_socket=2, total=2)),
        (["--ntasks-per-gpu=2", "-n", "8"], dict(ntasks_per_gpu=2, total=4)),
        (["-p", "cpu"], dict(total=0, gpu_type=None)),
    ],
)
def test_to_job_request_gpus(argv, expect):
    req = to_job_request(P(argv + ["x"]))
    total = expect.pop("total")
    assert req.total_gpus == total
    for key, value in expect.items():
        assert getattr(req, key) == value, key


def test_memory_conflict_on_command_line():
    with pytest.raises(OptionError, match="mutually exclusive"):
        P(["--mem=16G", "--mem-per-gpu=80G", "x"])


def test_to_job_request_fields():
    s = P(["-t", "1-2:30", "--mem-per-gpu=80G", "-c", "8", "-a", "0-9%2", "-A", "proj", "-q", "high",
           "-C", "h100", "--class=train", "--model-params=70b", "--precision=bf16", "--optimizer=adam",
           "-J", "train", "-n", "2", "--ntasks-per-node=2", "x"])
    r = to_job_request(s, user="alice", groups=["ml"])
    assert (r.time_limit_min, r.mem_per_gpu_mb, r.cpus_per_task, r.array) == (1590, 81920, 8, "0-9%2")
    assert (r.account, r.qos, r.constraint, r.job_class, r.job_name) == ("proj", "high", "h100", "train", "train")
    assert (r.model_params, r.precision, r.optimizer) == (70e9, "bf16", "adam")
    assert (r.user, r.groups, r.interactive, r.ntasks, r.ntasks_per_node) == ("alice", ("ml",), False, 2, 2)
    assert to_job_request(P(["--mem=1T", "x"])).mem_mb == 1048576


def test_submission_is_frozen():
    s = P(["x"])
    assert isinstance(s, Submission)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.script_path = "y"


def test_docs_list_every_option():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "gpusub-options.md")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for opt in SBATCH_OPTIONS:
        assert f"| `--{opt.name}` |" in text, opt.name
    for opt in GPUSUB_OPTIONS:
        assert f"`--{opt.name}" in text, opt.name


def test_hetjob_separator_with_a_tab():
    s = P(["x"], script="#!/bin/sh\n#SBATCH -n1\n#SBATCH\thetjob\t# next component\n")
    assert s.components == ((("ntasks", "1"),), ())
