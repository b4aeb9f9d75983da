# SPDX-License-Identifier: Apache-2.0
"""The normalised job request and the policy decision: the data that flows between gpusub, the
classifier, the binding planner and the renderer.

A JobRequest is what the user asked for, after sbatch's precedence (command line > ``SBATCH_*``
environment > ``#SBATCH`` lines) has been applied. Nothing here does I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_gpu.plain import NamedTuple

if TYPE_CHECKING:
    from slurm_gpu.jsontypes import JsonObject


class JobRequest(NamedTuple):  # NamedTuples, not frozen dataclasses: ~1-3 ms less of gpusub's start each
    """What one submission asks for. ``None`` means "not given"; Slurm's or the policy's default applies.

    GPU counts keep the form the user wrote them in (per job, per node, per task, per socket) so that
    the classifier can compute the total and the renderer can keep the user's spelling where it must.
    """

    # GPUs
    gpus: int | None = None  # --gpus / -G (per job)
    gpus_per_node: int | None = None  # --gpus-per-node or --gres=gpu[:type]:N
    gpus_per_task: int | None = None  # --gpus-per-task
    gpus_per_socket: int | None = None  # --gpus-per-socket
    ntasks_per_gpu: int | None = None  # --ntasks-per-gpu
    gpu_type: str | None = None  # the type named in any of the GPU options, if any
    gpu_fraction: float | None = None  # a request for part of one GPU (MIG slice / MPS share), 0 < f < 1
    mig_profile: str | None = None  # an explicit MIG profile such as "1g.10gb"
    # size and shape
    nodes: int | None = None  # -N (minimum node count)
    ntasks: int | None = None  # -n
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None  # -c
    cpus_per_gpu: int | None = None
    mem_mb: int | None = None  # --mem (per node)
    mem_per_gpu_mb: int | None = None
    mem_per_cpu_mb: int | None = None
    time_limit_min: int | None = None  # -t
    # placement the user chose (the policy may keep, change or refuse it)
    partition: str | None = None
    qos: str | None = None
    account: str | None = None
    constraint: str | None = None
    job_class: str | None = None  # gpusub --class
    # who and how
    user: str | None = None
    groups: tuple[str, ...] = ()
    array: str | None = None  # --array spec, e.g. "0-99%10"
    interactive: bool = False  # salloc / srun --pty, or an interactive class request
    job_name: str | None = None
    # VRAM fit inputs (gpusub --model-params 7B --precision bf16 --optimizer adam)
    model_params: float | None = None  # parameter count, e.g. 7e9
    precision: str | None = None
    optimizer: str | None = None
    # Every GPU type and count, per form, as sbatch took them (added for several types in one request):
    # ((type or None, count), ...). ``gpu_type`` above is the first type named; with several types the
    # classifier must look at all of ``gpu_types``. Types keep the user's case (Slurm's names are
    # case-sensitive; a policy can suggest the right case). MIG slices are GPU types ("1g.10gb",
    # "a100_1g.10gb") counted as GPUs, as Slurm counts them.
    gpu_types: tuple[str, ...] = ()  # every type named in any GPU option, in order, without repeats
    gpus_by_type: tuple[tuple[str | None, int], ...] = ()  # --gpus
    gpus_per_node_by_type: tuple[tuple[str | None, int], ...] = ()  # --gpus-per-node with --gres=gpu
    gpus_per_task_by_type: tuple[tuple[str | None, int], ...] = ()  # --gpus-per-task / --tres-per-task
    gpus_per_socket_by_type: tuple[tuple[str | None, int], ...] = ()  # --gpus-per-socket
    mps: int | None = None  # --gres=mps:N per node: MPS shares (not GPUs)
    shards: int | None = None  # --gres=shard:N per node: GPU shards (not GPUs)
    partitions: tuple[str, ...] = ()  # -p a,b: every partition, in order (``partition`` is the first)
    time_unlimited: bool = False  # -t UNLIMITED / INFINITE / 0 / -1: no limit (time_limit_min is None)
    nodelist_count: int | None = None  # -w: how many hosts it names (slurmctld's minimum node count without -N)
    nodelist: tuple[str, ...] = ()  # -w: the hosts it names (each must be in the job's allocation)
    exclude: tuple[str, ...] = ()  # -x: hosts the job may not use
    comment: str | None = None  # --comment: may carry the slurm-gpu MIG/MPS token (slurm_gpu.sharing.token)
    # --switches / --segment / --spread-job: the user chose the job's network placement (the policy adds none)
    locality_given: bool = False
    nodes_max: int | None = None  # -N MIN-MAX: the most nodes (a range: the node count is Slurm's to choose)

    @property
    def node_min(self) -> int | None:
        """The fewest nodes the job gets, as slurmctld derives it (and as job_submit.lua sees it in
        ``min_nodes``): ``-N``, else the host count of ``-w``, else ``ceil(-n / --ntasks-per-node)``."""
        if self.nodes:
            return self.nodes
        if self.nodelist_count:
            return self.nodelist_count
        if self.ntasks and self.ntasks_per_node:
            return -(-self.ntasks // self.ntasks_per_node)
        return None

    def _tasks(self, nodes: int) -> int | None:
        """Tasks of the job: ``-n``, else ``--ntasks-per-node`` x nodes (None: not known)."""
        return self.ntasks or (self.ntasks_per_node * nodes if self.ntasks_per_node else None)

    @property
    def total_gpus(self) -> int:
        """Total GPUs the request asks for, combining every form the way slurmctld does.

        ``--gpus-per-task`` counts per task (``ntasks`` or, failing that, one task per node);
        ``--gpus-per-node`` and ``--gpus-per-socket`` multiply by the node count;
        ``--ntasks-per-gpu`` alone gives ``ceil(ntasks / ntasks_per_gpu)``.
        """
        by_type = (self.gpus_by_type, self.gpus_per_node_by_type, self.gpus_per_task_by_type,
                   self.gpus_per_socket_by_type)
        if any(by_type):
            return sum(self.total_gpus_of_type(t) for t in {t for form in by_type for t, _ in form})
        nodes = self.node_min or 1
        if self.gpus is not None:
            return self.gpus
        if self.gpus_per_node is not None:
            return self.gpus_per_node * nodes
        if self.gpus_per_task is not None:
            return self.gpus_per_task * (self._tasks(nodes) or nodes)
        if self.gpus_per_socket is not None:
            return self.gpus_per_socket * nodes  # sockets-per-node unknown here: at least one
        tasks = self._tasks(nodes)
        if self.ntasks_per_gpu and tasks:  # 0 would be a usage error upstream; never divide by it
            return -(-tasks // self.ntasks_per_gpu)
        return 0

    def total_gpus_of_type(self, gtype: str | None) -> int:
        """GPUs of one type: slurmctld keeps every form and gives the largest total (measured on
        22.05.8: ``--gpus=8 --gpus-per-node=4`` is 8 GPUs on 2 nodes; ``--gres=gpu:h100:2 --gpus=a100:1``
        is 3 GPUs, since the types differ)."""
        def of(form: tuple[tuple[str | None, int], ...]) -> int | None:
            counts = [c for t, c in form if t == gtype]
            return counts[0] if counts else None

        job, node, task, sock = (of(f) for f in (self.gpus_by_type, self.gpus_per_node_by_type,
                                                 self.gpus_per_task_by_type, self.gpus_per_socket_by_type))
        nodes = self.node_min or (-(-job // node) if job and node else 1)
        totals = [job or 0]
        if node is not None:
            totals.append(node * nodes)
        if task is not None:
            totals.append(task * (self._tasks(nodes) or nodes))
        if sock is not None:
            totals.append(sock * nodes)
        return max(totals)

    def to_dict(self) -> JsonObject:
        return dict(self._asdict())


class Decision(NamedTuple):
    """The policy's answer for one JobRequest. Exactly one of accepted / rejected.

    ``added_options`` are sbatch options in ``--name=value`` form that the policy adds or changes.
    ``reasons`` record every step the classifier took, in order.
    """

    accepted: bool
    job_class: str | None = None
    partition: str | None = None
    qos: str | None = None
    gres: str | None = None  # "gpu:h100:2" (per node), None for CPU-only jobs
    gpu_type: str | None = None
    gpus: int = 0  # total GPUs
    added_options: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    message: str | None = None  # why it was rejected (None when accepted)
    fix: str | None = None  # what to change so it is accepted
    key: str | None = None  # the policy message key of a rejection ("no_class", "too_long", ...)

    def to_json(self) -> JsonObject:
        """The documented ``gpusub --explain --json`` contract (plus ``fix``)."""
        return {
            "accepted": self.accepted,
            "class": self.job_class,
            "partition": self.partition,
            "qos": self.qos,
            "gres": self.gres,
            "added_options": list(self.added_options),
            "warnings": list(self.warnings),
            "reasons": list(self.reasons),
            "message": self.message,
            "fix": self.fix,
        }


__all__ = ["JobRequest", "Decision"]
