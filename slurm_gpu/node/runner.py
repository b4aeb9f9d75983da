# SPDX-License-Identifier: Apache-2.0
"""The node hooks' runner: Prolog, Epilog (slurmd, root) and TaskProlog (the job's user). docs/hooks.md.

``run_hook(phase, env, steps)`` reads the config and the job from the environment, opens NVML (a job
without GPUs costs no NVML at all), maps Slurm's GPU ids to the node's GPUs, runs the steps
(slurm_gpu/node/model.py explains the extension point; the built-in ones are in node_steps.py) under
one time limit, keeps the per-job state in a root-owned directory, and drains the node only for real
GPU health failures. Every other problem (NVML missing, driver not loaded, no permission, a hang, a
corrupt state file, a full disk, a failing ``scontrol``) is one log line; the hook then exits 0.

Exit status: 0, except after a real health failure: the Prolog exits 3 (the job must not start on a
sick GPU; Slurm requeues it), the Epilog exits 3 only when its own drain failed (Slurm then drains
the node itself, with reason "Epilog error"). 3 and not 1, so that the shims can tell it from an
interpreter that failed to start (1): they pass 3 on as 1 and turn everything else into 0.
"""

from __future__ import annotations

import os
import time

from slurm_gpu.adapters import fs
from slurm_gpu.node.model import (
    DEFAULT_CONF,
    DEFAULT_PATH,
    ENV_CONF,
    MAX_GRES_CONF,
    HealthFailure,
    HookContext,
    Job,
    JobSetupError,
    Unavailable,
    drain_reason,
    identity_problems,
    job_from_env,
    map_gpus,
    mig_view,
    parse_config,
    slurm_gpu_minors,
    task_line_ok,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TextIO

    from slurm_gpu.jsontypes import JsonObject
    from slurm_gpu.node.model import GpuId, GpuNode, HookConfig, Step

PROGS = {"prolog": "slurm-gpu-prolog", "epilog": "slurm-gpu-epilog", "task_prolog": "slurm-gpu-task-prolog"}
STATE_FORMAT = 1
EXIT_FAILED = 3  # a real GPU health failure (hooks) / a failed GPU set-up (TaskProlog)


def load_config(env: Mapping[str, str]) -> tuple[HookConfig, list[str]]:
    """The config file (``$SLURM_GPU_HOOKS_CONF``, else /etc/slurm-gpu/hooks.conf; missing = defaults)
    plus the environment's overrides. The file must be root's and not writable by others."""
    path = env.get(ENV_CONF) or DEFAULT_CONF
    problems: list[str] = []
    text = ""
    try:
        parent, name = os.path.split(path)
        dfd = fs.open_dir(parent or "/")
        try:
            data = fs.read_capped(dfd, name, limit=1 << 16, missing_ok=True, trusted=True)
        finally:
            os.close(dfd)
        if data is None and path != DEFAULT_CONF:
            problems.append(f"config {path}: does not exist; defaults used")
        text = (data or b"").decode("utf-8", "replace")
    except OSError as exc:
        if not (exc.errno == 2 and path == DEFAULT_CONF):
            problems.append(f"config {path}: {exc.strerror or exc}; defaults used")
    cfg, more = parse_config(text, path, env)
    return cfg, problems + more


def drain(cfg: HookConfig, node: str, reason: str, env: Mapping[str, str], log: Callable[[str], None]) -> bool:
    """``scontrol update nodename=NODE state=drain reason="..."`` with a time limit; True when it worked."""
    from slurm_gpu.adapters.gpu_node import run_tool

    if not node:
        log(f"cannot drain: no SLURMD_NODENAME (reason would be: {reason})")
        return False
    argv = [str(cfg["scontrol"]), "update", f"nodename={node}", "state=drain", f"reason={reason}"]
    cenv = dict(env)
    cenv.setdefault("PATH", DEFAULT_PATH)
    try:
        rc, out, err = run_tool(argv, float(cfg["drain_timeout_s"]), env=cenv)
    except Unavailable as exc:
        log(f"drain of {node} failed: {exc}")
        return False
    if rc != 0:
        log(f"drain of {node} failed (exit {rc}): {(err or out).strip()[:300]}")
        return False
    log(f"drained {node}: {reason}")
    return True


def _state_dir(cfg: HookConfig, log: Callable[[str], None]) -> int | None:
    path = str(cfg["state_dir"])
    if not path:
        return None
    try:
        return fs.open_dir(path, create=True, mode=0o700)
    except OSError as exc:
        log(f"state directory {path}: {exc.strerror or exc}; per-job state not kept")
        return None


def _load_state(fd: int | None, job: Job, log: Callable[[str], None]) -> JsonObject:
    """The prolog's per-job state (then removed, so a second epilog finds none); {} when unusable."""
    if fd is None:
        return {}
    name = f"{job.job_id}.json"
    try:
        data = fs.read_capped(fd, name, limit=1 << 20, missing_ok=True, trusted=True)
    except OSError as exc:
        log(f"job {job.job_id}: state {name}: {exc.strerror or exc}; ignored")
        data = b"{}"
    finally:
        try:
            fs.remove(fd, name)
        except OSError:
            pass
    import json

    if data is None:
        log(f"job {job.job_id}: no per-job state (prolog did not run, or the epilog ran already)")
        return {}
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        log(f"job {job.job_id}: state {name} is corrupt or half-written; ignored")
        return {}
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT or state.get("job") != job.job_id:
        log(f"job {job.job_id}: state {name} is not this job's (format/job id); ignored")
        return {}
    return state


def _task_file(cfg: HookConfig, job: Job, lines: list[str] | None, log: Callable[[str], None]) -> None:
    """Write (lines) or remove (None or empty) the job's TaskProlog file in the root-owned task directory."""
    path = str(cfg["task_dir"])
    if not path:
        return
    lines = lines or None  # nothing to say: remove what an earlier run of this job id left
    try:
        fd = fs.open_dir(path, create=lines is not None, mode=0o755)
    except OSError as exc:
        if lines is not None:
            log(f"job {job.job_id}: task file not written: {path}: {exc.strerror or exc}")
        return
    try:
        if lines is None:
            fs.remove(fd, str(job.job_id))
        else:
            fs.write_atomic(fd, str(job.job_id), "".join(ln + "\n" for ln in lines).encode(), mode=0o644)
    except OSError as exc:
        log(f"job {job.job_id}: task file: {exc.strerror or exc}")
    finally:
        os.close(fd)


def _mig_on(node: Any, log: Callable[[str], None]) -> bool:
    try:
        return bool(node.mig_enabled())
    except Exception as exc:  # noqa: BLE001 - asking cannot fail the node
        log(f"MIG mode unknown: {type(exc).__name__}: {str(exc)[:200]}")
        return False


def _mig_view(job: Job, node: Any, devices: tuple[GpuId, ...], phase: str,
              log: Callable[[str], None]) -> tuple[list[str], list[int]]:
    """The job's MIG slices (Slurm's CUDA_VISIBLE_DEVICES) found in the node's NVML, logged; a disagreement is
    logged as the node's misconfiguration and fails no job, drains nothing (issue 20 items 4 and 6)."""
    try:
        migs = node.mig_devices()
    except Exception as exc:  # noqa: BLE001 - asking cannot fail the job or the node
        log(f"job {job.job_id}: MIG devices unknown: {type(exc).__name__}: {str(exc)[:200]}")
        return [], []
    slices, problems = mig_view(job, migs, devices)
    if slices:
        log(f"job {job.job_id}: {phase}: MIG slices (Slurm's CUDA_VISIBLE_DEVICES) " + ", ".join(slices))
    for p in problems:
        log(f"job {job.job_id}: node misconfigured: {p}; the job is not failed for it, nothing drained")
    return slices, sorted({m.parent for m in migs if m.uuid in job.mig_uuids})


def _gres_conf_path(cfg: HookConfig) -> str:
    given = str(cfg["gres_conf"])
    if given:
        return given
    conf = os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    return os.path.join(os.path.dirname(conf), "gres.conf")


def _identity_check(job: Job, gpus: tuple[GpuId, ...], cfg: HookConfig, log: Callable[[str], None]) -> None:
    """The GPUs the hooks took against the devices gres.conf gives Slurm's ids (issue 20 item 6): a
    disagreement is logged as the node's misconfiguration; no job fails, nothing drains, and a gres.conf
    that cannot be read (or autodetects) is no finding."""
    try:
        text = fs.read_capped(_gres_conf_path(cfg), limit=MAX_GRES_CONF, missing_ok=True, trusted=True)
        if not text:
            return
        minors = slurm_gpu_minors(text.decode("utf-8", "replace"), job.node or "")
        for p in identity_problems(gpus, minors, str(cfg["gpu_ids"])):
            log(f"job {job.job_id}: node misconfigured: {p}; the job is not failed for it, nothing drained")
    except Exception as exc:  # noqa: BLE001 - a check of the node's configuration cannot fail the job or node
        log(f"job {job.job_id}: GPU identity not checked: {type(exc).__name__}: {str(exc)[:200]}")


def _call(step: Step, phase: str, ctx: HookContext) -> None:
    """``step.prolog(ctx)`` / ``step.epilog(ctx)``. A step that sets up isolation the job asked for
    (``fails_job = True``: MIG, MPS) cannot fail open: in the prolog any exception of it (NVML or the
    policy unavailable, a health failure, a bug) is a ``JobSetupError``, so the job fails and the node is
    not drained; its epilog still runs and restores."""
    try:
        getattr(step, phase)(ctx)
    except JobSetupError:
        raise
    except Exception as exc:
        if phase != "prolog" or not getattr(step, "fails_job", False):
            raise
        kind = "" if isinstance(exc, (Unavailable, HealthFailure)) else f"internal error: {type(exc).__name__}: "
        raise JobSetupError(f"{getattr(step, 'name', type(step).__name__)} set-up failed: {kind}"
                            f"{str(exc)[:300]}") from None


def _run(phase: str, job: Job, cfg: HookConfig, steps: Sequence[Step], log: Callable[[str], None]) -> list[str]:
    import json

    from slurm_gpu.adapters.gpu_node import NvmlNode

    node: GpuNode | None = None
    devices: tuple[GpuId, ...] | None = None
    try:
        node = NvmlNode()
        devices = node.devices()
    except Unavailable as exc:
        log(f"job {job.job_id}: NVML not usable ({exc}); GPU checks skipped, nothing drained")
        if node is not None:
            node.close()
        node = None
    gpus, missing = map_gpus(job.gpu_tokens, devices, str(cfg["gpu_ids"]))
    if job.mig_uuids and node is not None and _mig_on(node, log):
        # Slurm's CUDA_VISIBLE_DEVICES names MIG devices (AutoDetect=nvml on a static-MIG node): its ids number
        # the slices, so even an id below the GPU count is no whole GPU (id 2 is not GPU 2): the whole-GPU steps
        # (health, processes, accounting, the MIG restore, which would destroy other jobs' slices on the same
        # GPU) get none; the slices are checked by UUID (_mig_view)
        log(f"job {job.job_id}: GPU ids {','.join(job.gpu_tokens)} are MIG slices (Slurm's CUDA_VISIBLE_DEVICES): "
            "whole-GPU checks skip them, nothing drained")
        gpus, missing = (), []
    if missing and node is not None and _mig_on(node, log):
        # On a node with static MIG slices (gres.conf lists MIG devices), Slurm's ids number the slices,
        # not whole GPUs: an id past the GPU count is no lost GPU; the MIG step handles slices.
        log(f"job {job.job_id}: GPU ids {','.join(missing)} are MIG slice ids (MIG mode is on here): "
            "whole-GPU checks skip them, nothing drained")
        missing = []
    if gpus and devices is not None:
        _identity_check(job, gpus, cfg, log)
    mig_slices: list[str] = []
    mig_parents: list[int] = []
    if job.mig_uuids and node is not None and devices is not None:
        mig_slices, mig_parents = _mig_view(job, node, devices, phase, log)
    failures = [f"GPU {m} allocated by Slurm but not found by NVML ({len(devices or ())} GPUs seen)"
                for m in missing]
    log(f"job {job.job_id}: {phase}: GPUs " + ", ".join(
        f"{g.slurm_id}=index {g.index}/minor {g.minor}/{g.bus_id or '?'}" for g in gpus) + (
        f"; not found: {','.join(missing)}" if missing else ""))
    sfd = _state_dir(cfg, log)
    try:
        state: JsonObject = _load_state(sfd, job, log) if phase == "epilog" else {
            "format": STATE_FORMAT, "job": job.job_id, "gpus": [g.as_dict() for g in gpus]}
        if mig_slices:  # the epilog's MIG step checks the layout of these GPUs (share_steps.MigStep)
            state["mig_slices"], state["mig_parents"] = mig_slices, mig_parents
        ctx = HookContext(phase, job, cfg, gpus, node, state, log, time.time(), time.monotonic_ns() // 1000)
        errors: list[str] = []
        for step in (steps if phase == "prolog" else tuple(reversed(steps))):
            name = getattr(step, "name", type(step).__name__)
            try:
                _call(step, phase, ctx)
            except HealthFailure as exc:
                ctx.failures.append(str(exc))
            except JobSetupError as exc:
                errors.append(str(exc))
                log(f"job {job.job_id}: {name}: the job's request cannot be served: {exc}")
            except Unavailable as exc:
                log(f"job {job.job_id}: {name}: {exc}; skipped, nothing drained")
            except Exception as exc:  # noqa: BLE001 - a step's own fault never fails the node
                log(f"job {job.job_id}: {name}: internal error: {type(exc).__name__}: {str(exc)[:300]}")
        if phase == "prolog":
            if sfd is not None:
                try:
                    fs.write_atomic(sfd, f"{job.job_id}.json", json.dumps(state).encode(), mode=0o600, sync=True)
                except (OSError, TypeError, ValueError) as exc:
                    log(f"job {job.job_id}: per-job state not written: {exc}")
            lines = [ln for ln in ctx.task_lines if task_line_ok(ln)]
            lines += ["error " + " ".join(e.split())[:500] for e in errors]
            _task_file(cfg, job, lines, log)
        else:
            _task_file(cfg, job, None, log)
        return failures + ctx.failures
    finally:
        if sfd is not None:
            os.close(sfd)
        if node is not None:
            node.close()


def _asks_isolation(env: Mapping[str, str]) -> bool:
    """The job's comment asks for MIG or MPS (or holds a slurm-gpu token that is not understood)."""
    comment = env.get("SLURM_JOB_COMMENT", "")
    if "slurm-gpu:" not in comment:
        return False
    from slurm_gpu.sharing.token import RequestError, decode

    try:
        req = decode(comment)
    except RequestError:
        return True
    return req is not None and (bool(req.mig) or req.mps_pct is not None)


def run_hook(phase: str, env: Mapping[str, str], steps: Sequence[Step] | None = None) -> int:
    """Prolog or Epilog. Returns the exit status (see the module docstring)."""
    cfg, problems = load_config(env)
    log = fs.Log(PROGS[phase], str(cfg["log"]))
    try:
        for p in ([log.problem] if log.problem else []) + problems:
            log(p)
        job = job_from_env(env)
        if job is None:
            log(f"no job in the environment (SLURM_JOB_ID={env.get('SLURM_JOB_ID', '')[:40]!r}); nothing done")
            return 0
        for p in job.problems:
            log(f"job {job.job_id}: {p}")
        if not job.gpu_tokens:
            return 0  # no GPUs: nothing to do, and no NVML loaded
        if steps is None:
            from slurm_gpu.node.steps import default_steps

            steps = default_steps()
        from slurm_gpu.adapters.gpu_node import bounded

        try:
            failures = bounded(lambda: _run(phase, job, cfg, steps, log), float(cfg["nvml_timeout_s"]),
                               f"the {phase}")
        except Unavailable as exc:
            log(f"job {job.job_id}: {exc} (NVML or a tool hung); giving up, nothing drained")
            if phase == "prolog" and _asks_isolation(env):  # its set-up may not have run: the job fails
                _task_file(cfg, job, [f"error GPU set-up did not finish: {exc}"], log)
            return 0
        if not failures:
            return 0
        reason = drain_reason(failures)
        log(f"job {job.job_id}: GPU health failure: {reason}")
        drained = drain(cfg, job.node, reason, env, log)
        return EXIT_FAILED if phase == "prolog" or not drained else 0
    finally:
        log.close()


def run_task_prolog(env: Mapping[str, str], out: TextIO) -> int:
    """TaskProlog (as the job's user): print the lines the prolog left for the job. An ``error`` line
    (a set-up that failed for reasons of the job's own) becomes a message and EXIT_FAILED."""
    cfg, problems = load_config(env)
    job = job_from_env(env)
    path = str(cfg["task_dir"])
    if job is None or not path:
        return 0
    try:
        fd = fs.open_dir(path)
        try:
            data = fs.read_capped(fd, str(job.job_id), limit=1 << 16, missing_ok=True, trusted=True)
        finally:
            os.close(fd)
    except OSError:
        return 0  # no task directory: the prolog left nothing
    if not data:
        return 0
    import json

    status = 0
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("error "):
            msg = line[6:]
            out.write(f"export SLURM_GPU_SETUP_ERROR={json.dumps(msg)}\n")
            out.write(f"print slurm-gpu: GPU set-up for job {job.job_id} failed: {msg}\n")
            status = EXIT_FAILED
        elif task_line_ok(line):
            out.write(line + "\n")
    out.flush()
    return status
