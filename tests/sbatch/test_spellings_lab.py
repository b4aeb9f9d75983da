# SPDX-License-Identifier: Apache-2.0
"""gpusub's parse against the real sbatch (lab, --hold + the job reader): every GPU spelling gives
the GPUs Slurm records, heterogeneous jobs the same components, and what sbatch refuses, gpusub refuses
with sbatch's own words."""

import os

import pytest

from slurm_gpu import units
from slurm_gpu.slurm.records import job_tres
from slurm_gpu.slurm.release import GPUS_PER_NODE_WITH_GRES_GPU, spelling_for
from slurm_gpu.slurm.sbatch.directives import DEFAULT_MAX_SCRIPT_BYTES
from slurm_gpu.slurm.sbatch.parse import OptionError, parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm_alone")]  # Slurm itself

SH = "#!/bin/bash\n"


@pytest.fixture(scope="module")
def lab(request):
    return request.getfixturevalue("slurm_lab")


def write(lab, text: str | bytes) -> tuple[str, str]:
    work = lab.workdir("spellings")
    path = os.path.join(work, "job.sh")
    with open(path, "wb") as fh:
        fh.write(text.encode() if isinstance(text, str) else text)
    return work, path


def sbatch(lab, argv, text, env=None, stdin=False):
    """Submit held as the lab user; (job records per component, or None, sbatch's error joined on one line)."""
    work, path = write(lab, text)
    cmd = ["sbatch", "--parsable", "--hold", *argv] + ([] if stdin else [path])
    if stdin:
        cmd = ["sh", "-c", 'exec "$@" < job.sh', "sh", *cmd]
    r = lab.run(cmd, cwd=work, env_extra=env or {})
    if r.returncode != 0:
        return None, " ".join(line.removeprefix("sbatch: error: ").strip() for line in r.stderr.strip().splitlines()
                              if not line.startswith("sbatch: Warning"))
    job = r.stdout.strip().splitlines()[-1].split(";")[0]
    try:
        records = lab.job_records(job)  # the one job reader (squeue's JSON), in scontrol's field names
    finally:
        lab.cancel(job)
    return sorted(records, key=lambda rec: int(rec.get("HetJobOffset", 0))), ""


def parse(lab, argv, text, env=None):
    return parse_submission([*argv, "job.sh"], env or {}, text, version=lab.version)


def slurm_gpus(record) -> tuple[int, dict[str, int]]:
    tres = job_tres(record)  # TRES= (22.05) or ReqTRES=/AllocTRES= (24.11)
    typed = {k.split(":", 1)[1]: int(v) for k, v in tres.items() if k.startswith("gres/gpu:")}
    return int(tres.get("gres/gpu", 0)), typed


GPU_CASES = [
    ("--gpus-per-node=4 --gpus=8", ""),
    ("--gres=gpu:2 --gpus=4", ""),
    ("--gpus=h100:4 --gpus-per-node=h100:2", ""),
    ("--gres=gpu:h100:2 --gpus=a100:1", ""),
    ("--gpus=h100:1,a100:1", ""),
    ("--gres=gpu:h100:1,gpu:a100:1", ""),
    ("--gres=gpu:2 --gpus-per-node=3", ""),
    ("--gpus-per-node=2 --gres=gpu:3", ""),
    ("--gres=gpu:h100:2 --gpus-per-node=a100:1", ""),
    ("--gres=gpu:1g.10gb:1", ""),
    ("--gres=gpu:a100_1g.10gb", ""),
    ("--gres=gpu:h100", ""),
    ("--gres=gpu:h100:2", "#SBATCH --gpus=a100:1\n"),  # different options from different sources: both
    ("--gpus-per-node=a100:1", "#SBATCH --gres=gpu:h100:2\n"),
    ("--gres=gpu:a100:1", "#SBATCH --gres=gpu:h100:2\n"),  # the same option: the command line wins
    ("-N 0", ""),
]


def _mixes_gpus_per_node_and_gres_gpu(argv: str, header: str) -> bool:
    words = argv.split() + header.replace("#SBATCH", " ").split()
    return any(w.startswith("--gpus-per-node") for w in words) and any(w.startswith("--gres=gpu") for w in words)


@pytest.mark.parametrize("argv, header", GPU_CASES, ids=[a + (" +script" if h else "") for a, h in GPU_CASES])
def test_gpu_spellings_give_the_gpus_slurm_records(lab, argv, header):
    records, err = sbatch(lab, argv.split(), SH + header + "true\n")
    if spelling_for(lab.version).gpus_per_node_excludes_gres_gpu and _mixes_gpus_per_node_and_gres_gpu(argv, header):
        # 26.05: sbatch refuses the mix, from whatever source; gpusub's parse refuses it the same way
        assert records is None and GPUS_PER_NODE_WITH_GRES_GPU in err, err
        with pytest.raises(OptionError) as info:
            parse(lab, argv.split(), SH + header + "true\n")
        assert GPUS_PER_NODE_WITH_GRES_GPU[:-1] in str(info.value)
        return
    assert records, f"sbatch refused it: {err}"
    req = to_job_request(parse(lab, argv.split(), SH + header + "true\n"))
    total, typed = slurm_gpus(records[0])
    assert req.total_gpus == total
    known = {"h100", "a100"}  # the lab's AccountingStorageTRES types
    mine: dict[str, int] = {}
    for form in (req.gpus_by_type, req.gpus_per_node_by_type):
        for gtype, _count in form:
            if gtype in known:
                mine[gtype] = req.total_gpus_of_type(gtype)
    assert mine == typed


@pytest.mark.parametrize("argv", ["-p batch,interactive", "-t UNLIMITED", "-t 0", "-t INFINITE", "-t 90"])
def test_partition_lists_and_time_limits(lab, argv):
    records, err = sbatch(lab, argv.split(), SH + "true\n")
    assert records, err
    req = to_job_request(parse(lab, argv.split(), SH + "true\n"))
    assert ",".join(req.partitions or ("batch",)) == records[0]["Partition"]
    want = None if records[0]["TimeLimit"] == "UNLIMITED" else units.parse_time_minutes(records[0]["TimeLimit"])
    if "-t" in argv:
        assert req.time_limit_min == want and req.time_unlimited == (want is None)


HET = SH + "#SBATCH -t 10 --gres=gpu:h100:1\n#SBATCH hetjob\n#SBATCH -t 20 --gpus=a100:2 -p interactive\ntrue\n"


@pytest.mark.parametrize("argv, env", [
    ("", {}),
    ("-t 5 : -t 7 -G 1", {}),
    ("-t 5 : -t 7 : -t 9", {}),
    ("", {"SBATCH_TIMELIMIT": "3"}),
])
def test_hetjob_components_as_sbatch_makes_them(lab, argv, env):
    records, err = sbatch(lab, argv.split(), HET, env)
    assert records, err
    sub = parse(lab, argv.split(), HET, env)
    assert len(sub.components) == len(records)
    for k, rec in enumerate(records):
        req = to_job_request(sub, component=k)
        assert req.time_limit_min == units.parse_time_minutes(rec["TimeLimit"])
        assert (req.partition or "batch") == rec["Partition"]
        assert req.total_gpus == slurm_gpus(rec)[0]


def test_script_from_stdin(lab):
    text = SH + "#SBATCH -t 7\ntrue\n"
    records, err = sbatch(lab, [], text, stdin=True)
    assert records, err
    sub = parse_submission([], {}, None, version=lab.version)
    assert sub.script_from_stdin
    sub = parse_submission([], {}, text, version=lab.version)
    assert to_job_request(sub).time_limit_min == units.parse_time_minutes(records[0]["TimeLimit"]) == 7


SCRIPTS = {
    "empty": "",
    "whitespace": " \n\t\n",
    "no-shebang": "hostname\n",
    "no-shebang-dos": "hostname\r\n",
    "nul": SH + "host\0name\n",
    "dos-nul": "#!/bin/bash\r\nhost\0\n",
    "dos": "#!/bin/bash\r\nhostname\r\n",
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_refused_scripts_with_sbatch_s_words(lab, name):
    records, err = sbatch(lab, [], SCRIPTS[name])
    assert records is None
    with pytest.raises(OptionError) as info:
        parse(lab, [], SCRIPTS[name])
    assert str(info.value) == f"job.sh: {err}"


def test_script_size_limit_as_slurmctld(lab):
    body = SH + "#" * (DEFAULT_MAX_SCRIPT_BYTES - len(SH) - 1) + "\n"
    records, err = sbatch(lab, [], body)
    assert records, err
    parse(lab, [], body)
    records, err = sbatch(lab, [], body + "#")
    assert records is None
    with pytest.raises(OptionError) as info:
        parse(lab, [], body + "#")
    assert str(info.value).startswith(f"job.sh: {err}")


REFUSED = [
    # (argv, env, sbatch's words, ours)
    ("--gres=gpu:h100:1 --gpus-per-node=1", {}, "with and without type identification", None),
    ("--gpus=h100:1,2", {}, "with and without type identification", None),
    ("--gpus-per-node=4 --gpus=2", {}, "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket",
     None),
    ("-N 1-3 --gpus-per-node=2 --gpus=8", {}, "required nodes (4) doesn't fall between min_nodes (1) and "
     "max_nodes (3) boundaries.", None),
    ("", {"SBATCH_EXCLUSIVE": "yes"}, "Invalid --exclusive specification", None),
    ("", {"SBATCH_EXCLUSIVE": "1"}, "Invalid --exclusive specification", None),
    ("--exclusive=topo", {}, "Invalid --exclusive specification", None),
    ("--foo", {}, "unrecognized option '--foo'", None),
    ("--gpu-isolaton=strict", {}, "unrecognized option '--gpu-isolaton=strict'", "did you mean --gpu-isolation?"),
    ("-n 0", {}, 'Invalid numeric value "0" for --ntasks.', "--ntasks: bad value '0'"),
    ("--gres=gpu:1g.10gb", {}, "Invalid Trackable RESource (TRES) specification", "gpu:1g.10gb:1"),
    ("--gres=gpu:1", {"SBATCH_GPUS_PER_NODE": "1"}, "--gpus-per-node and --gres=gpu are mutually exclusive", None),
    ("--requeue=again", {}, "doesn't allow an argument", "takes no value"),
]


# refused only before these releases (measured on 24.11.5: sbatch creates the job; so must gpusub's parse)
REFUSED_UNTIL = {"--exclusive=topo": (24, 11, 0), "--gres=gpu:1g.10gb": (24, 11, 0)}
# refused only from these releases, accepted before (measured on 26.05.5 and 24.11.5/22.05.8)
REFUSED_SINCE = {"--gres=gpu:1": (26, 5, 0)}
# sbatch's words from a release on, where they changed (26.05.5: the mix is refused before the types are compared)
THEIRS_SINCE = {
    "--gres=gpu:h100:1 --gpus-per-node=1": ((26, 5, 0), "--gpus-per-node and --gres=gpu are mutually exclusive"),
    "--requeue=again": ((25, 11, 0), "Invalid --requeue specification"),  # 25.11: --requeue[=expedite]
}


@pytest.mark.parametrize("argv, env, theirs, ours", REFUSED, ids=[a or str(e) for a, e, _, _ in REFUSED])
def test_refused_options_with_sbatch_s_reason(lab, argv, env, theirs, ours):
    until, first = REFUSED_UNTIL.get(argv), REFUSED_SINCE.get(argv)
    if argv in THEIRS_SINCE and tuple(lab.version) >= THEIRS_SINCE[argv][0]:
        theirs, ours = THEIRS_SINCE[argv][1], None  # our message quotes theirs
    if (until is not None and tuple(lab.version) >= until) or (first is not None and tuple(lab.version) < first):
        records, err = sbatch(lab, argv.split(), SH + "true\n", env)
        assert records is not None, err  # this release accepts it: so does the parse
        parse(lab, argv.split(), SH + "true\n", env)
        return
    records, err = sbatch(lab, argv.split(), SH + "true\n", env)
    assert records is None and theirs in err
    with pytest.raises(OptionError) as info:
        parse(lab, argv.split(), SH + "true\n", env)
    assert (ours or theirs) in str(info.value) and "\n" not in str(info.value)
