# SPDX-License-Identifier: Apache-2.0
"""The built-in steps of the node hooks for whole GPUs (the extension point: slurm_gpu/node/model.py).

- ``HealthStep``: leftover processes on the job's GPUs are killed (SIGTERM, then SIGKILL; a survivor
  is a failure), then ECC / retired pages / row remapping / lost GPU, then the Xids the kernel logged
  for the job's GPUs since the prolog. Epilog always; prolog when ``health_in_prolog = yes``.
- ``JobMapStep``: dcgm-exporter's HPC job-mapping files, one per GPU index, holding the job id.
- ``AccountingStep``: NVML accounting mode on and cleared, energy counter noted (prolog); per-GPU
  utilisation, peak memory and energy to the JSON-lines file and the Prometheus textfile (epilog).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time

from slurm_gpu.adapters import fs
from slurm_gpu.node import health, stats
from slurm_gpu.node.model import HealthFailure, Unavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from slurm_gpu.jsontypes import JsonValue
    from slurm_gpu.node.model import GpuId, GpuNode, HookContext, Step
    from slurm_gpu.node.stats import GpuRecord

KMSG_MAX_BYTES = 8 << 20


def _node(ctx: HookContext) -> GpuNode:
    """The NVML adapter of a step that has GPUs to work on (``_gpus`` gives none without it)."""
    if ctx.node is None:
        raise Unavailable("NVML not usable")
    return ctx.node


def _gpus(ctx: HookContext, what: str) -> tuple[GpuId, ...]:
    if ctx.node is None:
        ctx.log(f"job {ctx.job.job_id}: {what} skipped (NVML not usable)")
        return ()
    return tuple(g for g in ctx.gpus if g.index is not None)


def owner_job(pid: int) -> tuple[int | None, int | None]:
    """(the Slurm job whose cgroup the process is in, the job its environment claims): the kernel's
    word and the process's; None where there is none."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
            job = health.job_of_cgroup(f.read(65536))
        if job is not None:
            return job, None
        with open(f"/proc/{pid}/environ", "rb") as f:
            return None, health.job_of_environ(f.read(1 << 20))
    except OSError:
        return None, None


def running_here(ctx: HookContext, job: int) -> set[int]:
    """The GPU indices that ``job`` holds on this node, from the per-job state its prolog wrote in the
    root-only state directory (removed by its epilog); empty when there is none: no such job runs here."""
    path = str(ctx.config["state_dir"])
    if not path or job == ctx.job.job_id:
        return set()
    try:
        fd = fs.open_dir(path)
        try:
            data = fs.read_capped(fd, f"{job}.json", limit=1 << 20, missing_ok=True, trusted=True)
        finally:
            os.close(fd)
        state = json.loads(data or b"{}")
    except (OSError, ValueError, RecursionError):
        return set()
    gpus = state.get("gpus") if isinstance(state, dict) and state.get("job") == job else None
    return {g["index"] for g in gpus if isinstance(g, dict) and type(g.get("index")) is int} \
        if isinstance(gpus, list) else set()


def kill_leftovers(ctx: HookContext, gpus: tuple[GpuId, ...]) -> list[str]:
    """Kill the processes NVML lists on ``gpus`` (only those), except another Slurm job's (a shared GPU:
    shards, MPS). A process is another job's when its cgroup says so; the job its environment names
    (``SLURM_JOB_ID``, which anyone can set) is believed only for a job that runs on this node and holds
    that GPU (its prolog's state), and anything else is a leftover. Failures for the ones that survive."""
    grace = float(ctx.config["kill_grace_s"])
    spare = {0, 1, os.getpid(), os.getppid()}
    others: set[int] = set()
    holds: dict[int, set[int]] = {}
    noted: set[int] = set()

    def listed() -> dict[int, GpuId]:
        out: dict[int, GpuId] = {}
        for g in gpus:
            for pid in _node(ctx).compute_pids(g):
                if pid in spare or pid in others:
                    continue
                kernel, claimed = owner_job(pid)
                if kernel is not None and kernel != ctx.job.job_id:
                    others.add(pid)
                    ctx.log(f"job {ctx.job.job_id}: {g.label()}: process {pid} is in job {kernel}'s cgroup; "
                            "left alone")
                    continue
                if claimed is not None and claimed != ctx.job.job_id:
                    if claimed not in holds:
                        holds[claimed] = running_here(ctx, claimed)
                    if g.index in holds[claimed]:
                        others.add(pid)
                        ctx.log(f"job {ctx.job.job_id}: {g.label()}: process {pid} belongs to job {claimed} (running "
                                "here on this GPU); left alone")
                        continue
                    if pid not in noted:
                        noted.add(pid)
                        ctx.log(f"job {ctx.job.job_id}: {g.label()}: process {pid} claims job {claimed} "
                                "(SLURM_JOB_ID), which does not hold this GPU here, and is in no job's cgroup: "
                                "a leftover")
                out.setdefault(pid, g)
        return out

    left = listed()
    if not left:
        return []
    import signal  # here, not at the top: the signal module imports enum (~3 ms of every hook run)

    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not left:
            return []
        for pid, g in left.items():
            ctx.log(f"job {ctx.job.job_id}: {g.label()}: leftover process {pid}: sending {sig.name}")
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except OSError as exc:
                ctx.log(f"job {ctx.job.job_id}: kill {pid}: {exc.strerror or exc}")
        deadline = time.monotonic() + grace
        while True:
            left = listed()
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
    if not left:
        return []
    by_gpu: dict[str, list[str]] = {}
    for pid, g in left.items():
        by_gpu.setdefault(g.label(), []).append(str(pid))
    return [f"{label} leftover process {','.join(pids[:4])} survived SIGKILL" for label, pids in by_gpu.items()]


def read_kmsg(path: str) -> list[str]:
    """The kernel log records: /dev/kmsg (one record a read, non-blocking) or a file of records."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        out: list[str] = []
        if stat.S_ISCHR(os.fstat(fd).st_mode):
            total = 0
            while total < KMSG_MAX_BYTES:
                try:
                    chunk = os.read(fd, 8192)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if exc.errno == errno.EPIPE:  # overwritten while we read: go on
                        continue
                    raise
                if not chunk:
                    break
                total += len(chunk)
                out.append(chunk.decode("utf-8", "replace"))
            return out
        return os.read(fd, KMSG_MAX_BYTES).decode("utf-8", "replace").splitlines()
    finally:
        os.close(fd)


class HealthStep:
    name = "health"

    def prolog(self, ctx: HookContext) -> None:
        ctx.state[self.name] = {"since_us": ctx.mono_us}
        if ctx.config["health_in_prolog"]:
            self._check(ctx, xids_since=None)

    def epilog(self, ctx: HookContext) -> None:
        mine = ctx.state.get(self.name)
        since = mine.get("since_us") if isinstance(mine, dict) else None
        self._check(ctx, xids_since=since if isinstance(since, int) else None)

    def _check(self, ctx: HookContext, xids_since: int | None) -> None:
        gpus = _gpus(ctx, "health check")
        if not gpus:
            return
        try:
            ctx.failures.extend(kill_leftovers(ctx, gpus))
        except HealthFailure as exc:
            ctx.failures.append(str(exc))
        except Unavailable as exc:
            ctx.log(f"job {ctx.job.job_id}: leftover processes not checked: {exc}")
        for g in gpus:
            ctx.failures.extend(health.judge(_node(ctx).reading(g)))
        kmsg = str(ctx.config["kmsg"])
        if xids_since is None or not kmsg:
            return
        try:
            records = read_kmsg(kmsg)
        except OSError as exc:
            ctx.log(f"job {ctx.job.job_id}: Xids not checked: {kmsg}: {exc.strerror or exc}")
            return
        labels = {health.bus_key(g.bus_id): g.label() for g in gpus if g.bus_id}
        found = health.job_xids(records, labels, xids_since)
        fail, notes = health.xid_failures(found, ctx.config["xid_drain"], labels)
        for note in notes:
            ctx.log(f"job {ctx.job.job_id}: {note} (application-level; no drain)")
        ctx.failures.extend(fail)


class JobMapStep:
    name = "jobmap"

    def prolog(self, ctx: HookContext) -> None:
        path = str(ctx.config["jobmap_dir"])
        gpus = tuple(g for g in ctx.gpus if g.index is not None)
        if not path or not gpus:
            return
        ctx.state[self.name] = [g.index for g in gpus]  # the epilog's list when it cannot map the ids
        fd = fs.open_dir(path, create=True, mode=0o755)
        try:
            for g in gpus:
                fs.write_atomic(fd, str(g.index), stats.jobmap_text(ctx.job.job_id).encode(), mode=0o644)
        finally:
            os.close(fd)

    def epilog(self, ctx: HookContext) -> None:
        path = str(ctx.config["jobmap_dir"])
        noted = ctx.state.get(self.name)
        indices = {g.index for g in ctx.gpus if g.index is not None}
        if isinstance(noted, list):
            indices |= {i for i in noted if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 1024}
        if not path or not indices:
            return
        try:
            fd = fs.open_dir(path)
        except FileNotFoundError:
            return
        try:
            for index in sorted(indices):
                try:
                    text = fs.read_capped(fd, str(index), limit=4096, missing_ok=True, trusted=True)
                except fs.Untrusted:
                    text = b""  # something that is not our file: remove it
                if text is None:
                    continue
                if text and text.decode("ascii", "replace").split() != [str(ctx.job.job_id)]:
                    continue  # another job's map now: leave it
                fs.remove(fd, str(index))
        finally:
            os.close(fd)


class AccountingStep:
    name = "accounting"

    def prolog(self, ctx: HookContext) -> None:
        if not ctx.config["accounting"]:
            return
        mine: dict[str, JsonValue] = {}
        ctx.state[self.name] = {"start": ctx.wall_s, "gpus": mine}
        for g in _gpus(ctx, "accounting"):
            try:
                was = _node(ctx).accounting_mode(g)
                try:
                    if was is False:
                        _node(ctx).set_accounting(g, True)
                    if was is not None:
                        _node(ctx).clear_accounting(g)
                except Unavailable as exc:
                    ctx.log(f"job {ctx.job.job_id}: accounting mode: {exc}")
                mine[str(g.index)] = {"energy_mj": _node(ctx).energy_mj(g), "was_on": was}
            except HealthFailure as exc:  # this GPU is lost: say so, go on with the others
                ctx.failures.append(str(exc))

    def epilog(self, ctx: HookContext) -> None:
        mine = ctx.state.get(self.name)
        if not ctx.config["accounting"]:
            return
        if not isinstance(mine, dict) or not isinstance(mine.get("gpus"), dict):
            ctx.log(f"job {ctx.job.job_id}: no prolog record of the job: no GPU stats written")
            return
        start = mine.get("start") if isinstance(mine.get("start"), int | float) else None
        lines: list[str] = []
        for g in _gpus(ctx, "GPU stats"):
            before = mine["gpus"].get(str(g.index))
            if not isinstance(before, dict):
                continue
            e0 = before.get("energy_mj")
            try:
                rec = stats.record(ctx.job.job_id, ctx.job.uid, ctx.job.node, g.as_dict(),
                                   stats.summarise(_node(ctx).samples(g)),
                                   stats.energy_j(e0 if isinstance(e0, int) else None, _node(ctx).energy_mj(g)),
                                   start, ctx.wall_s)
            except HealthFailure as exc:
                ctx.failures.append(str(exc))
                continue
            lines.append(json.dumps(rec, sort_keys=True) + "\n")
            self._textfile(ctx, g, rec)
        mine["lines"] = lines  # this node's records, for SummaryStep (node_summary.py)
        acct = str(ctx.config["accounting_file"])
        if acct and lines:
            try:
                fs.append_line(acct, "".join(lines))
            except OSError as exc:
                ctx.log(f"job {ctx.job.job_id}: stats not written to {acct}: {exc.strerror or exc}")

    def _textfile(self, ctx: HookContext, g: GpuId, rec: GpuRecord) -> None:
        path = str(ctx.config["textfile_dir"])
        if not path:
            return
        try:
            fd = fs.open_dir(path, create=True, mode=0o755)
            try:
                fs.write_atomic(fd, f"slurm_gpu_gpu{g.index}.prom", stats.prom_text(rec).encode(), mode=0o644)
            finally:
                os.close(fd)
        except OSError as exc:
            ctx.log(f"job {ctx.job.job_id}: textfile not written in {path}: {exc.strerror or exc}")


def default_steps() -> tuple[Step, ...]:
    """Prolog order; the epilog runs them backwards, so HealthStep (last) kills leftover processes
    first and set-up steps tear down after it. MIG/MPS steps go just before HealthStep."""
    from slurm_gpu.node.share_steps import MigStep, MpsStep
    from slurm_gpu.node.summary import SummaryStep  # before AccountingStep: its epilog runs after it

    return (JobMapStep(), SummaryStep(), AccountingStep(), MigStep(), MpsStep(), HealthStep())
