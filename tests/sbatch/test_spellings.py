# SPDX-License-Identifier: Apache-2.0
"""Every GPU spelling sbatch takes, read into the request; what sbatch refuses, refused with its reason.

The expected values are Slurm's own, measured on the lab's 22.05.8 with ``sbatch --hold`` and
``scontrol show job`` (docs/gpusub-options.md, "Measured"); tests/sbatch/test_spellings_lab.py
checks the same cases against the real sbatch."""

import pytest

from slurm_gpu.errors import UsageError, exit_code_for
from slurm_gpu.slurm.sbatch.directives import DEFAULT_MAX_SCRIPT_BYTES
from slurm_gpu.slurm.sbatch.parse import OptionError, parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request

SH = "#!/bin/bash\n"


def P(argv, env=None, script=None, **kw):
    return parse_submission(argv, env or {}, script, **kw)


def R(argv, env=None, script=None, component=0, **kw):
    return to_job_request(P([*argv, "job.sh"], env, script, **kw), component=component)


# --- MIG, MPS, shards --------------------------------------------------------------------------------

@pytest.mark.parametrize("gres, gpu_type, profile, count", [
    ("gpu:1g.10gb:1", "1g.10gb", "1g.10gb", 1),
    ("gpu:a100_1g.10gb:1", "a100_1g.10gb", "1g.10gb", 1),
    ("gpu:a100_1g.10gb", "a100_1g.10gb", "1g.10gb", 1),  # count omitted = 1
    ("gres/gpu:a100_3g.20gb:2", "a100_3g.20gb", "3g.20gb", 2),
])
def test_mig_types_are_gres_types(gres, gpu_type, profile, count):
    r = R([f"--gres={gres}"])
    assert r.gpu_type == gpu_type and r.gpu_types == (gpu_type,) and r.mig_profile == profile
    assert r.gpus_per_node == count and r.total_gpus == count
    assert R([f"--gpus={gpu_type}:{count}"]).gpus_by_type == ((gpu_type, count),)


def test_count_less_type_starting_with_a_digit_is_refused_as_slurm_reads_it():
    # measured on 22.05.8: --gres=gpu:1g.10gb -> "Invalid Trackable RESource (TRES) specification" (Slurm
    # reads "1g" as the count); 24.11.5 takes it as the type 1g.10gb, count 1
    with pytest.raises(OptionError, match=r"--gres: .*gpu:1g\.10gb:1"):
        parse_submission(["--gres=gpu:1g.10gb", "x"], {}, None, version=(22, 5, 8))
    sub = parse_submission(["--gres=gpu:1g.10gb", "x"], {}, None, version=(24, 11, 5))
    assert to_job_request(sub).gpu_types == ("1g.10gb",)


def test_mps_and_shards_are_not_gpu_counts():
    r = R(["--gres=mps:200"])
    assert r.mps == 200 and r.gpus_per_node is None and r.total_gpus == 0
    r = R(["--gres=shard:4"])
    assert r.shards == 4 and r.total_gpus == 0
    r = R(["--gres=gpu:1,mps:50"])
    assert r.gpus_per_node == 1 and r.mps == 50 and r.total_gpus == 1


def test_type_case_is_kept():
    r = R(["--gpus=A100:1"])
    assert r.gpu_type == "A100" and r.gpu_types == ("A100",)


# --- several types, several forms ---------------------------------------------------------------------

def test_several_types_in_one_option():
    r = R(["--gpus=h100:1,a100:1"])
    assert r.gpus_by_type == (("h100", 1), ("a100", 1)) and r.gpu_types == ("h100", "a100")
    assert r.gpu_type == "h100" and r.gpus == 2 and r.total_gpus == 2
    r = R(["--gres=gpu:h100:1,gpu:a100:1"])
    assert r.gpus_per_node_by_type == (("h100", 1), ("a100", 1)) and r.total_gpus == 2


def test_gres_and_gpus_are_both_kept():
    # measured: --gres=gpu:h100:2 --gpus=a100:1 -> TresPerNode h100:2, TresPerJob a100:1, gres/gpu=3
    r = R(["--gres=gpu:h100:2", "--gpus=a100:1"])
    assert r.gpus_by_type == (("a100", 1),) and r.gpus_per_node_by_type == (("h100", 2),)
    assert set(r.gpu_types) == {"h100", "a100"} and r.total_gpus == 3


def test_gres_and_gpus_per_node_share_one_field():
    # measured: both land in TresPerNode; the same type counts once, the larger count (3)
    assert R(["--gres=gpu:2", "--gpus-per-node=3"]).gpus_per_node_by_type == ((None, 3),)
    assert R(["--gpus-per-node=3", "--gres=gpu:2"]).total_gpus == 3
    assert R(["--gres=gpu:h100:2", "--gpus-per-node=a100:1"]).total_gpus == 3  # two types: 2 + 1


@pytest.mark.parametrize("argv, total, per_node", [
    (["--gpus-per-node=4", "--gpus=8"], 8, 4),  # measured: 2 nodes, gres/gpu=8 (never 16)
    (["--gres=gpu:2", "--gpus=4"], 4, 2),  # measured: 2 nodes, gres/gpu=4
    (["--gpus=h100:4", "--gpus-per-node=h100:2"], 4, 2),
    (["-N", "2", "--gpus-per-node=4", "--gpus=8"], 8, 4),
])
def test_gpus_with_gpus_per_node_mean_what_slurm_makes_of_them(argv, total, per_node):
    r = R(argv)
    assert r.total_gpus == total and r.gpus_per_node == per_node


@pytest.mark.parametrize("argv, message", [
    (["--gres=gpu:h100:1", "--gpus-per-node=1"], "with and without type identification"),
    (["--gpus=h100:1,2"], "with and without type identification"),
    (["--gpus-per-task=2", "--gpus=h100:1", "-n2"], "with and without type identification"),
    (["--gpus-per-node=4", "--gpus=2"], "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node"),
    (["--gpus=h100:1", "--gpus-per-node=h100:2"], "Failed to ensure --gpus >="),
    (["-N", "2", "--gpus-per-node=4", "--gpus=4"], r"required nodes \(1\) doesn't fall between min_nodes \(2\)"),
    (["-N", "1-3", "--gpus-per-node=2", "--gpus=8"], r"required nodes \(4\) .* max_nodes \(3\)"),
])
def test_gpu_combinations_slurm_refuses(argv, message):
    with pytest.raises(OptionError, match=message) as info:
        P([*argv, "x"])
    assert exit_code_for(info.value) == 2


# --- precedence per option, across sources -------------------------------------------------------------

def test_different_gpu_options_from_different_sources_are_all_kept():
    # measured: script --gpus=a100:1 with command-line --gres=gpu:h100:2 -> both (gres/gpu=3)
    s = P(["--gres=gpu:h100:2", "x"], script=SH + "#SBATCH --gpus=a100:1\n")
    assert s.get("gpus") == "a100:1" and s.get("gres") == "gpu:h100:2"
    assert s.origin["gpus"] == "script" and s.origin["gres"] == "cli"
    assert to_job_request(s).total_gpus == 3
    s = P(["x"], {"SBATCH_GPUS_PER_NODE": "a100:1"}, SH + "#SBATCH --gres=gpu:h100:2\n")
    assert to_job_request(s).gpus_per_node_by_type == (("a100", 1), ("h100", 2))
    # the same option: the command line replaces the script (measured: only a100:1 is left)
    s = P(["--gres=gpu:a100:1", "x"], script=SH + "#SBATCH --gres=gpu:h100:2\n")
    assert s.get("gres") == "gpu:a100:1" and to_job_request(s).gpu_types == ("a100",)


# --- partitions, time, counts ---------------------------------------------------------------------------

def test_partition_list_is_kept():
    r = R(["-p", "batch,interactive"])
    assert r.partitions == ("batch", "interactive") and r.partition == "batch"
    with pytest.raises(OptionError, match="--partition"):
        P(["-p", "batch,", "x"])


@pytest.mark.parametrize("text", ["UNLIMITED", "unlimited", "INFINITE", "0", "-1"])
def test_no_time_limit_is_none(text):
    r = R(["-t", text])
    assert r.time_limit_min is None and r.time_unlimited
    assert R([]).time_limit_min is None and not R([]).time_unlimited
    assert R(["-t", "1-00:00:00"]).time_limit_min == 1440


def test_zero_nodes_is_sbatch_s_business_zero_tasks_a_usage_error():
    assert R(["-N", "0"]).nodes == 0  # measured: sbatch accepts -N 0 (NumNodes=0)
    with pytest.raises(UsageError, match=r"--ntasks: bad value '0'") as info:
        P(["-n", "0", "x"])  # sbatch: Invalid numeric value "0" for --ntasks.
    assert exit_code_for(info.value) == 2


# --- heterogeneous jobs ---------------------------------------------------------------------------------

HET = SH + "#SBATCH -t 10 --gres=gpu:h100:1 -J het\n#SBATCH hetjob\n#SBATCH -t 20 --gpus=a100:2 -p interactive\n"


def test_hetjob_script_components():
    s = P(["x"], script=HET)
    assert s.is_hetjob and len(s.components) == 2
    assert dict(s.components[0]) == {"time": "10", "gres": "gpu:h100:1", "job-name": "het"}
    assert dict(s.components[1]) == {"time": "20", "gpus": "a100:2", "partition": "interactive"}
    assert to_job_request(s, component=1).gpu_type == "a100"
    assert not P(["x"], script=SH).is_hetjob


def test_hetjob_precedence_per_component():
    # measured: -t 5 : -t 7 -G 1 het.sh -> component 0: 5 min, h100:1; component 1: 7 min, gpu:1, interactive
    s = P(["-t", "5", ":", "-t", "7", "-G", "1", "x", "arg"], script=HET)
    assert s.script_path == "x" and s.script_args == ("arg",)
    assert dict(s.components[0])["time"] == "5" and dict(s.components[0])["gres"] == "gpu:h100:1"
    assert dict(s.components[1]) == {"time": "7", "gpus": "1", "partition": "interactive"}
    # measured: SBATCH_TIMELIMIT applies to every component
    s = P(["x"], {"SBATCH_TIMELIMIT": "3"}, HET)
    assert [dict(c)["time"] for c in s.components] == ["3", "3"]
    # measured: more command-line components than script ones make more components
    s = P(["-t", "5", ":", "-t", "7", ":", "-t", "9", "x"], script=HET)
    assert [dict(c)["time"] for c in s.components] == ["5", "7", "9"]
    assert "partition" not in dict(s.components[2])
    s = P(["-t", "5", ":", "-t", "7", "x"], script=SH)
    assert len(s.components) == 2
    s = P(["x"], script=SH + "#SBATCH -t 10\n#SBATCH packjob\n#SBATCH -t 20\n#SBATCH HetJob # x\n#SBATCH -t 30\n")
    assert [dict(c)["time"] for c in s.components] == ["10", "20", "30"]


def test_hetjob_component_errors_name_the_component():
    with pytest.raises(OptionError, match=r"^component 1: .*with and without type"):
        P(["-G", "1", ":", "--gres=gpu:h100:1", "--gpus=1", "x"])


# --- the script -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("", r"Batch script is empty!"),
    (" \n\t\n", r"Batch script contains only whitespace!"),
    ("hostname\n", r"This does not look like a batch script\.  The first line must start with #!"),
    ("hostname\r\n", r"This does not look like a batch script"),  # sbatch checks #! first
    ("#!/bin/bash\nhost\0name\n", r"The Slurm controller does not allow scripts that contain a NULL character '\\0'\."),
    ("#!/bin/bash\r\nhost\0\n", r"The Slurm controller does not allow"),  # then NUL, then DOS line breaks
    ("#!/bin/bash\r\nhostname\r\n", r"Batch script contains DOS line breaks \(\\r\\n\)"),
])
def test_scripts_sbatch_refuses(text, message):
    with pytest.raises(OptionError, match=rf"^job\.sh: {message}") as info:
        P(["job.sh"], script=text)
    assert exit_code_for(info.value) == 2 and "\n" not in str(info.value)


def test_script_size_limit():
    ok = SH + "#" * (DEFAULT_MAX_SCRIPT_BYTES - len(SH) - 1) + "\n"
    assert P(["job.sh"], script=ok).script_path == "job.sh"  # measured: 4194304 bytes accepted
    with pytest.raises(OptionError, match=r"parameter too long \(the script has 4194305 bytes"):
        P(["job.sh"], script=ok + "x")  # measured: 4194305 refused
    with pytest.raises(OptionError, match="at most 100"):
        P(["job.sh"], script=SH + "x" * 100, max_script_bytes=100)
    assert P(["--wrap=hostname"], script="").wrap == "hostname"  # --wrap: no script to check
    assert P(["job.sh"], script="#!/bin/bash").script_path == "job.sh"  # no final newline: fine


def test_script_from_stdin():
    s = P(["-p", "batch"])
    assert s.script_from_stdin and s.script_path is None
    s = P(["-p", "batch"], script=SH + "#SBATCH -t 5\n")
    assert s.script_from_stdin and s.get("time") == "5"
    with pytest.raises(OptionError, match=r"^standard input: Batch script is empty!"):
        P([], script="")
    assert not P(["--wrap=true"]).script_from_stdin and not P(["x.sh"]).script_from_stdin


# --- SBATCH_EXCLUSIVE / --exclusive ----------------------------------------------------------------------

@pytest.mark.parametrize("value", ["", "user", "mcs", "USER"])
def test_exclusive_values_sbatch_takes(value):
    assert P(["x"], {"SBATCH_EXCLUSIVE": value}, version=(22, 5, 8)).has("exclusive")


@pytest.mark.parametrize("value", ["yes", "no", "0", "1", "2", "topo", "foo"])
def test_exclusive_values_sbatch_refuses(value):
    # measured on 22.05.8: "sbatch: error: Invalid --exclusive specification"
    with pytest.raises(OptionError, match=r"^SBATCH_EXCLUSIVE: --exclusive: .*Invalid --exclusive specification"):
        P(["x"], {"SBATCH_EXCLUSIVE": value}, version=(22, 5, 8))
    with pytest.raises(OptionError, match=r"^--exclusive: bad value"):
        P([f"--exclusive={value}", "x"], version=(22, 5, 8))


def test_exclusive_topo_from_24_11():
    assert P(["--exclusive=topo", "x"], version=(24, 11, 5)).get("exclusive") == "topo"
