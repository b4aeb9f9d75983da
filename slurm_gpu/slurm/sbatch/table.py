# SPDX-License-Identifier: Apache-2.0
"""The sbatch option table (data only): every option sbatch accepts in Slurm 22.05 .. 26.05.

Read from sbatch(1) (doc/man/man1/sbatch.1) and cross-checked with sbatch's getopt table
(src/common/slurm_opt.c, src/sbatch/opt.c) at tags slurm-22-05-8-1, 23-02-8-1, 23-11-11-1, 24-05-8-1,
24-11-0-1, 25-05-8-1 and 25-11-7-1; 26.05 from sbatch(1) of Debian testing's slurm-client 26.05.5
(--container-type, --mem-update new; --uid/--gid deprecated) and that sbatch itself
(tests/sbatch/test_sbatch_lab.py::test_table_matches_the_real_sbatch). Columns:

- ``arg``: ``none`` / ``required`` / ``optional`` (getopt_long's no/required/optional_argument).
- ``env``: the ``SBATCH_*`` input environment variables that set the option (space separated).
- ``since`` / ``until``: first and last release with the option (``-`` = 22.05 / still present).
- flags: ``early`` = handled in sbatch's early pass only (ignored in ``#SBATCH`` lines);
  ``undoc`` = accepted by sbatch but not in sbatch(1) (it still matters for prefix matching);
  ``alias=X`` = same setting as option X; ``sameval`` = same getopt value as its alias (so a
  prefix matching both is not ambiguous); ``none@25.05`` = argument kind from that release on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from slurm_gpu.plain import NamedTuple, Record, record
from slurm_gpu.slurm.release import Version

OLDEST: Version = (22, 5, 0)
NEWEST: Version = (26, 5, 0)

# name                   short arg       env                                      since  until  flags
_TABLE = """
account                  A     required  SBATCH_ACCOUNT                           -      -
acctg-freq               -     required  SBATCH_ACCTG_FREQ                        -      -
array                    a     required  SBATCH_ARRAY_INX                         -      -
autocomplete             -     required  -                                        23.02  -      undoc
batch                    -     required  SBATCH_BATCH                             -      -
bb                       -     required  SBATCH_BURST_BUFFER                      -      -
bbf                      -     required  -                                        -      -
begin                    b     required  -                                        -      -
chdir                    D     required  -                                        -      -
cluster                  -     required  -                                        -      -      undoc alias=clusters
cluster-constraint       -     required  SBATCH_CLUSTER_CONSTRAINT                -      -
clusters                 M     required  SBATCH_CLUSTERS,SLURM_CLUSTERS           -      -
comment                  -     required  -                                        -      -
consolidate-segments     -     none      SBATCH_CONSOLIDATE_SEGMENTS              25.11  -
constraint               C     required  SBATCH_CONSTRAINT                        -      -
container                -     required  SBATCH_CONTAINER                         -      -
container-id             -     required  SBATCH_CONTAINER_ID                      23.02  -
container-type           -     required  SBATCH_CONTAINER_TYPE                    26.05  -
context                  -     required  -                                        -      -      undoc
contiguous               -     none      -                                        -      -
core-spec                S     required  SBATCH_CORE_SPEC                         -      -
cores-per-socket         -     required  -                                        -      -
cpu-freq                 -     required  SBATCH_CPU_FREQ_REQ                      -      -
cpus-per-gpu             -     required  SBATCH_CPUS_PER_GPU                      -      -
cpus-per-task            c     required  -                                        -      -
deadline                 -     required  -                                        -      -
delay-boot               -     required  SBATCH_DELAY_BOOT                        -      -
dependency               d     required  -                                        -      -
distribution             m     required  SBATCH_DISTRIBUTION                      -      -
error                    e     required  SBATCH_ERROR                             -      -
exclude                  x     required  -                                        -      -
exclusive                -     optional  SBATCH_EXCLUSIVE                         -      -
export                   -     required  SBATCH_EXPORT                            -      -
export-file              -     required  -                                        -      -
external                 -     none      -                                        25.05  -      undoc
extra                    -     required  -                                        23.02  -
extra-node-info          B     required  -                                        -      -
get-user-env             -     optional  SBATCH_GET_USER_ENV                      -      -      none@25.05
gid                      -     required  -                                        -      -
gpu-bind                 -     required  SBATCH_GPU_BIND                          -      -
gpu-freq                 -     required  SBATCH_GPU_FREQ                          -      -
gpus                     G     required  SBATCH_GPUS                              -      -
gpus-per-node            -     required  SBATCH_GPUS_PER_NODE                     -      -
gpus-per-socket          -     required  SBATCH_GPUS_PER_SOCKET                   -      -
gpus-per-task            -     required  SBATCH_GPUS_PER_TASK                     -      -
gres                     -     required  SBATCH_GRES                              -      -
gres-flags               -     required  SBATCH_GRES_FLAGS                        -      -
help                     h     none      -                                        -      -      early
hint                     -     required  SLURM_HINT,SBATCH_HINT                   -      -
hold                     H     none      -                                        -      -
ignore-pbs               -     none      SBATCH_IGNORE_PBS                        -      -
input                    i     required  SBATCH_INPUT                             -      -
job-name                 J     required  SBATCH_JOB_NAME                          -      -
kill-on-invalid-dep      -     required  -                                        -      -
licenses                 L     required  -                                        -      -
mail-type                -     required  -                                        -      -
mail-user                -     required  -                                        -      -
mcs-label                -     required  -                                        -      -
mem                      -     required  SBATCH_MEM_PER_NODE                      -      -
mem-bind                 -     required  SBATCH_MEM_BIND                          -      -
mem-per-cpu              -     required  SBATCH_MEM_PER_CPU                       -      -
mem-per-gpu              -     required  SBATCH_MEM_PER_GPU                       -      -
mem-update               -     required  -                                        26.05  -
mincpus                  -     required  -                                        -      -
network                  -     required  SBATCH_NETWORK                           -      -
nice                     -     optional  -                                        -      -
no-kill                  k     optional  SBATCH_NO_KILL                           -      -
no-requeue               -     none      SBATCH_NO_REQUEUE                        -      -
nodefile                 F     required  -                                        -      -
nodelist                 w     required  -                                        -      -
nodes                    N     required  -                                        -      -
ntasks                   n     required  -                                        -      -
ntasks-per-core          -     required  -                                        -      -
ntasks-per-gpu           -     required  -                                        -      -
ntasks-per-node          -     required  -                                        -      -
ntasks-per-socket        -     required  -                                        -      -
ntasks-per-tres          -     required  -                                        -      -      undoc
oom-kill-step            -     optional  -                                        24.11  -
open-mode                -     required  SBATCH_OPEN_MODE                         -      -
output                   o     required  SBATCH_OUTPUT                            -      -
overcommit               O     none      SBATCH_OVERCOMMIT                        -      -
oversubscribe            s     none      -                                        -      -
parsable                 -     none      -                                        -      -
partition                p     required  SBATCH_PARTITION                         -      -
power                    -     required  SBATCH_POWER                             -      23.11
prefer                   -     required  -                                        -      -
priority                 -     required  -                                        -      -
profile                  -     required  SBATCH_PROFILE                           -      -
propagate                -     optional  -                                        -      -
qos                      q     required  SBATCH_QOS                               -      -
quiet                    Q     none      -                                        -      -      early
reboot                   -     none      -                                        -      -
requeue                  -     optional  SBATCH_REQUEUE                           -      -      none@22.05 optional@25.11
reservation              -     required  SBATCH_RESERVATION                       -      -
resources                -     required  -                                        25.11  -
resv-ports               -     optional  -                                        24.05  -
segment                  -     required  SBATCH_SEGMENT_SIZE                      24.05  -
signal                   -     required  SBATCH_SIGNAL                            -      -
sockets-per-node         -     required  -                                        -      -
spread-job               -     none      SBATCH_SPREAD_JOB                        -      -
spread-segments          -     none      SBATCH_SPREAD_SEGMENTS                   25.11  -
stepmgr                  -     none      -                                        24.05  -
switches                 -     required  SBATCH_REQ_SWITCH                        -      -
tasks-per-node           -     required  -                                        -      -      undoc alias=ntasks-per-node sameval
test-only                -     none      -                                        -      -
thread-spec              -     required  SBATCH_THREAD_SPEC                       -      -
threads-per-core         -     required  SBATCH_THREADS_PER_CORE                  -      -
time                     t     required  SBATCH_TIMELIMIT                         -      -
time-min                 -     required  -                                        -      -
tmp                      -     required  -                                        -      -
tres-bind                -     required  SBATCH_TRES_BIND                         23.11  -
tres-per-task            -     required  SBATCH_TRES_PER_TASK                     23.02  -
uid                      -     required  -                                        -      -
usage                    -     none      -                                        -      -      early
use-min-nodes            -     none      SBATCH_USE_MIN_NODES                     -      -
verbose                  v     none      SBATCH_DEBUG                             -      -      early
version                  V     none      -                                        -      -      early
wait                     W     none      SBATCH_WAIT                              -      -
wait-all-nodes           -     required  SBATCH_WAIT_ALL_NODES                    -      -
wckey                    -     required  SBATCH_WCKEY                             -      -
wrap                     -     required  -                                        -      -      early
"""

# The order in which sbatch reads its input environment (src/sbatch/opt.c env_vars[], 25.11): a later
# variable for the same option wins (SLURM_CLUSTERS over SBATCH_CLUSTERS, SBATCH_HINT over SLURM_HINT).
# SBATCH_WAIT4SWITCH (and SBATCH_POWER from 24.05) set no named option; sbatch reads them itself.
ENV_ORDER: tuple[str, ...] = tuple((
    "SBATCH_ACCOUNT SBATCH_ARRAY_INX SBATCH_ACCTG_FREQ SBATCH_BATCH SBATCH_BURST_BUFFER "
    "SBATCH_CLUSTER_CONSTRAINT SBATCH_CLUSTERS SLURM_CLUSTERS SBATCH_CONSOLIDATE_SEGMENTS SBATCH_CONTAINER "
    "SBATCH_CONTAINER_ID SBATCH_CONTAINER_TYPE SBATCH_CONSTRAINT SBATCH_CORE_SPEC SBATCH_CPU_FREQ_REQ SBATCH_CPUS_PER_GPU "
    "SBATCH_DELAY_BOOT SBATCH_DISTRIBUTION SBATCH_EXCLUSIVE SBATCH_EXPORT SBATCH_GET_USER_ENV SBATCH_GRES "
    "SBATCH_GRES_FLAGS SBATCH_GPUS SBATCH_GPU_BIND SBATCH_GPU_FREQ SBATCH_GPUS_PER_NODE "
    "SBATCH_GPUS_PER_SOCKET SBATCH_GPUS_PER_TASK SLURM_HINT SBATCH_HINT SBATCH_JOB_NAME SBATCH_MEM_BIND "
    "SBATCH_MEM_PER_CPU SBATCH_MEM_PER_GPU SBATCH_MEM_PER_NODE SBATCH_NETWORK SBATCH_NO_KILL "
    "SBATCH_NO_REQUEUE SBATCH_OPEN_MODE SBATCH_OVERCOMMIT SBATCH_PARTITION SBATCH_POWER SBATCH_PROFILE "
    "SBATCH_QOS SBATCH_REQ_SWITCH SBATCH_REQUEUE SBATCH_RESERVATION SBATCH_SEGMENT_SIZE SBATCH_SIGNAL "
    "SBATCH_SPREAD_JOB SBATCH_SPREAD_SEGMENTS SBATCH_THREAD_SPEC SBATCH_THREADS_PER_CORE SBATCH_TIMELIMIT "
    "SBATCH_TRES_BIND SBATCH_TRES_PER_TASK SBATCH_USE_MIN_NODES SBATCH_WAIT SBATCH_WAIT_ALL_NODES "
    "SBATCH_WCKEY SBATCH_ERROR SBATCH_INPUT SBATCH_OUTPUT SBATCH_IGNORE_PBS SBATCH_DEBUG"
).split())

# Input variables sbatch reads that are not tied to a named option (see above).
ENV_ONLY: tuple[str, ...] = ("SBATCH_WAIT4SWITCH",)

# Options sbatch(1) calls deprecated, from the release that says so (they still work there): 26.05.5's sbatch.1,
# "NOTE: The --uid argument is deprecated and will be removed in a future release" (and --gid); CHANGELOG 26.05.
DEPRECATED: dict[str, Version] = {"uid": (26, 5, 0), "gid": (26, 5, 0)}

# Options that write the same field inside sbatch: the last one processed wins over the others.
SAME_FIELD: tuple[frozenset[str], ...] = (
    frozenset({"exclusive", "oversubscribe"}),
    frozenset({"requeue", "no-requeue"}),
    frozenset({"nodelist", "nodefile"}),
    frozenset({"clusters", "cluster"}),
    frozenset({"ntasks-per-gpu", "ntasks-per-tres"}),
)

# --exclusive and --oversubscribe: up to 22.05 one field (the last one wins, as in SAME_FIELD); 24.11's
# sbatch refuses both given on the command line or in the script ("--exclusive and --oversubscribe
# options are mutually exclusive"). Seen on 22.05.8 and 24.11.5; the releases between are not checked.
EXCLUSIVE_CONFLICT_SINCE: Version = (24, 11, 0)

# --mem, --mem-per-cpu and --mem-per-gpu exclude each other (slurm_opt.c _validate_memory_options).
MEMORY_GROUP: tuple[str, ...] = ("mem", "mem-per-cpu", "mem-per-gpu")


class SbatchOption(NamedTuple):  # NamedTuples: a frozen dataclass costs ~1 ms at import
    """One row of the table."""

    name: str
    short: str | None
    arg: str  # "none" | "required" | "optional" (the newest release's kind)
    env: tuple[str, ...]
    since: Version = OLDEST
    until: Version | None = None
    early: bool = False
    documented: bool = True
    alias_of: str | None = None
    same_val: bool = False
    arg_by_version: tuple[tuple[Version, str], ...] = ()

    @property
    def canonical(self) -> str:
        return self.alias_of or self.name

    def exists_in(self, version: Version | None) -> bool:
        if version is None:
            return True
        return self.since <= version and (self.until is None or version[:2] <= self.until[:2])

    def arg_in(self, version: Version | None) -> str:
        """The argument kind in ``version`` (None = the most permissive kind any release accepts)."""
        if version is None or not self.arg_by_version:
            return self.arg
        kind = self.arg
        for since, k in self.arg_by_version:
            if since <= version:
                kind = k
        return kind


def _version(text: str) -> Version:
    major, minor = text.split(".")
    return int(major), int(minor), 0


def _load() -> tuple[SbatchOption, ...]:
    rows = []
    for line in _TABLE.strip().splitlines():
        name, short, arg, env, since, until, *flags = line.split()
        kw: dict[str, Any] = {}
        arg_changes = []
        for flag in flags:
            if flag == "early":
                kw["early"] = True
            elif flag == "undoc":
                kw["documented"] = False
            elif flag == "sameval":
                kw["same_val"] = True
            elif flag.startswith("alias="):
                kw["alias_of"] = flag[6:]
            elif "@" in flag:
                kind, ver = flag.split("@")
                arg_changes.append((_version(ver), kind))
        if arg_changes:
            # the first listed change starts at 22.05 unless given; the base kind is the permissive one
            first = min(arg_changes)[0]
            if first != OLDEST:
                arg_changes.insert(0, (OLDEST, arg))
            kw["arg_by_version"] = tuple(sorted(arg_changes))
        rows.append(
            SbatchOption(
                name=name,
                short=None if short == "-" else short,
                arg=arg,
                env=() if env == "-" else tuple(env.split(",")),
                since=OLDEST if since == "-" else _version(since),
                until=None if until == "-" else _version(until),
                **kw,
            )
        )
    return tuple(rows)


SBATCH_OPTIONS: tuple[SbatchOption, ...] = _load()
BY_NAME: dict[str, SbatchOption] = {o.name: o for o in SBATCH_OPTIONS}
BY_SHORT: dict[str, SbatchOption] = {o.short: o for o in SBATCH_OPTIONS if o.short}
BY_ENV: dict[str, SbatchOption] = {e: o for o in SBATCH_OPTIONS for e in o.env}


class GpusubOption(NamedTuple):
    """One of gpusub's own options (command line only)."""

    name: str
    key: str  # the field of GpusubOptions (Submission.gpusub)
    takes_value: bool
    choices: tuple[str, ...] = ()
    passthrough: bool = False  # also an sbatch option: it stays in the sbatch options
    help: str = ""


GPUSUB_OPTIONS: tuple[GpusubOption, ...] = (
    GpusubOption("explain", "explain", False, help="print the policy decision and the binding plan"),
    GpusubOption("json", "json", False, help="print the result as JSON"),
    GpusubOption("dry-run", "dry_run", False, help="render and print; do not submit"),
    GpusubOption("test-only", "test_only", False, passthrough=True, help="sbatch --test-only"),
    GpusubOption("wait", "wait", False, help="follow the job to its end; exit with its exit code"),
    GpusubOption("policy", "policy", True, help="site policy file"),
    GpusubOption("class", "job_class", True, help="job class from the policy"),
    GpusubOption("interactive", "interactive", False,
                 help="classify as an interactive session, as salloc or srun would be (with --explain only)"),
    GpusubOption("gpu-isolation", "gpu_isolation", True, ("strict", "shared")),
    GpusubOption("launch", "launch", True, ("batch", "per-gpu")),
    GpusubOption("gpu-fraction", "gpu_fraction", True, help="part of one GPU (MIG slice or MPS share), e.g. 0.25"),
    GpusubOption("mig", "mig", True,
                 help="a MIG layout on each of the job's whole GPUs (dynamic MIG nodes), e.g. 3g.40gb:2"),
    GpusubOption("mps", "mps", True, help="a per-job MPS daemon on the job's GPUs, each client's share in %, e.g. 25"),
    GpusubOption("model-params", "model_params", True, help="model size, e.g. 7B, 1.5e9"),
    GpusubOption("precision", "precision", True, ("bf16", "fp16", "fp32")),
    GpusubOption("optimizer", "optimizer", True, ("adam", "sgd", "none")),
    GpusubOption("checkpoint", "checkpoint", False,
                 help="run under the checkpoint protocol: stop signal, markers, requeue (docs/checkpointing.md)"),
    GpusubOption("ckpt-signal", "ckpt_signal", True, help="the checkpoint protocol's stop signal (default USR2)"),
    GpusubOption("ckpt-grace", "ckpt_grace", True, help="time the payload has to save after the stop signal"),
)
GPUSUB_BY_NAME: dict[str, GpusubOption] = {o.name: o for o in GPUSUB_OPTIONS}


@record
class GpusubOptions(Record):
    """gpusub's own options as the user gave them (``Submission.gpusub``): one field per
    ``GPUSUB_OPTIONS`` key (a test keeps the two the same). Flags are bools; values stay the user's text,
    already checked by the parser (``--mig``/``--mps``/``--gpu-fraction``/``--model-params`` forms,
    choices). A :func:`slurm_gpu.plain.record` (a frozen dataclass with shared methods): as
    ``dataclass(frozen=True, slots=True)`` its 19 fields cost every gpusub start about 1 ms more."""

    explain: bool = False
    json: bool = False
    dry_run: bool = False
    test_only: bool = False
    wait: bool = False
    policy: str | None = None
    job_class: str | None = None
    interactive: bool = False
    gpu_isolation: str | None = None
    launch: str | None = None
    gpu_fraction: str | None = None
    mig: str | None = None
    mps: str | None = None
    model_params: str | None = None
    precision: str | None = None
    optimizer: str | None = None
    checkpoint: bool = False
    ckpt_signal: str | None = None
    ckpt_grace: str | None = None

    @classmethod
    def of(cls, values: Mapping[str, str | bool]) -> GpusubOptions:
        """The record of the parser's values by ``GPUSUB_OPTIONS`` key: a flag is True only as True, a
        value only as text (anything else is the field's default)."""

        def flag(key: str) -> bool:
            return values.get(key) is True

        def text(key: str) -> str | None:
            value = values.get(key)
            return value if isinstance(value, str) else None

        return cls(explain=flag("explain"), json=flag("json"), dry_run=flag("dry_run"),
                   test_only=flag("test_only"), wait=flag("wait"), policy=text("policy"),
                   job_class=text("job_class"), interactive=flag("interactive"),
                   gpu_isolation=text("gpu_isolation"), launch=text("launch"),
                   gpu_fraction=text("gpu_fraction"), mig=text("mig"), mps=text("mps"),
                   model_params=text("model_params"), precision=text("precision"),
                   optimizer=text("optimizer"), checkpoint=flag("checkpoint"),
                   ckpt_signal=text("ckpt_signal"), ckpt_grace=text("ckpt_grace"))


# --- SPANK plugin options ---------------------------------------------------------------------------

_SPANK_HEADER = "Options provided by plugins:"
_SPANK_LINE = re.compile(r"^\s+--([A-Za-z0-9][A-Za-z0-9_.\-]*)(=)?")


def spank_options_from_help(help_text: str) -> tuple[SbatchOption, ...]:
    """The SPANK plugin options in ``sbatch --help`` (its "Options provided by plugins:" section,
    printed by src/common/spank.c as ``--name[=ARGINFO]`` with the help on the same or the next line).
    An option shown with ``=`` takes a value (pyxis' ``--container-image=IMAGE``), one without takes none."""
    found: list[SbatchOption] = []
    inside = False
    for line in help_text.splitlines():
        if line.strip() == _SPANK_HEADER:
            inside = True
            continue
        if inside and line.strip() and not line[:1].isspace():
            break  # the next section ("Help options:", ...)
        m = _SPANK_LINE.match(line) if inside else None
        if m and m.group(1) not in BY_NAME:
            found.append(SbatchOption(m.group(1), None, "required" if m.group(2) else "none", ()))
    return tuple(found)
