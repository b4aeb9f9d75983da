# SPDX-License-Identifier: Apache-2.0
"""The job's environment as plain sbatch would set it (pure: options in, shell steps out).

sbatch sets ``SLURM_*`` output variables from the text of the options it was given (``--gpus-per-node=4``:
``SLURM_GPUS_PER_NODE=4``). gpusub submits other options than the user's (an untyped GPU request typed,
``--gpus=4`` -> ``--gpus=h100:4``; options the policy or the placement plan adds), so without a correction
the job would read ``h100:4`` where sbatch gives ``4`` (``torchrun --nproc_per_node=$SLURM_GPUS_PER_NODE``
then starts no worker), and srun steps, which read these variables as input, would ask for other steps
(22.05.8: a step with ``SLURM_GPUS_PER_TASK=a100:1`` gets no GPU, measured). :func:`restore_steps` lists,
for every option whose submitted value differs from the user's own, the variables sbatch derives from it:
set to what sbatch would have set for the user's value, or unset where the user gave no such option. The
rendered script applies them before the payload starts. gpusub also runs sbatch without the user's
``SBATCH_*`` input variables (their effect is in the ``#SBATCH`` lines); :func:`sbatch_inputs` gives them
back to the job, as sbatch's own job would see them.

Left as gpusub sets them (documented in docs/gpusub.md): ``SLURM_NTASKS_PER_SOCKET`` (the placement plan's
``--ntasks-per-socket``, which srun steps read to keep the binding) and ``SLURM_CPU_BIND``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.release import SlurmSpelling
from slurm_gpu.slurm.sbatch.table import BY_NAME

# option (canonical name) -> the variable sbatch sets from it, and how sbatch writes the value:
# "text" as given, "int" the number, "mem" in MB, "initial" its first letter. sbatch(1) OUTPUT ENVIRONMENT
# VARIABLES, measured on 22.05.8
# (tests/fidelity: the batch step's full environment) and 24.11.5.
OPTION_VARIABLES: dict[str, tuple[str, str]] = {
    "gpus": ("SLURM_GPUS", "text"),
    "gpus-per-node": ("SLURM_GPUS_PER_NODE", "text"),
    "gpus-per-task": ("SLURM_GPUS_PER_TASK", "text"),
    "gpus-per-socket": ("SLURM_GPUS_PER_SOCKET", "text"),
    "gpu-bind": ("SLURM_GPU_BIND", "text"),
    "gpu-freq": ("SLURM_GPU_FREQ", "text"),
    "cpus-per-gpu": ("SLURM_CPUS_PER_GPU", "int"),
    "ntasks-per-gpu": ("SLURM_NTASKS_PER_GPU", "int"),
    "cpus-per-task": ("SLURM_CPUS_PER_TASK", "int"),
    "ntasks-per-node": ("SLURM_NTASKS_PER_NODE", "int"),
    "ntasks-per-core": ("SLURM_NTASKS_PER_CORE", "int"),
    "mem": ("SLURM_MEM_PER_NODE", "mem"),
    "mem-per-cpu": ("SLURM_MEM_PER_CPU", "mem"),
    "mem-per-gpu": ("SLURM_MEM_PER_GPU", "mem"),
    "open-mode": ("SLURM_OPEN_MODE", "initial"),  # the checkpoint protocol's --open-mode=append: "a"
}
# The binding gpusub adds on purpose: its variable stays (docs/gpusub.md, "The job's environment").
KEPT_OPTIONS = frozenset({"ntasks-per-socket"})


class EnvStep(NamedTuple):
    """One step of the restore: ``export NAME=VALUE`` (value) or ``unset NAME`` (value None);
    ``if_set``: only when the variable is in the job's environment (a release's legacy spelling)."""

    name: str
    value: str | None
    if_set: bool = False


class TresPerTask(NamedTuple):
    """``SLURM_TRES_PER_TASK`` (24.11: sbatch writes --gpus-per-task and --cpus-per-task into it): its
    ``gres/gpu`` items are replaced by ``item`` ("" drops them)."""

    name: str
    item: str


def _canonical(options: Iterable[tuple[str, str | None]]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, value in options:
        out[BY_NAME[name].canonical if name in BY_NAME else name] = value
    return out


def _written(kind: str, value: str) -> str:
    """The value as sbatch writes it into the variable."""
    if kind == "mem":
        from slurm_gpu.units import parse_mem_mb

        return str(parse_mem_mb(value))
    if kind == "initial":
        return value[:1]
    if kind == "int" and is_digits(value.strip()):
        return str(int(value))
    return value


def _names(var: str, component: int, components: int) -> list[tuple[str, bool]]:
    """The names sbatch gives the variable of one component: plain for a normal job; in a heterogeneous
    job ``_HET_GROUP_K`` (and 22.05's older ``_PACK_GROUP_K``, only where set), plain too for the first."""
    if components == 1:
        return [(var, False)]
    named = [(f"{var}_HET_GROUP_{component}", False), (f"{var}_PACK_GROUP_{component}", True)]
    return ([(var, True)] if component == 0 else []) + named


def restore_steps(user: Sequence[Sequence[tuple[str, str | None]]],
                  submitted: Sequence[Sequence[tuple[str, str | None]]],
                  spelling: SlurmSpelling) -> tuple[list[EnvStep], list[TresPerTask]]:
    """Per component (the user's options, the submitted ones): the variables to set back or unset."""
    steps: list[EnvStep] = []
    tres: list[TresPerTask] = []
    components = len(user)
    for k, (mine, sent) in enumerate(zip(user, submitted, strict=True)):
        own, got = _canonical(mine), _canonical(sent)
        for option, (var, kind) in OPTION_VARIABLES.items():
            if option in KEPT_OPTIONS or own.get(option) == got.get(option):
                continue
            if option == "gpus-per-task" and spelling.sets_tres_per_task_env:
                continue  # no variable of its own there: SLURM_TRES_PER_TASK below
            value = own.get(option)
            for name, if_set in _names(var, k, components):
                if value is None or (option not in own):
                    steps.append(EnvStep(name, None, if_set))
                else:
                    steps.append(EnvStep(name, _written(kind, value), if_set))
        if spelling.sets_tres_per_task_env and own.get("gpus-per-task") != got.get("gpus-per-task"):
            value = own.get("gpus-per-task")
            item = f"gres/gpu{spelling.tres_per_task_sep}{value}" if value else ""
            if value and ":" in value:  # typed by the user: TYPE:N -> gres/gpu:TYPE=N
                gtype, _, count = value.rpartition(":")
                item = f"gres/gpu:{gtype}{spelling.tres_per_task_sep}{count}"
            for name, _ in _names("SLURM_TRES_PER_TASK", k, components):
                tres.append(TresPerTask(name, item))
    return steps, tres


def exported(name: str, export: str | None) -> bool:
    """Whether sbatch's ``--export`` value passes the submitter's variable ``name`` to the job: unset or
    ``ALL[,...]`` pass everything; otherwise only the names listed (``NONE``/``NIL``: none). A name given
    a value there (``NAME=VALUE``) is sbatch's to set: False."""
    if export is None:
        return True
    items = export.split(",")
    if any(x.partition("=")[0] == name for x in items if "=" in x):
        return False  # --export=NAME=VALUE: sbatch sets it itself
    return items[0] == "ALL" or name in items


def sbatch_inputs(env: Mapping[str, str], export: str | None) -> list[EnvStep]:
    """The submitter's ``SBATCH_*`` variables (which gpusub keeps from sbatch) as the job would have seen
    them under sbatch: every one that ``--export`` passes, with its value."""
    return [EnvStep(k, v) for k, v in sorted(env.items()) if k.startswith("SBATCH_") and exported(k, export)]


__all__ = ["EnvStep", "TresPerTask", "OPTION_VARIABLES", "KEPT_OPTIONS", "restore_steps", "sbatch_inputs",
           "exported"]
