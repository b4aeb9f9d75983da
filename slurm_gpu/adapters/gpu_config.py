# SPDX-License-Identifier: Apache-2.0
"""Executes the MIG and MPS plans of :mod:`slurm_gpu.sharing.mig` / :mod:`slurm_gpu.sharing.mps` on a node.

NVML through the real nvidia-ml-py binding (``import pynvml``, lazily: start-up stays light); the
MPS control daemon through ``nvidia-cuda-mps-control``. Every NVML sequence runs in a worker thread
bounded by ``timeout_s`` (a hung driver call cannot be interrupted, so the hook gives up on it and
reports a node fault); every subprocess has a timeout. GPUs are NVML indices; the caller maps
Slurm's ids to them. Only the GPUs passed in are read or changed.

Entry points (each returns a :class:`slurm_gpu.sharing.token.Outcome`, never raises for a job's own
fault): :func:`setup_mig`, :func:`restore_mig`, :func:`start_mps`, :func:`stop_mps`.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from slurm_gpu.adapters import fs
from slurm_gpu.digits import is_digits
from slurm_gpu.sharing import mig as M
from slurm_gpu.sharing import mps as P
from slurm_gpu.sharing.token import Outcome, failed, ok

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 30.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_JOB_FAULTS = {"NVMLError_InsufficientResources": "no capacity", "NVMLError_InUse": "GPU busy"}


class SetupFailed(Exception):
    def __init__(self, message: str, fault: str = "node"):
        super().__init__(message)
        self.fault = fault


def _bounded(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """``fn()`` bounded as the node hooks bound every NVML call (gpu_node.bounded, a helper thread);
    SetupFailed (node) if it does not return within ``timeout_s``."""
    from slurm_gpu.adapters.gpu_node import bounded
    from slurm_gpu.node.model import Unavailable

    try:
        return bounded(fn, timeout_s, what)
    except Unavailable:  # only the time limit raises it here: fn's own errors pass through unchanged
        raise SetupFailed(f"{what}: NVML did not answer within {timeout_s:g}s") from None


def _outcome(fn: Callable[[], Outcome], what: str) -> Outcome:
    """Run ``fn``; NVML and setup errors become a failed Outcome (job or node fault)."""
    import pynvml as N

    try:
        return fn()
    except SetupFailed as e:
        return failed(str(e), e.fault)
    except (M.MigError, P.MpsError) as e:
        return failed(f"{what}: {e}", "job")
    except N.NVMLError as e:
        kind = type(e).__name__
        return failed(f"{what}: {_JOB_FAULTS.get(kind, kind)} ({e})", "job" if kind in _JOB_FAULTS else "node")
    except (OSError, subprocess.SubprocessError) as e:
        return failed(f"{what}: {e}", "node")


# ---- MIG --------------------------------------------------------------------------------------

def _geometry(N: Any, h: Any) -> tuple[dict[str, M.Profile], dict[str, int]]:
    """The GPU's GI profiles by name, and their NVML profile ids."""
    geo: dict[str, M.Profile] = {}
    ids: dict[str, int] = {}
    for p in range(N.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = N.nvmlDeviceGetGpuInstanceProfileInfo(h, p)
        except (N.NVMLError_NotSupported, N.NVMLError_InvalidArgument):
            continue
        arr = (N.c_nvmlGpuInstancePlacement_t * 16)()
        n = ctypes.c_uint(16)
        N.nvmlDeviceGetGpuInstancePossiblePlacements(h, info.id, arr, ctypes.byref(n))
        name = str(info.name).removeprefix("MIG ")
        size = arr[0].size if n.value else 8
        geo[name] = M.Profile(name, info.sliceCount, size, info.instanceCount,
                              tuple(arr[i].start for i in range(n.value)))
        ids[name] = info.id
    return geo, ids


def _gpu_instances(N: Any, h: Any, ids: dict[str, int]) -> list[tuple[str, Any, Any]]:
    """(profile, GI handle, GI info) of every GPU instance."""
    out: list[tuple[str, Any, Any]] = []
    for name, pid in ids.items():
        arr = (N.c_nvmlGpuInstance_t * 8)()
        n = ctypes.c_uint(0)
        N.nvmlDeviceGetGpuInstances(h, pid, arr, ctypes.byref(n))
        out.extend((name, arr[i], N.nvmlGpuInstanceGetInfo(arr[i])) for i in range(n.value))
    return out


def _compute_instances(N: Any, gi: Any) -> list[tuple[int, Any]]:
    """(slices, CI handle) of every compute instance of a GPU instance."""
    out: list[tuple[int, Any]] = []
    for c in range(N.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        try:
            cp = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, c, N.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        except (N.NVMLError_NotSupported, N.NVMLError_InvalidArgument):
            continue
        arr = (N.c_nvmlComputeInstance_t * 8)()
        n = ctypes.c_uint(0)
        N.nvmlGpuInstanceGetComputeInstances(gi, cp.id, arr, ctypes.byref(n))
        out.extend((cp.sliceCount, arr[i]) for i in range(n.value))
    return out


def _state(N: Any, h: Any, ids: dict[str, int]) -> M.MigState:
    current, _pending = N.nvmlDeviceGetMigMode(h)
    if not current:
        return M.MigState(False)
    gis = tuple(M.GpuInstance(name, info.placement.start, tuple(sorted(s for s, _ in _compute_instances(N, gi))))
                for name, gi, info in _gpu_instances(N, h, ids))
    return M.MigState(True, gis).sorted()


def _capable(N: Any, h: Any) -> bool:
    try:
        N.nvmlDeviceGetMigMode(h)
    except N.NVMLError_NotSupported:
        return False
    return True


class _Gpus:
    """NVML handles, geometry and state of the given GPUs (inside one bounded NVML session)."""

    def __init__(self, N: Any, gpus: Iterable[int]):
        self.N = N
        self.handles = {i: N.nvmlDeviceGetHandleByIndex(i) for i in sorted(set(gpus))}
        self.geo: dict[int, dict[str, M.Profile]] = {}
        self.ids: dict[int, dict[str, int]] = {}
        for i, h in self.handles.items():
            if not _capable(N, h):
                raise M.MigError(f"GPU {i} is not MIG-capable")
            self.geo[i], self.ids[i] = _geometry(N, h)

    def states(self) -> dict[int, M.MigState]:
        return {i: _state(self.N, h, self.ids[i]) for i, h in self.handles.items()}

    def _gi(self, a: M.Action) -> Any:
        for _name, gi, info in _gpu_instances(self.N, self.handles[a.gpu], self.ids[a.gpu]):
            if info.placement.start == a.start:
                return gi
        raise SetupFailed(f"GPU {a.gpu}: no GPU instance at slice {a.start}")

    def execute(self, actions: Sequence[M.Action]) -> None:
        N = self.N
        for a in actions:
            if a.gpu not in self.handles:  # never touch a GPU the job was not given
                raise SetupFailed(f"refused: action on GPU {a.gpu}, not one of {sorted(self.handles)}")
            h = self.handles[a.gpu]
            if a.op == "set_mig_mode":
                before = N.nvmlDeviceGetMigMode(h)[0]
                status = N.nvmlDeviceSetMigMode(h, int(a.enable))  # returns the activation status
                if status != 0 or N.nvmlDeviceGetMigMode(h)[0] != int(a.enable):
                    N.nvmlDeviceSetMigMode(h, before)  # clear the pending change
                    why = "GPU busy" if status == N.NVML_ERROR_IN_USE else f"activation status {status}"
                    raise SetupFailed(f"GPU {a.gpu}: MIG mode change refused ({why})", "job")
            elif a.op == "create_gi":
                pl = N.c_nvmlGpuInstancePlacement_t(a.start, self.geo[a.gpu][a.profile].memory_slices)
                N.nvmlDeviceCreateGpuInstanceWithPlacement(h, self.ids[a.gpu][a.profile], ctypes.byref(pl))
            elif a.op == "destroy_gi":
                N.nvmlGpuInstanceDestroy(self._gi(a))
            elif a.op == "create_ci":
                gi = self._gi(a)
                cp = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                    gi, _CI_PROFILE[a.slices], N.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
                N.nvmlGpuInstanceCreateComputeInstance(gi, cp.id)
            elif a.op == "destroy_ci":
                ci = next((c for s, c in _compute_instances(N, self._gi(a)) if s == a.slices), None)
                if ci is None:
                    raise SetupFailed(f"GPU {a.gpu}: no {a.slices}-slice compute instance at slice {a.start}")
                N.nvmlComputeInstanceDestroy(ci)
            else:
                raise SetupFailed(f"unknown MIG action {a.op!r}")

    def mig_uuids(self) -> list[str]:
        """MIG device UUIDs of the GPUs, by GPU, then GPU instance id, then compute instance id."""
        N = self.N
        out = []
        for h in self.handles.values():
            for k in range(N.nvmlDeviceGetMaxMigDeviceCount(h)):
                try:
                    out.append(str(N.nvmlDeviceGetUUID(N.nvmlDeviceGetMigDeviceHandleByIndex(h, k))))
                except (N.NVMLError_NotFound, N.NVMLError_NotSupported, N.NVMLError_InvalidArgument):
                    break
        return out


_CI_PROFILE = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}  # compute slices -> NVML_COMPUTE_INSTANCE_PROFILE_*


def _session(fn: Callable[[Any], T], timeout_s: float, what: str) -> T:
    def run() -> T:
        import pynvml as N

        N.nvmlInit()
        try:
            return fn(N)
        finally:
            N.nvmlShutdown()

    return _bounded(run, timeout_s, what)


def setup_mig(gpus: Sequence[int], layout: M.Layout, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Prolog, dynamic mode: give each of ``gpus`` the job's ``layout`` (from :func:`mig.check_request`);
    on success ``env`` has ``CUDA_VISIBLE_DEVICES=MIG-...`` for the TaskProlog. Nothing is changed
    unless the layout fits every GPU. A partial failure is left for the epilog's restore."""

    def work(N: Any) -> Outcome:
        g = _Gpus(N, gpus)
        actions = M.plan(g.states(), layout, g.geo, gpus)
        g.execute(actions)
        uuids = g.mig_uuids()
        return ok({"CUDA_VISIBLE_DEVICES": ",".join(uuids)}) if uuids else failed("no MIG device was created", "node")

    return _outcome(lambda: _session(work, timeout_s, "MIG setup"), "MIG setup")


def restore_mig(gpus: Sequence[int], layout: M.Layout | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Epilog (both modes): put ``gpus`` back to ``layout`` (:func:`mig.default_layout`; ``None``: leave
    MIG alone). Idempotent: a GPU already in the layout is not touched. ``message`` names what changed."""
    if layout is None:
        return ok()

    def work(N: Any) -> Outcome:
        g = _Gpus(N, gpus)
        actions = M.plan(g.states(), layout, g.geo, gpus)
        g.execute(actions)
        changed = sorted({a.gpu for a in actions})
        return Outcome(True, f"restored {layout.describe()} on GPU {','.join(map(str, changed))}" if changed else "")

    return _outcome(lambda: _session(work, timeout_s, "MIG restore"), "MIG restore")


def read_mig(gpus: Sequence[int], timeout_s: float = DEFAULT_TIMEOUT_S
             ) -> tuple[dict[int, M.MigState], dict[int, dict[str, M.Profile]]]:
    """Current MIG state and geometry of ``gpus`` (``admin check``, tests). Raises on failure."""
    def work(N: Any) -> tuple[dict[int, M.MigState], dict[int, dict[str, M.Profile]]]:
        g = _Gpus(N, gpus)
        return g.states(), g.geo

    return _session(work, timeout_s, "MIG read")


def read_mig_node(timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[int, M.MigState]:
    """Current MIG state of every GPU of the node (a GPU that is not MIG-capable: MIG off). Raises on failure."""
    def work(N: Any) -> dict[int, M.MigState]:
        out: dict[int, M.MigState] = {}
        for i in range(int(N.nvmlDeviceGetCount())):
            h = N.nvmlDeviceGetHandleByIndex(i)
            out[i] = _state(N, h, _geometry(N, h)[1]) if _capable(N, h) else M.MigState(False)
        return out

    return _session(work, timeout_s, "MIG read")


def mig_uuids(gpus: Sequence[int], timeout_s: float = DEFAULT_TIMEOUT_S) -> list[str]:
    return _session(lambda N: _Gpus(N, gpus).mig_uuids(), timeout_s, "MIG read")


# ---- compute mode -----------------------------------------------------------------------------

def _set_exclusive(gpus: Sequence[int], timeout_s: float) -> tuple[dict[int, int], list[str]]:
    """Compute mode EXCLUSIVE_PROCESS on ``gpus``: (previous modes, GPU UUIDs)."""
    def work(N: Any) -> tuple[dict[int, int], list[str]]:
        prev, uuids = {}, []
        for i in gpus:
            h = N.nvmlDeviceGetHandleByIndex(i)
            prev[i] = int(N.nvmlDeviceGetComputeMode(h))
            uuids.append(str(N.nvmlDeviceGetUUID(h)))
        done: list[int] = []
        try:
            for i in gpus:
                N.nvmlDeviceSetComputeMode(N.nvmlDeviceGetHandleByIndex(i), N.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)
                done.append(i)
        except BaseException:  # no half-set GPUs: the epilog restores only what state.json records
            for i in done:
                N.nvmlDeviceSetComputeMode(N.nvmlDeviceGetHandleByIndex(i), prev[i])
            raise
        return prev, uuids

    return _session(work, timeout_s, "compute mode")


def _restore_modes(prev: dict[int, int], timeout_s: float) -> None:
    def work(N: Any) -> None:
        for i, mode in sorted(prev.items()):
            N.nvmlDeviceSetComputeMode(N.nvmlDeviceGetHandleByIndex(i), mode)

    _session(work, timeout_s, "compute mode restore")


# ---- MPS --------------------------------------------------------------------------------------

def _open_base(base: str) -> int:
    """The base directory's descriptor; created root-owned 0755 if missing, refused if others can write
    it or a directory above it (slurm_gpu/adapters/fs.py open_dir)."""
    try:
        return fs.open_dir(base, create=True, mode=0o755)
    except fs.Untrusted as exc:
        raise SetupFailed(f"MPS base directory {base} must be owned by root and writable by nobody else: "
                          f"{exc.strerror or exc}") from None


def _make_dirs(p: P.MpsPlan, uid: int, gid: int) -> int:
    """The job's directory (root 0755, new) and its pipe/log directories (the user's, 0700). Returns the
    job directory's descriptor. A leftover of the same job id is removed first (never through a symlink)."""
    base_fd = _open_base(os.path.dirname(p.job_dir))
    name = os.path.basename(p.job_dir)
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=base_fd)
        except FileExistsError:
            if not stat.S_ISDIR(os.stat(name, dir_fd=base_fd, follow_symlinks=False).st_mode):
                raise SetupFailed(f"{p.job_dir} exists and is not a directory (not followed)") from None
            shutil.rmtree(name, dir_fd=base_fd)  # fd-based: symlinks inside are removed, not followed
            os.mkdir(name, 0o755, dir_fd=base_fd)
        job_fd = os.open(name, _DIR_FLAGS, dir_fd=base_fd)
    finally:
        os.close(base_fd)
    os.fchmod(job_fd, 0o755)
    for sub in ("pipe", "log"):
        os.mkdir(sub, 0o700, dir_fd=job_fd)
        fd = os.open(sub, _DIR_FLAGS, dir_fd=job_fd)
        try:
            if os.geteuid() == 0:
                os.fchown(fd, uid, gid)
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    return job_fd


def _as_user(uid: int, gid: int) -> dict[str, Any]:
    """subprocess arguments that drop to the job's user (only when running as root; tests as a user skip it)."""
    return {"user": uid, "group": gid, "extra_groups": []} if os.geteuid() == 0 else {}


def _control(mps_control: str, env: dict[str, str], uid: int, gid: int, commands: Sequence[str],
             timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([mps_control], input="".join(c + "\n" for c in commands), env=env, capture_output=True,
                          text=True, timeout=timeout_s, check=False, cwd="/", umask=0o077, **_as_user(uid, gid))


def start_mps(p: P.MpsPlan, gpus: Sequence[int], uid: int, gid: int, mps_control: str = "nvidia-cuda-mps-control",
              path: str = "/usr/bin:/bin", timeout_s: float = DEFAULT_TIMEOUT_S,
              extra_env: Mapping[str, str] | None = None) -> Outcome:
    """Prolog: EXCLUSIVE_PROCESS on ``gpus`` (previous modes kept in the job's root-owned state file), a
    per-job ``nvidia-cuda-mps-control -d`` as ``uid``/``gid`` on those GPUs, its default active thread
    percentage set. ``env``: what the TaskProlog exports. ``path`` is the daemon's whole PATH;
    ``extra_env`` adds site variables (LD_LIBRARY_PATH of a non-standard driver install)."""

    def work() -> Outcome:
        exe = shutil.which(mps_control, path=path) if "/" not in mps_control else mps_control
        if exe is None:
            raise SetupFailed(f"{mps_control} not found on {path}")
        job_fd = _make_dirs(p, uid, gid)
        try:
            prev, uuids = _set_exclusive(gpus, timeout_s)
            try:
                fd = os.open("state.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600, dir_fd=job_fd)
                with os.fdopen(fd, "w") as fh:
                    json.dump({"uid": uid, "gid": gid, "modes": {str(i): m for i, m in prev.items()}}, fh)
            except BaseException:  # no state.json, no changed mode (what the epilog relies on)
                _restore_modes(prev, timeout_s)
                raise
        finally:
            os.close(job_fd)
        env = {**(extra_env or {}), **P.daemon_env(p, tuple(uuids), path)}
        with tempfile.TemporaryFile("w+") as err:
            r = subprocess.run([exe, "-d"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                               timeout=timeout_s, check=False, cwd="/", umask=0o077, **_as_user(uid, gid))
            err.seek(0)
            why = " ".join(err.read(500).split())
        if r.returncode != 0:
            raise SetupFailed(f"{exe} -d exited {r.returncode}: {why}")
        c = _control(exe, env, uid, gid, P.start_commands(p), timeout_s)
        if c.returncode != 0:
            raise SetupFailed(f"MPS control refused {P.start_commands(p)}: {' '.join(c.stderr.split())[:300]}")
        return ok(P.task_env(p))

    return _outcome(work, "MPS setup")


def _daemon_pids(pipe_dir: str) -> list[int]:
    """Processes whose environment names ``pipe_dir`` as CUDA_MPS_PIPE_DIRECTORY (the job's daemon and servers)."""
    needle = f"CUDA_MPS_PIPE_DIRECTORY={pipe_dir}".encode()
    out = []
    for entry in os.listdir("/proc"):
        if not is_digits(entry) or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read(1 << 20).split(b"\0"):
                    out.append(int(entry))
        except OSError:
            continue
    return out


def stop_mps(p: P.MpsPlan, mps_control: str = "nvidia-cuda-mps-control", path: str = "/usr/bin:/bin",
             timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Epilog: ``quit`` the job's daemon, wait for it (and its servers) to go, kill what is left (then a
    node fault: the runner may drain), restore the compute modes, remove the job's directories.
    Idempotent: a second run finds no job directory and returns ok."""

    def work() -> Outcome:
        try:
            job_fd = fs.open_dir(p.job_dir, trust=fs.LINKS)
        except FileNotFoundError:
            return ok()
        try:
            saved = json.loads(fs.read_capped(job_fd, "state.json", limit=1 << 16, trusted=True) or b"")
            uid, gid = int(saved["uid"]), int(saved["gid"])
            modes = {int(i): int(m) for i, m in saved["modes"].items()}
        except FileNotFoundError:  # the set-up stopped before it changed a compute mode or started the daemon
            _remove_job_dir(p)
            return Outcome(True, "the set-up had stopped before the compute modes; its directories removed")
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as e:
            raise SetupFailed(f"{p.state_file}: unreadable ({e}); compute modes not restored") from None
        finally:
            os.close(job_fd)
        exe = shutil.which(mps_control, path=path) if "/" not in mps_control else mps_control
        problems = []
        if exe is not None:
            try:
                _control(exe, P.daemon_env(p, (), path), uid, gid, (P.QUIT,), timeout_s)
            except subprocess.TimeoutExpired:
                problems.append(f"'quit' got no answer within {timeout_s:g}s")
        deadline = time.monotonic() + timeout_s
        while (left := _daemon_pids(p.pipe_dir)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if left:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            problems.append(f"MPS daemon pids {left} did not quit and were killed")
        _restore_modes(modes, timeout_s)
        _remove_job_dir(p)
        return failed("; ".join(problems), "node") if problems else ok()

    return _outcome(work, "MPS teardown")


def _remove_job_dir(p: P.MpsPlan) -> None:
    base_fd = fs.open_dir(os.path.dirname(p.job_dir), trust=fs.LINKS)
    try:
        shutil.rmtree(os.path.basename(p.job_dir), dir_fd=base_fd)
    finally:
        os.close(base_fd)


__all__ = ["DEFAULT_TIMEOUT_S", "SetupFailed", "setup_mig", "restore_mig", "read_mig", "mig_uuids", "start_mps",
           "stop_mps"]
