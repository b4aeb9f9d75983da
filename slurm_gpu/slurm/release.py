# SPDX-License-Identifier: Apache-2.0
"""Per-version Slurm facts: the spellings of the options and outputs slurm-gpu uses, one table, one lookup.

Facts measured in the lab (22.05.8 on Debian 12, 24.11.5 on Debian 13, 26.05.5 on Debian testing: notes/
slurm-lab.md, .ci/in-root) or read from Slurm's release notes/man pages/source (marked "docs"; the 25.05-26.05
sources are in notes/field-notes-2026-12.md Q1). docs/slurm-versions.md is the table in words. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, TypeVar

from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple

Version = tuple[int, int, int]  # (major, minor, micro): 22.05.8 -> (22, 5, 8); the one version type
T = TypeVar("T")


def as_version(version: tuple[int, ...]) -> Version:
    """``(24, 11)`` -> ``(24, 11, 0)``: a release series given as (major, minor) means its first micro."""
    full = tuple(version) + (0,) * (3 - len(version))
    return full[0], full[1], full[2]


def _leading_int(text: str) -> int:
    digits = ""
    for ch in text:
        if not is_digits(ch):
            break
        digits += ch
    return int(digits or 0)


def parse_sbatch_version(text: str) -> Version:
    """``"slurm 22.05.8"`` / ``"slurm-wlm 24.11.5"`` / ``"24.11.0-0rc1"`` -> (major, minor, micro)."""
    for word in (text or "").replace("-", " ").split():
        parts = word.split(".")
        if len(parts) >= 2 and is_digits(parts[0]) and is_digits(parts[1]):
            return int(parts[0]), int(parts[1]), _leading_int(parts[2]) if len(parts) > 2 else 0
    from slurm_gpu.errors import SlurmGpuError

    raise SlurmGpuError(
        f"cannot read a Slurm version from {(text or '').strip()[:60]!r}; "
        "expected 'slurm 22.05.8' or 'slurm-wlm 24.11.5'"
    )


class SlurmSpelling(NamedTuple):  # a NamedTuple: a frozen dataclass costs gpusub ~1 ms at import
    """How one Slurm version spells GPU options and JSON. Build it with :func:`spelling_for`."""

    version: Version
    gres_prefix: str  # TRES strings in job records / job_submit: "gres:" (< 23.11) or "gres/" (>= 23.11)
    has_tres_bind: bool  # --tres-bind exists (>= 23.11; 22.05 sbatch: "unrecognized option")
    has_allow_task_sharing: bool  # --gres-flags=allow-task-sharing (>= 23.11.4; srun only)
    allow_task_sharing_srun_only: bool  # sbatch refuses it: "... is only used with srun."
    has_scontrol_json: bool  # scontrol show ... --json (not in 22.05; 24.11 measured; >= 23.02 docs)
    tres_per_task_sep: str  # count separator in tres_per_task: ":" (< 24.05) or "=" (>= 24.05)
    typed_gpus_per_task_ok: bool  # --gpus-per-task=TYPE:N works in steps (22.05.8: CVD empty)
    cpus_per_gpu_excludes_cpus_per_task: bool  # 23.11: both together is fatal
    gpus_per_task_implies_isolation: bool  # --gpus-per-task implies per_task GPU binding (>= 21.08)
    job_state_is_list: bool  # squeue/scontrol JSON job_state: "RUNNING" (<= 23.02) or ["RUNNING"]
    json_numbers_wrapped: bool  # JSON numbers as {"set","infinite","number"} (>= 23.02 data_parser)
    sinfo_json_key: str  # "nodes" (openapi v0.0.38/39) or "sinfo" (data_parser >= v0.0.40)
    enforce_binding_keeps_shape: bool  # --gres-flags=enforce-binding leaves NumCPUs/NumNodes/NumTasks as asked
    # The job reader (docs/records.md): squeue's JSON, whose strings user text cannot leave.
    squeue_json: str  # the option: "--json" (22.05: takes no argument), "--json=v0.0.42" (24.11-25.11), v0.0.45 (26.05)
    squeue_json_filters: bool  # squeue --json honours -j/-t (24.11 measured); 22.05 prints every job it holds
    # sbatch writes --gpus-per-task (with --cpus-per-task, --tres-per-task) into the job's SLURM_TRES_PER_TASK
    # and sets no SLURM_GPUS_PER_TASK (slurm_gpu/render/job_env.py): 22.05.8 sets SLURM_GPUS_PER_TASK and no
    # SLURM_TRES_PER_TASK (measured); 24.11.5 the other way round (measured: the corpus' --gpus-per-task jobs)
    sets_tres_per_task_env: bool
    # a script read from stdin, no --job-name: the job is named "sbatch"; SLURM_JOB_NAME is not set in the job
    # on 22.05.8 (measured), set to "sbatch" on 24.11.5 (measured); 23.x not measured (taken as 22.05)
    stdin_job_name_env: bool
    # sbatch refuses --gpus-per-node with --gres=gpu (26.05: "fatal: --gpus-per-node and --gres=gpu are mutually
    # exclusive.", exit 1, from any mix of #SBATCH lines, SBATCH_* and the command line; measured on 26.05.5)
    gpus_per_node_excludes_gres_gpu: bool
    # AutoDetect=nvml names a MIG device's profile from nvmlDeviceGetAttributes, "<slices>g.<GiB rounded>gb"
    # (22.05: 3g.40gb of an A100 80GB becomes 3g.39gb), not from the NVML device name ("... MIG 3g.40gb")
    mig_profile_from_attributes: bool
    # a preempted (PreemptMode=REQUEUE) batch job whose shell dies of --signal's signal before its trap (the
    # signal comes at once under preempt_send_user_signal): 22.05.8 ends it FAILED (ExitCode 0:12,
    # JobLaunchFailure; slurm-gpu-epilog-ctld requeues it, docs/checkpointing.md); 24.11.5 and 26.05.5 requeue it
    # themselves (measured: tests/checkpoint/test_lab_preempted_at_start.py). 23.x not measured (taken as 22.05)
    requeues_preempted_killed_by_signal: bool
    # slurmctld logs each backfill start at info ("sched/backfill: _start_job: Started JobId=..."; the lab
    # replay's times to the millisecond, sim/ctld_log.py): 22.05.8 and 24.11.5 (measured); 26.05.5 does not
    # (measured: a backfill-started job has no start line; its sched_backfill.so keeps "Started %pJ in %s on
    # %s" only as "HETJOB: Started"). 25.05-25.11 not measured (taken as 24.11)
    logs_backfill_starts: bool
    detected: bool = True  # False: sbatch could not be asked; these are DEFAULT_VERSION's spellings

    @property
    def label(self) -> str:
        return "{}.{:02d}.{}".format(*self.version)

    def gpu_bind(self, kind: str) -> str:
        """The srun option for a GPU binding *kind* such as ``"single:1"``, ``"closest"``, ``"map_gpu:0,1"``.

        Uses ``--gpu-bind`` on every version: 24.11 still accepts it as "equivalent to
        --tres-bind=gres/gpu:..." (measured), and it is the only spelling 22.05 knows.
        """
        return f"--gpu-bind={kind}"

    def tres_bind(self, kind: str) -> str:
        """The ``--tres-bind`` form (>= 23.11 only); it needs the ``gres/`` prefix (``gpu:closest`` is refused)."""
        if not self.has_tres_bind:
            from slurm_gpu.errors import SlurmGpuError

            raise SlurmGpuError(f"Slurm {self.label} has no --tres-bind; use {self.gpu_bind(kind)}")
        if kind.startswith("map_gpu:"):
            kind = "map:" + kind[len("map_gpu:"):]
        elif kind.startswith("mask_gpu:"):
            kind = "mask:" + kind[len("mask_gpu:"):]
        return f"--tres-bind=gres/gpu:{kind}"

    def gres(self, spec: str) -> str:
        """A job-record TRES string for *spec* (``"gpu:h100:2"`` -> ``"gres:gpu:h100:2"`` or ``"gres/gpu:h100:2"``)."""
        return self.gres_prefix + spec


# (first version, field overrides): each row applies from that version on. The one table.
_TABLE: tuple[tuple[Version, dict[str, Any]], ...] = (
    ((0, 0, 0), dict(gres_prefix="gres:", has_tres_bind=False, has_allow_task_sharing=False,
                     allow_task_sharing_srun_only=True, has_scontrol_json=False, tres_per_task_sep=":",
                     typed_gpus_per_task_ok=False, cpus_per_gpu_excludes_cpus_per_task=False,
                     gpus_per_task_implies_isolation=True, job_state_is_list=False,
                     json_numbers_wrapped=False, sinfo_json_key="nodes", enforce_binding_keeps_shape=True,
                     # measured on 22.05.8: openapi/v0.0.38; `--json=X` is refused ("doesn't allow an
                     # argument"); -j and -t are ignored (every job slurmctld holds, finished ones too)
                     squeue_json="--json", squeue_json_filters=False,
                     sets_tres_per_task_env=False, stdin_job_name_env=False,
                     gpus_per_node_excludes_gres_gpu=False,
                     # code-read and measured on 22.05.8 (gpu_nvml.c _handle_mig; tests/topology/
                     # test_slurm_detection.py: "MIG Profile: nvidia_a100_3g.39gb")
                     mig_profile_from_attributes=True, requeues_preempted_killed_by_signal=False,
                     logs_backfill_starts=True)),
    ((23, 2, 0), dict(has_scontrol_json=True, json_numbers_wrapped=True,  # docs: data_parser plugins
                      # measured on 24.11.5 (docs/gpusub.md "Placement"): with enforce-binding a job with
                      # --cpus-per-task gets every core of its GPUs' sockets (-c 8 + 2 h100: NumCPUs=16, not 8;
                      # -c 8 + 4 a100: 32) and --gpus=h100:8 spreads over 2 nodes (NumNodes=2, NumTasks=2);
                      # 22.05.8 keeps the shape. 23.02-24.05 not measured: treated as 24.11 (the shape rule wins)
                      enforce_binding_keeps_shape=False)),
    ((23, 11, 0), dict(gres_prefix="gres/", has_tres_bind=True, cpus_per_gpu_excludes_cpus_per_task=True,
                       job_state_is_list=True, sinfo_json_key="sinfo",
                       # docs: 23.11 adds --tres-per-task and its output variable (measured on 24.11.5)
                       sets_tres_per_task_env=True)),
    ((23, 11, 4), dict(has_allow_task_sharing=True)),
    ((24, 5, 0), dict(tres_per_task_sep="=")),
    # measured on 24.11.5: typed --gpus-per-task; squeue --json=v0.0.42 (data_parser/v0.0.40-42 ship; v0.0.42
    # is the one 24.11-26.05 all ship, notes/field-notes-2026-12.md) honours -j and -t
    ((24, 11, 0), dict(typed_gpus_per_task_ok=True, squeue_json="--json=v0.0.42", squeue_json_filters=True,
                       stdin_job_name_env=True,
                       # measured on 24.11.5 (test_slurm_detection.py: "MIG Profile: nvidia_a100_3g.40gb"):
                       # the profile comes from the NVML MIG device name. 23.02-24.05 not checked
                       mig_profile_from_attributes=False, requeues_preempted_killed_by_signal=True)),
    # 26.05: CHANGELOG/slurm-26.05.md 26.05.0rc1 and sbatch.1 ("mutually exclusive with --gpus-per-node");
    # measured on 26.05.5 (Debian testing)
    # 26.05: v0.0.42 deprecated (removed in 26.11): squeue --json=v0.0.45, its default (measured on 26.05.5: the
    # records read from v0.0.45 equal v0.0.42's, SubmitLine aside, with stdout_expanded for the paths)
    ((26, 5, 0), dict(gpus_per_node_excludes_gres_gpu=True, squeue_json="--json=v0.0.45",
                      logs_backfill_starts=False)),
)

GPUS_PER_NODE_WITH_GRES_GPU = "--gpus-per-node and --gres=gpu are mutually exclusive."  # 26.05.5's sbatch, verbatim

# Jobs are read from squeue's JSON only (docs/records.md): scontrol's job text prints the user's name,
# comment, paths and, from 26.05, SubmitLine= (the whole command line, mid-record; notes of issue 21) raw.
# The JSON shapes of squeue --json that slurm_gpu.slurm.records reads (meta.plugin.type on 22.05, meta.plugin
# .data_parser from 23.02), with the releases that print them. "plain": numbers are numbers, job_state a string;
# "wrapped": numbers are {"set", "infinite", "number"}, job_state a list of flags (v0.0.40 and later).
JSON_DIALECTS: dict[str, str] = {
    "openapi/v0.0.37": "plain",  # 21.08 (docs)
    "openapi/v0.0.38": "plain",  # 22.05.8 (measured)
    "data_parser/v0.0.39": "wrapped",  # 23.02 (docs)
    "data_parser/v0.0.40": "wrapped",  # 23.11-24.11 (measured on 24.11.5 with --json=v0.0.40)
    "data_parser/v0.0.41": "wrapped",  # 24.05-25.11 (docs)
    "data_parser/v0.0.42": "wrapped",  # 24.11-26.05 (measured on 24.11.5; pinned there; deprecated in 26.05)
    "data_parser/v0.0.43": "wrapped",  # 25.05-26.05 (docs; measured on 26.05.5: stdout_expanded beside the pattern)
    "data_parser/v0.0.44": "wrapped",  # 25.11-26.05 (docs; measured on 26.05.5)
    "data_parser/v0.0.45": "wrapped",  # 26.05 (measured on 26.05.5: squeue's default there; pinned there)
}
# The data_parser versions each release ships (src/plugins/data_parser; RELEASE_NOTES: v0.0.40 removed in 25.11,
# v0.0.41 in 26.05, v0.0.42 deprecated in 26.05 and removed in 26.11). 26.05.5's `squeue --json=list` printed
# v0.0.42-45 (measured). The reader pins one its release ships (_TABLE's squeue_json): v0.0.42 on 24.11-25.11, where
# it is not deprecated, v0.0.45 on 26.05; tests/gpusub/test_slurm_version.py checks the pin is shipped and known.
JSON_SHIPPED: tuple[tuple[Version, tuple[str, ...]], ...] = (
    ((22, 5, 0), ("openapi/v0.0.36", "openapi/v0.0.37", "openapi/v0.0.38")),
    ((23, 2, 0), ("data_parser/v0.0.39",)),
    ((24, 11, 0), ("data_parser/v0.0.40", "data_parser/v0.0.41", "data_parser/v0.0.42")),
    ((25, 5, 0), ("data_parser/v0.0.40", "data_parser/v0.0.41", "data_parser/v0.0.42", "data_parser/v0.0.43")),
    ((25, 11, 0), ("data_parser/v0.0.41", "data_parser/v0.0.42", "data_parser/v0.0.43", "data_parser/v0.0.44")),
    ((26, 5, 0), ("data_parser/v0.0.42", "data_parser/v0.0.43", "data_parser/v0.0.44", "data_parser/v0.0.45")),
)

# ---- slurm.conf, environment and job states, per release (notes/field-notes-2026-12.md Q1 has the sources) ----
# A row (first release, value) holds from that release on; since() reads a table at a version.

# The slurm.conf line that sends a job's --signal at a preemption's grace start: 22.05 SlurmctldParameters=
# preempt_send_user_signal (it dies on the unknown key PreemptParameters); PreemptParameters=send_user_signal
# from 23.02 (commit f62851bfd7, slurm.conf.5 @24.11/@26.05; the old name is gone from 26.05's read_config.c).
# Measured: the lab's slurm.conf on 22.05.8, 24.11.5 and 26.05.5.
PREEMPT_SIGNAL_LINE: tuple[tuple[Version, str], ...] = (
    ((0, 0, 0), "SlurmctldParameters=preempt_send_user_signal"),
    ((23, 2, 0), "PreemptParameters=send_user_signal"),
)
# How a node's GresUsed (scontrol show node -d, sinfo GresUsed) counts gres/shard (slurm_gpu.slurm.records reads
# every form on every release): "idx" 22.05 (shard:h100:2(IDX:0-1): the GPUs with shards held, not the shards;
# measured 22.05.8); "per_gpu" 23.02+ (shard:h100:7(3/4,4/4,0/4,...): held/total per GPU; measured 24.11.5);
# "per_gpu_dash" 26.05 ("-/4" for a GPU allocated whole: CHANGELOG 26.05 "Improve clarity of gres/shards in sinfo
# GRES_USED field"; measured 26.05.5). Jobs' GRES (gres_detail) keep "0/4" there on 26.05.5.
SHARD_GRES_USED: tuple[tuple[Version, str], ...] = (
    ((0, 0, 0), "idx"), ((23, 2, 0), "per_gpu"), ((26, 5, 0), "per_gpu_dash"),
)
# The Prolog/Epilog time limits slurm.conf takes: PrologEpilogTimeout (both; every release, unlimited by
# default), and from 25.05 PrologTimeout / EpilogTimeout for each alone, PrologEpilogTimeout their default
# (slurm.conf.5 @26.05.3; CHANGELOG/slurm-25.05.md rc1). A Prolog past it: the job requeued, the node drained.
PROLOG_TIMEOUT_KEYS: tuple[tuple[Version, tuple[str, ...]], ...] = (
    ((0, 0, 0), ("PrologEpilogTimeout",)),
    ((25, 5, 0), ("PrologEpilogTimeout", "PrologTimeout", "EpilogTimeout")),
)
# What CUDA_VISIBLE_DEVICES holds, per place: "index" (GPU indices) or "uuid" (GPU-<uuid>, MIG-<uuid>);
# SLURM_JOB_GPUS stays the index list everywhere, so readers prefer it. 25.11: NVML AutoDetect records each
# whole GPU's UUID (commit 5cc3f41585) and the Prolog/Epilog environment uses it (gres_common.c); 26.05:
# gres.conf Flags=env_uuid puts UUIDs in the job's environment too (gres.conf.5 @26.05.3, commit fc1f3f48cc).
# MIG slices are UUIDs in the job's environment on every release. Docs, not measured (the lab has no NVML).
DEVICE_ENV: tuple[tuple[Version, dict[str, str]], ...] = (
    ((0, 0, 0), {"prolog": "index", "job": "index", "job_env_uuid": "index"}),
    ((25, 11, 0), {"prolog": "uuid", "job": "index", "job_env_uuid": "index"}),
    ((26, 5, 0), {"prolog": "uuid", "job": "index", "job_env_uuid": "uuid"}),
)
# Environment variables a release adds that the hooks and jobs may see (prolog_epilog.shtml, RELEASE_NOTES):
# SLURM_JOB_SLUID (25.11, replacing the undocumented SLURM_SLUID), SLURM_JOB_QOS (Prolog/EpilogSlurmctld 25.11,
# Prolog/Epilog 26.05). Read as plain text where read; none decides anything.
ENV_SINCE: dict[str, Version] = {"SLURM_JOB_SLUID": (25, 11, 0), "SLURM_JOB_QOS": (26, 5, 0)}
# Job states and state flags a release adds: EXPEDITING (25.11: --requeue=expedite, needs SlurmctldParameters=
# enable_expedited_requeue; RELEASE_NOTES 25.11, openapi v0.0.44). A job in it runs again: records.ACTIVE_STATES.
JOB_STATE_SINCE: dict[str, Version] = {"EXPEDITING": (25, 11, 0)}
# --requeue's argument: none until 25.05; from 25.11 --requeue[=expedite] (sbatch.1 @25.11); 26.05's sbatch refuses
# any other word ("Invalid --requeue specification", exit 255; measured on 26.05.5; EXPEDITE in capitals passes).
REQUEUE_WORDS: tuple[str, ...] = ("expedite",)
# --gpus-per-task with a list of types (``h100:1,a100:2``): 25.05 (CHANGELOG/slurm-25.05.md rc1, sbatch.1), with an
# implicit --tres-bind=gres/gpu:per_task:<sum>. gpusub parses the list per type on every release.
GPUS_PER_TASK_TYPE_LIST_SINCE: Version = (25, 5, 0)


# The network topology Slurm reads (slurm_gpu.emit.topology). topology/tree (topology.conf SwitchName= Nodes=/
# Switches=) on every release; topology/block (BlockName= Nodes=, BlockSizes=) from 23.11 (first tag with
# src/plugins/topology/block: slurm-23-11-0-0rc1; topology.conf.5); topology.yaml from 25.05 (several topologies,
# each `- topology: NAME` with `tree: {switches: [{switch, nodes|children}]}` or `block: {block_sizes, blocks:
# [{block, nodes}]}`; topology.conf is ignored when it exists: topology.yaml.5, RELEASE_NOTES 25.05).
# notes/field-notes-2026-12.md 1.7 and Q3. sbatch --switches=COUNT[@MAX-TIME] (tree) on every release; --segment
# (block) from 24.05 (slurm_gpu/slurm/sbatch/table.py). Measured (tests/lab/test_topology_lab.py: the real
# slurmctld reads each file and `scontrol show topology` prints it back): 22.05.8 topology/tree prints
# "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=..." (a spine: all nodes below it and Switches=); the job's
# request shows only in scontrol's text ("Switches=1@00:01:00"; squeue's JSON has no field); a job waits
# at most its bound, then starts across switches (Reason=Resources meanwhile). 24.11.5 topology/block prints
# "BlockName=nvl1 BlockIndex=0 Nodes=a100n[1-2] BlockSize=2" and "AggregatedBlock=nvl[1-2] BlockIndex=2
# Nodes=a100n[1-4] BlockSize=4" lines; squeue --json=v0.0.42 has required_switches/maximum_switch_wait_time;
# a 2-node job (<= the base block) with the free nodes spread over blocks pends (Resources), even plain.
# 26.05.5 reads topology.yaml without a TopologyPlugin line (tree as cluster_default prints "SwitchName=leaf1
# Level=0 LinkSpeed=0 Nodes=..."; block as on 24.11).
class TopologyFacts(NamedTuple):
    """What a release reads of the network topology: its plugins and its file."""

    plugins: tuple[str, ...]
    file: str  # "topology.conf" or "topology.yaml"


TOPOLOGY: tuple[tuple[Version, TopologyFacts], ...] = (
    ((0, 0, 0), TopologyFacts(("tree",), "topology.conf")),
    ((23, 11, 0), TopologyFacts(("tree", "block"), "topology.conf")),
    ((25, 5, 0), TopologyFacts(("tree", "block"), "topology.yaml")),
)
SEGMENT_SINCE: Version = (24, 5, 0)  # sbatch --segment (slurm_gpu/slurm/sbatch/table.py)


def since(table: tuple[tuple[Version, T], ...], version: Version | tuple[int, int]) -> T:
    """The value of a (first release, value) table at *version*: the last row not newer than it."""
    full = as_version(version)
    return [value for first, value in table if full >= first][-1]


# Plain sbatch (select/cons_tres, CR_Core_Memory, no task options but --ntasks): --gres=gpu:h100:8 --ntasks=8
# --cpus-per-task=2 on an idle 2 x 16-core node gets CPU_IDs=0-15, socket 0 only, on 22.05.8 and 24.11.5; 26.05.5
# spreads the tasks over both sockets (measured; which 26.05 change does it is not pinned down). gpusub's
# --ntasks-per-socket gives the same on every release (docs/gpusub.md, the placement tables).
PLAIN_SPREADS_TASKS_OVER_SOCKETS: tuple[tuple[Version, bool], ...] = (((0, 0, 0), False), ((26, 5, 0), True))


# `sacct -j 0`: every job in the window on 22.05.8 and 24.11.5; refused on 26.05.5 ("Bad job/step specified: 0:
# JobID can not be zero", exit 1; measured). slurm_gpu.slurm.job_id refuses 0 itself on every release.
SACCT_JOB_ZERO: tuple[tuple[Version, str], ...] = (((0, 0, 0), "every job"), ((26, 5, 0), "refused"))


# The output paths squeue's JSON gives (records.StdOut/StdErr): "pattern" 22.05.8 (as given, %j and all; the
# reader fills them in), "filled" 24.11.5 (%-fields filled, backslashes kept), "expanded" 26.05.5 (the path
# Slurm opens: v0.0.42's standard_output and v0.0.43+'s stdout_expanded drop every backslash and, after one,
# fill in no %-field; measured with the lab's fuzz jobs, tests/adapters/test_records_lab.py; 23.02-24.05
# not measured).
STDIO_PATHS: tuple[tuple[Version, str], ...] = (((0, 0, 0), "pattern"), ((24, 11, 0), "filled"),
                                                ((26, 5, 0), "expanded"))


# SLURM_STEP_ID of the steps srun does not start (slurm.h: SLURM_BATCH_SCRIPT 0xfffffffb, SLURM_EXTERN_CONT
# 0xfffffffc, SLURM_INTERACTIVE_STEP 0xfffffffa, SLURM_PENDING_STEP 0xfffffffd; a normal step's id is
# 0..SLURM_MAX_NORMAL_STEP_ID = 0xfffffff0). 22.05.8 and 24.11.5 leave SLURM_STEP_ID unset in the batch script
# (measured); 26.05.5 sets SLURM_STEP_ID=-5 there (measured, issue 21: the id printed signed). 25.05/25.11 not
# measured. Both spellings (signed and unsigned) of every special id are listed: a step whose id is one of these
# is no srun step, so its SLURM_PROCID/SLURM_NTASKS are not a rank of a multi-rank step.
SPECIAL_STEP_IDS: dict[str, str] = {
    "-3": "pending", str(0xFFFFFFFD): "pending",
    "-4": "extern", str(0xFFFFFFFC): "extern",
    "-5": "batch", str(0xFFFFFFFB): "batch",
    "-6": "interactive", str(0xFFFFFFFA): "interactive",
}
MAX_NORMAL_STEP_ID = 0xFFFFFFF0
# (first release, what the batch script's SLURM_STEP_ID is: None = unset): the measured rows of the above.
BATCH_STEP_ID_ENV: tuple[tuple[Version, str | None], ...] = (((0, 0, 0), None), ((26, 5, 0), "-5"))


def srun_step_id(text: str | None) -> int | None:
    """SLURM_STEP_ID as the id of a step srun started (0..MAX_NORMAL_STEP_ID); None when unset, a special
    step (the batch script on 26.05: ``-5``; the extern or interactive step) or not a number at all."""
    t = (text or "").strip()
    if not t or t in SPECIAL_STEP_IDS or not (t.isascii() and t.isdigit() and len(t) <= 10):
        return None
    value = int(t)
    return value if value <= MAX_NORMAL_STEP_ID else None


# Versions the golden files and the lab cover.
KNOWN_VERSIONS: tuple[Version, ...] = ((22, 5, 8), (23, 2, 7), (23, 11, 10), (24, 11, 5), (25, 11, 0), (26, 5, 5))
# The releases the lab and CI run (Debian 12, 13, testing: .ci/in-root), the supported ones.
SUPPORTED: tuple[Version, ...] = ((22, 5, 8), (24, 11, 5), (26, 5, 5))
DEFAULT_VERSION: Version = (22, 5, 8)


def spelling_for(version: Version | tuple[int, int]) -> SlurmSpelling:
    """The spelling table row(s) that apply to *version* ((major, minor) or (major, minor, micro))."""
    full = as_version(version)
    fields: dict[str, Any] = {}
    for first, row in _TABLE:
        if full >= first:
            fields.update(row)
    return SlurmSpelling(version=full, **fields)


__all__ = ["JSON_DIALECTS", "SlurmSpelling", "spelling_for", "parse_sbatch_version", "KNOWN_VERSIONS",
           "DEFAULT_VERSION", "Version", "as_version", "SUPPORTED", "since", "JSON_SHIPPED", "PREEMPT_SIGNAL_LINE",
           "SHARD_GRES_USED", "PROLOG_TIMEOUT_KEYS", "DEVICE_ENV", "ENV_SINCE", "JOB_STATE_SINCE", "REQUEUE_WORDS",
           "GPUS_PER_TASK_TYPE_LIST_SINCE", "PLAIN_SPREADS_TASKS_OVER_SOCKETS", "SACCT_JOB_ZERO", "STDIO_PATHS",
           "SPECIAL_STEP_IDS", "MAX_NORMAL_STEP_ID", "BATCH_STEP_ID_ENV", "srun_step_id",
           "GPUS_PER_NODE_WITH_GRES_GPU", "TOPOLOGY", "SEGMENT_SINCE", "TopologyFacts"]
