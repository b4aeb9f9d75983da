# SPDX-License-Identifier: Apache-2.0
"""``lab up / down / status / env``: install, write config, start the daemons (see
:mod:`slurm_gpu.lab.daemons`), check health, and stop exactly what was started."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.lab import clients, procs
from slurm_gpu.lab.config import (
    LabPaths,
    LabRuntime,
    render_all,
    sacctmgr_commands,
    sacctmgr_qos_limit_commands,
    version_text,
)
from slurm_gpu.lab.daemons import LabDaemons, poll
from slurm_gpu.lab.install import (
    DEFAULT_SETS,
    ensure_nvml_plugin,
    ensure_packages,
    find_nvml_plugin,
    packages_of,
    system_plugin_dir,
)
from slurm_gpu.lab.nvmlnode import NodeNvml, detected_type_name, prepare_node
from slurm_gpu.lab.spec import LabHooks, LabSpec, detected_alike, whole_gpus_detected_alike
from slurm_gpu.slurm.release import spelling_for

DEFAULT_LAB_DIR = "/tmp/slurm-gpu-lab"
MARKER = ".slurm-gpu-lab"
SpecFactory = Callable[[str], LabSpec]  # device_dir -> LabSpec


def static_mig_cap_minors(spec: LabSpec) -> list[int]:
    """The /dev/nvidia-caps minors the static-MIG nodes' gres lines name (the same ones Slurm's gpu/nvml
    detects over the stand-in: tests/topology/test_slurm_detection.py)."""
    names = {n.name for n in spec.static_mig_nodes}
    return [int(m) for line in spec.gres_lines if line.split(" ", 1)[0].removeprefix("NodeName=") in names
            for m in re.findall(r"/nvidia-caps/nvidia-cap([0-9]+)", line)]


DETECT_ENV = "SLURM_GPU_LAB_DETECT"  # 0: every node reads the emitted gres.conf lines (AutoDetect=off)


def detect_by_env() -> bool:
    """Whether slurmd detects the nodes' GPUs with Slurm's gpu/nvml over the stand-in (the default)."""
    return os.environ.get(DETECT_ENV, "1") != "0"


def lab_dir_from_env() -> str:
    return os.environ.get("SLURM_GPU_LAB_DIR") or DEFAULT_LAB_DIR


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def default_policy_path() -> str:
    """The lab policy: examples/policies/university.yaml beside the package (editable/source install)."""
    import sys

    candidates = [
        repo_root() / "examples" / "policies" / "university.yaml",
        Path(sys.prefix) / "share" / "slurm-gpu" / "examples" / "policies" / "university.yaml",
        Path(sys.prefix) / "share" / "slurm-gpu" / "examples" / "university.yaml",
    ]
    for c in candidates:
        if c.is_file():
            return str(c)
    return str(candidates[0])


def policy_spec_factory(policy_path: str) -> SpecFactory:
    """A SpecFactory reading the policy (and the topology files it names)."""

    def make(device_dir: str) -> LabSpec:
        from slurm_gpu.lab.spec import spec_from_policy
        from slurm_gpu.policy import load_policy
        from slurm_gpu.topology import load_topology_file

        return spec_from_policy(load_policy(policy_path), load_topology_file, device_dir)

    return make


def default_hooks(job_submit_lua: str | None = None, prolog: str | None = None, epilog: str | None = None,
                  task_prolog: str | None = None, *, job_submit_policy: bool | None = None,
                  node_hooks: bool | None = None, drivers: bool | None = None) -> LabHooks:
    """Hooks wired into slurm.conf: job_submit.lua compiled from the lab policy unless
    ``job_submit_policy`` is false (``lab up --no-job-submit``; None: on unless SLURM_GPU_LAB_JOB_SUBMIT=0),
    and the paths given (``lab up --prolog ...``; ``--job-submit-lua`` wins over the compiled script).
    ``drivers`` (None: on unless SLURM_GPU_LAB_DRIVERS=0): the dynamic-MIG nodes get the stand-in driver."""
    def _abs(path: str | None) -> str | None:
        return os.path.abspath(path) if path else None

    if job_submit_policy is None:
        job_submit_policy = os.environ.get("SLURM_GPU_LAB_JOB_SUBMIT", "1") != "0"
    if node_hooks is None:  # slurm-gpu's own Prolog/Epilog/TaskProlog (lab/nodehooks.py)
        from slurm_gpu.lab.nodehooks import enabled_by_env

        node_hooks = enabled_by_env()
    if drivers is None:
        drivers = os.environ.get("SLURM_GPU_LAB_DRIVERS", "1") != "0"
    return LabHooks(job_submit_lua=_abs(job_submit_lua), prolog=_abs(prolog), epilog=_abs(epilog),
                    task_prolog=_abs(task_prolog), job_submit_policy=job_submit_policy, node_hooks=node_hooks,
                    prolog_alloc=os.environ.get("SLURM_GPU_LAB_PROLOG_ALLOC", "0") == "1", drivers=drivers)


def slurm_version() -> tuple[int, int, int]:
    """``slurmctld -V`` -> (22, 5, 8)."""
    try:
        out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, timeout=10, check=False).stdout
    except FileNotFoundError as e:
        raise SlurmGpuError("slurmctld not found; is the slurmctld package installed?") from e
    m = re.search(r"([0-9]+)\.([0-9]+)\.([0-9]+)", out)
    if not m:
        raise SlurmGpuError(f"cannot read the Slurm version from 'slurmctld -V': {out.strip()!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def only_loopback() -> bool:
    """True when this machine (network namespace) has no address but loopback ones: glibc's passive
    AF_INET lookup with AI_ADDRCONFIG, the one Slurm's daemons listen with, then finds nothing
    (:func:`slurm_gpu.lab.config.loopback_lines`)."""
    try:
        socket.getaddrinfo(None, 16819, socket.AF_INET, socket.SOCK_STREAM, 0,
                           socket.AI_PASSIVE | socket.AI_ADDRCONFIG | socket.AI_NUMERICSERV)
    except socket.gaierror:
        return True
    return False


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


@dataclass
class Lab(LabDaemons):
    """A lab directory: bring it up, check it, tear it down."""

    # ------------------------------------------------------------------ public verbs
    def healthy(self) -> bool:
        """All recorded daemons alive, slurmctld answering, every node in a usable state."""
        nodes = self.node_names()
        if not nodes or not os.path.exists(self.slurm_conf):
            return False
        for name, want in [("slurmctld", "slurmctld"), ("slurmdbd", "slurmdbd"), ("mariadb", "mariadbd")] + [
            (f"slurmd.{n}", "slurmd") for n in nodes
        ]:
            if procs.pidfile_process(self._pidfile(name), want) is None:
                return False
        if not self._munge_works() or not clients.ping(self.slurm_conf):
            return False
        try:
            states = clients.node_states(self.slurm_conf)
        except SlurmGpuError:
            return False
        return all(states.get(n, "").rstrip("~") in clients.GOOD_NODE_STATES for n in nodes)

    @contextlib.contextmanager
    def _locked(self, timeout_s: float = 600) -> Iterator[None]:
        """One `up`/`down` at a time per lab dir (the lock file sits beside the dir, which `down` deletes)."""
        lock_path = self.paths.lab_dir.rstrip("/") + ".lock"
        os.makedirs(os.path.dirname(lock_path) or ".", exist_ok=True)
        try:  # never follow a symlink planted at that name (the lab dir usually sits in /tmp)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            raise SlurmGpuError(f"cannot open the lab lock {lock_path}: {e.strerror} (a symlink?)") from e
        with os.fdopen(fd, "r+") as f:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError as e:
                    if time.monotonic() > deadline:
                        raise SlurmGpuError(
                            f"another `slurm-gpu lab` holds {lock_path} for over {timeout_s:g} s"
                        ) from e
                    time.sleep(0.2)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _check_lab_dir(self) -> None:
        """The lab dir usually sits in /tmp, where anyone can create a name first. Root writes the
        daemons' config there and deletes it on `down`: refuse a symlink, or a directory that root does
        not own or others may write, rather than follow it."""
        try:
            st = os.lstat(self.paths.lab_dir)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise SlurmGpuError(f"{self.paths.lab_dir} is not a plain directory (a symlink?): refusing to use it; "
                                "remove it or set SLURM_GPU_LAB_DIR")
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise SlurmGpuError(f"{self.paths.lab_dir} is owned by uid {st.st_uid} or writable by others "
                                f"(mode {stat.S_IMODE(st.st_mode):o}): refusing to use it; remove it or set "
                                "SLURM_GPU_LAB_DIR")

    def up(self, *args: Any, **kwargs: Any) -> float:
        """Bring the lab up (or keep a healthy one with the same config); returns seconds to ready."""
        if os.geteuid() != 0:
            raise SlurmGpuError("slurm-gpu lab up must run as root (it starts daemons and creates /dev/nvidia*)")
        self._check_lab_dir()
        with self._locked():
            return self._up(*args, **kwargs)

    def down(self, quiet: bool = False) -> None:
        """Cancel jobs, stop exactly the daemons in our pidfiles, remove our devices and the lab dir."""
        if not os.path.isdir(self.paths.lab_dir):
            return
        if os.geteuid() != 0:
            raise SlurmGpuError("slurm-gpu lab down must run as root (it stops the lab's daemons)")
        self._check_lab_dir()
        with self._locked():
            self._down(quiet)

    def _up(
        self,
        spec_factory: SpecFactory,
        hooks: LabHooks | None = None,
        restart: bool = False,
        policy_path: str | None = None,
        packages: tuple[str, ...] = DEFAULT_SETS,
    ) -> float:
        from slurm_gpu.lab import nodehooks

        hooks = nodehooks.wire(hooks or LabHooks(), self.paths.lab_dir)
        t0 = time.monotonic()
        packages_of(packages)  # an unknown set: one line before anything starts
        if not restart and self.healthy() and self._config_unchanged(spec_factory, hooks):
            self._ensure_packages(packages)  # e.g. `make test`'s test sets after `make demo`'s lab
            if policy_path:  # same config, maybe from another checkout: the lab keeps its own copy
                self._copy_policy(policy_path, hooks)
                Path(self.paths.env_file).write_text(self.env_text())
            if hooks.node_hooks:
                nodehooks.install(self.paths.lab_dir, self._read("policy"), repo_root(), self.say)
                self._start_hook_agents()
            self.say(f"lab already up and healthy ({self._ms(t0)}); use --restart to start afresh")
            return time.monotonic() - t0
        self._down(quiet=True)
        p = self.paths
        os.makedirs(p.lab_dir, exist_ok=True)
        Path(p.lab_dir, MARKER).touch()
        for d in (p.state_dir, p.db_dir, p.log_dir, p.jobs_dir, p.conf_dir, p.fake_dev_dir):
            shutil.rmtree(d, ignore_errors=True)
        for d in (p.pid_dir, p.log_dir, p.conf_dir, os.path.join(p.state_dir, "ctld"), p.jobs_dir):
            os.makedirs(d, exist_ok=True)
        t = time.monotonic()
        self._ensure_packages(packages)
        ensure_nvml_plugin(os.path.join(self.paths.lab_dir, "apt.log"), self.say)
        version = slurm_version()
        self._ensure_user()
        shutil.chown(os.path.join(p.state_dir, "ctld"), "slurm", "slurm")
        shutil.chown(p.log_dir, "slurm", "slurm")
        for d, mode in ((p.lab_dir, 0o755), (p.state_dir, 0o755), (p.log_dir, 0o1777), (p.jobs_dir, 0o1777)):
            os.chmod(d, mode)
        spec = spec_factory("/dev")
        device_dir = self._make_fake_gpus(spec.max_gpus_per_node())
        if device_dir != "/dev":
            spec = spec_factory(device_dir)
        rt = self._runtime(version, hooks, spec)
        self._write_configs(spec, rt)
        self._make_fake_mig_caps(static_mig_cap_minors(spec))
        nvml = self._prepare_nvml(spec, rt)
        self._give_drivers(spec, hooks)
        self._write("nodes", "\n".join(spec.node_names))
        self._write("device-dir", device_dir)
        if policy_path:
            self._copy_policy(policy_path, hooks)
        elif hooks.job_submit == "policy":
            self._install_job_submit()
        if hooks.node_hooks:
            nodehooks.install(p.lab_dir, self._read("policy"), repo_root(), self.say)
        self.say(
            f"Slurm {version_text(version)}; nodes {','.join(spec.node_names)}; gpu types "
            f"{','.join(spec.gpu_types)}; conf {self.slurm_conf} ({self._ms(t)})"
        )
        try:
            self._start_daemons(spec, rt, hooks, nvml)
        except SlurmGpuError as e:  # name the daemon that really failed, not the client that timed out
            raise self.blame(e) from e
        Path(p.env_file).write_text(self.env_text())
        took = time.monotonic() - t0
        self.say(f"lab UP in {took:.1f} s. Clients: source <(slurm-gpu lab env); submit as '{self.user}'")
        return took

    def _prepare_nvml(self, spec: LabSpec, rt: LabRuntime) -> dict[str, NodeNvml]:
        """The stand-in NVML state of each node whose slurmd detects its GPUs (rt.nvml_nodes): a static-MIG
        node's is the one its hooks read too (``$LAB_DIR/nvml/<node>.state``); a whole-GPU node's slurmd reads
        a copy of its recorded machine of its own (``$LAB_DIR/nvml/slurmd/<node>.state``), so that the hooks'
        driver stays what ``_give_drivers`` and the tests make it (none, or one whose MIG the hooks change),
        and a slurmd restart never counts a job's MIG devices (docs/mig_mps.md "dynamic")."""
        from slurm_gpu.lab import nodehooks
        from slurm_gpu.topology import load_topology_file

        lib = nodehooks.standin_lib_dir(repo_root()) if rt.nvml_nodes else None
        nvml_dir = nodehooks.nvml_dir(self.paths.lab_dir)
        out: dict[str, NodeNvml] = {}
        for n in spec.nodes:
            if n.name in rt.nvml_nodes and lib and n.mig_layout:
                out[n.name] = prepare_node(nvml_dir, n.name, load_topology_file(n.topology), n.mig_layout, lib,
                                           str(repo_root()))
                self.say(f"{n.name}: static MIG {'+'.join(n.mig_layout)} per GPU, detected by Slurm's gpu/nvml "
                         "over the stand-in NVML")
            elif n.name in rt.nvml_nodes and lib:
                out[n.name] = prepare_node(os.path.join(nvml_dir, "slurmd"), n.name, load_topology_file(n.topology),
                                           (), lib, str(repo_root()))
                self.say(f"{n.name}: {n.gpus} x {n.gpu_name}, detected by Slurm's gpu/nvml over the stand-in NVML")
            elif n.mig_layout and rt.plugin_dirs and not detected_alike(
                    n, spelling_for(rt.version).mig_profile_from_attributes):
                self.say(f"{n.name}: static MIG {'+'.join(n.mig_layout)} from the emitted gres.conf lines "
                         f"(AutoDetect=off): Slurm {'.'.join(map(str, rt.version))}'s gpu/nvml would name a slice "
                         "otherwise than the policy does (`slurm-gpu policy check` says which)")
            elif n.gpus and rt.plugin_dirs and lib and not n.mig_layout:
                self.say(f"{n.name}: GPUs from the emitted gres.conf lines (AutoDetect=off): Slurm's gpu/nvml "
                         f"would name them {detected_type_name(n.gpu_name or 'no recorded name')!r}, which does "
                         f"not contain the policy's type {n.gpu_type!r}")
            elif n.gpus:
                self.say(f"{n.name}: GPUs from the emitted gres.conf lines (no gpu_nvml.so or no C compiler "
                         "for the stand-in NVML: AutoDetect=nvml is off)")
        return out

    def _give_drivers(self, spec: LabSpec, hooks: LabHooks) -> None:
        """The stand-in NVIDIA driver (``$LAB_DIR/nvml/<node>.state``: the node's recorded machine, whole GPUs,
        MIG off) on each dynamic-MIG node, so that the node hooks can make a job's layout there (the README's
        ``gpusub --mig 3g.40gb:2`` and ``--mps``); slurmd keeps the emitted lines. The states the lab wrote
        before are removed first, so ``SLURM_GPU_LAB_DRIVERS=0`` (and the private labs that write their own)
        starts with no driver anywhere."""
        from slurm_gpu.adapters import fs
        from slurm_gpu.lab import nodehooks
        from slurm_gpu.lab.nvmlnode import write_state
        from slurm_gpu.topology import load_topology_file

        listed = Path(self.paths.lab_dir, "stand-in-drivers")
        nvml_dir = nodehooks.nvml_dir(self.paths.lab_dir)
        for node in (listed.read_text().split() if listed.exists() else ()):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(nvml_dir, f"{node}.state"))
        listed.unlink(missing_ok=True)
        nodes = spec.dynamic_mig_nodes if hooks.node_hooks and hooks.drivers else ()
        if not nodes:
            return
        if not nodehooks.standin_lib_dir(repo_root()):
            self.say(f"{','.join(n.name for n in nodes)}: no stand-in libnvidia-ml.so.1 (no C compiler?): no "
                     "driver there, so per-job MIG and MPS jobs fail on them")
            return
        os.makedirs(nvml_dir, mode=0o755, exist_ok=True)
        done = []
        for n in nodes:
            try:
                write_state(nvml_dir, n.name, load_topology_file(n.topology), (), str(repo_root()))
                done.append(n.name)
            except (OSError, ValueError) as e:
                self.say(f"{n.name}: no stand-in driver ({e})")
        fs.write_file(str(listed), "".join(f"{n}\n" for n in done).encode())  # root writes: the one safe writer
        if done:
            self.say(f"{','.join(done)}: the stand-in NVIDIA driver of the recorded machine (whole GPUs, MIG off), "
                     "for per-job MIG layouts and MPS (SLURM_GPU_LAB_DRIVERS=0: none)")

    def _start_daemons(self, spec: LabSpec, rt: LabRuntime, hooks: LabHooks,
                       nvml: dict[str, NodeNvml] | None = None) -> None:
        t = time.monotonic()
        self._start_munge()
        self._start_mariadb(rt)
        self.say(f"munge + MariaDB up ({self._ms(t)})")
        t = time.monotonic()
        self._start_slurmdbd()
        self._sacctmgr(sacctmgr_commands(spec))
        self.say(f"slurmdbd up, account/users/QOS {','.join(q.name for q in spec.qos)} created ({self._ms(t)})")
        t = time.monotonic()
        self._start_slurmctld()
        self._sacctmgr(sacctmgr_qos_limit_commands(spec))
        self.say(f"slurmctld up, QOS limits set ({self._ms(t)})")
        t = time.monotonic()
        if hooks.node_hooks:
            self._start_hook_agents()
        self._start_slurmds(list(spec.node_names), nvml=nvml)
        self.say(f"{len(spec.nodes)} slurmd idle ({self._ms(t)})")

    def _ensure_packages(self, sets: tuple[str, ...]) -> None:
        # in the lab dir itself (root's, mode 755): log/ is world-writable once the lab is up
        spent = ensure_packages(os.path.join(self.paths.lab_dir, "apt.log"), self.say, sets)
        if spent:
            self.say(f"packages installed ({spent:.1f} s)")

    def _start_hook_agents(self) -> None:
        from slurm_gpu.lab.nodehooks import start_agents
        from slurm_gpu.node.install import entry_point_dir

        start_agents(self.paths.lab_dir, self.node_names(), self.paths.pid_dir, entry_point_dir(), self.say)

    def _copy_policy(self, policy_path: str, hooks: LabHooks) -> None:
        """Copy the policy (with its includes and topology files) into the lab dir and record the copy:
        GPUSUB_POLICY must not dangle once the checkout it came from is gone, and the lab user must be
        able to read it even when that checkout is private. Then compile the copy into job_submit.lua
        when the lab runs the policy's plugin, so that client and server read the same policy."""
        from slurm_gpu.lab.runtime import copy_policy

        try:
            copied = copy_policy(os.path.abspath(policy_path), os.path.join(self.paths.lab_dir, "policy-files"))
        except (OSError, SlurmGpuError) as e:
            raise SlurmGpuError(f"cannot copy the lab policy {policy_path} into {self.paths.lab_dir}: {e}") from e
        self._write("policy", copied)
        if hooks.job_submit == "policy":
            self._install_job_submit()

    def _install_job_submit(self) -> None:
        """conf_dir/job_submit.lua := the lab's policy copy, compiled (atomic rename; slurmctld reloads it)."""
        from slurm_gpu.lab.jobsubmit import install_policy_script

        install_policy_script(self._read("policy") or default_policy_path(), self.paths.conf_dir)

    def _write_configs(self, spec: LabSpec, rt: LabRuntime) -> None:
        files = render_all(spec, rt)
        for name, text in files.items():
            path = os.path.join(self.paths.conf_dir, name)
            Path(path).write_text(text)
            os.chmod(path, 0o600 if name == "slurmdbd.conf" else 0o644)
            if name == "slurmdbd.conf":
                shutil.chown(path, "slurm", "slurm")
        os.chmod(self.paths.conf_dir, 0o755)
        if rt.hooks.job_submit_lua:
            dst = os.path.join(self.paths.conf_dir, "job_submit.lua")
            shutil.copyfile(rt.hooks.job_submit_lua, dst)
            os.chmod(dst, 0o644)

    def _config_unchanged(self, spec_factory: SpecFactory, hooks: LabHooks) -> bool:
        try:
            spec = spec_factory(self._read("device-dir") or "/dev")
            rt = self._runtime(slurm_version(), hooks, spec)
            return all(Path(self.paths.conf_dir, n).read_text() == text for n, text in render_all(spec, rt).items())
        except (OSError, SlurmGpuError):
            return False

    def _runtime(self, version: tuple[int, int, int], hooks: LabHooks, spec: LabSpec | None = None) -> LabRuntime:
        """Ports can be moved (e.g. a second lab beside this one) with SLURM_GPU_LAB_PORT_BASE: slurmctld
        listens on BASE, slurmdbd on BASE+2, the slurmd of node i on BASE+100+i. SLURM_GPU_LAB_TASK_PLUGIN
        overrides the version's TaskPlugin."""
        base = os.environ.get("SLURM_GPU_LAB_PORT_BASE")
        task_plugin = os.environ.get("SLURM_GPU_LAB_TASK_PLUGIN") or None  # e.g. task/affinity on 24.11 with many CPUs
        nvml_plugin, system_plugins = find_nvml_plugin(), system_plugin_dir()
        rt = LabRuntime(version=version, hostname=short_hostname(), paths=self.paths, hooks=hooks,
                        task_plugin=task_plugin, loopback_only=only_loopback(),
                        plugin_dirs=(system_plugins, nvml_plugin) if nvml_plugin and system_plugins else ())
        if spec is not None and rt.plugin_dirs and detect_by_env():
            from slurm_gpu.lab.nodehooks import standin_lib_dir

            if standin_lib_dir(repo_root()):  # Slurm's gpu/nvml needs a libnvidia-ml.so.1: the stand-in's
                by_attributes = spelling_for(version).mig_profile_from_attributes
                rt = dataclasses.replace(rt, nvml_nodes=tuple(
                    n.name for n in spec.nodes
                    if (detected_alike(n, by_attributes) if n.mig_layout else whole_gpus_detected_alike(n))))
        if base:
            b = int(base)
            rt = dataclasses.replace(rt, ctld_port=b, dbd_port=b + 2, slurmd_port0=b + 100)
        return rt

    def _ensure_user(self) -> None:
        r = subprocess.run(["id", "-u", self.user], capture_output=True, timeout=10, check=False)
        if r.returncode != 0:
            subprocess.run(["useradd", "-m", "-s", "/bin/bash", self.user], check=True, timeout=30)

    def _down(self, quiet: bool = False) -> None:
        p = self.paths
        if not os.path.isdir(p.lab_dir):
            return
        ctld = procs.pidfile_process(self._pidfile("slurmctld"), "slurmctld")
        if ctld is not None and clients.ping(self.slurm_conf):
            try:
                clients.run(
                    ["scancel", "--quiet", "--state=PENDING,RUNNING,SUSPENDED,REQUEUED"], self.slurm_conf, timeout_s=10
                )
                users = set(clients.run(["squeue", "-h", "-o", "%u"], self.slurm_conf).stdout.split())
                for u in users:
                    clients.run(["scancel", "--quiet", "-u", u], self.slurm_conf, timeout_s=10)
                for _ in poll(10):
                    if not clients.run(["squeue", "-h", "-t", "R,CG", "-o", "%i"], self.slurm_conf).stdout.strip():
                        break
            except SlurmGpuError:
                pass
        from slurm_gpu.lab.nodehooks import stop_agents

        stop_agents(p.pid_dir, self.say)
        if os.path.isdir(p.pid_dir):
            for f in sorted(os.listdir(p.pid_dir)):
                if f.startswith("slurmd."):
                    procs.stop_pidfile(os.path.join(p.pid_dir, f), "slurmd", self.say)
        for name, want in (
            ("slurmctld", "slurmctld"),
            ("slurmdbd", "slurmdbd"),
            ("mariadb", "mariadbd"),
            ("munged", "munged"),
        ):
            procs.stop_pidfile(self._pidfile(name), want, self.say)
        for stepd in self.leftover_stepds():  # with their job's processes, which outlive a killed slurmstepd
            for pid in [stepd, *procs.descendants(stepd)]:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        self._remove_fake_gpus()
        if os.path.exists(os.path.join(p.lab_dir, MARKER)):
            shutil.rmtree(p.lab_dir, ignore_errors=True)
        if not quiet:
            self.say("lab down")

    def leftover_stepds(self) -> list[int]:
        """slurmstepd processes of this lab: they carry our SLURM_CONF (22.05) or hold a socket in our
        slurmd spool dirs (24.11 starts slurmstepd with an empty environment)."""
        spool = self.paths.state_dir + "/"
        return [
            pid
            for pid in procs.pids_by_comm("slurmstepd")
            if procs.has_env(pid, "SLURM_CONF", self.slurm_conf)
            or any(path.startswith(spool) for path in procs.unix_socket_paths(pid))
        ]

    def status_lines(self) -> list[str]:
        lines = []
        why_dead = {st.name: st.last_error for st in self.daemon_statuses()}
        if os.path.isdir(self.paths.pid_dir):
            for f in sorted(os.listdir(self.paths.pid_dir)):
                name = f[: -len(".pid")]
                rec = procs.read_pidfile(os.path.join(self.paths.pid_dir, f))
                state = "running" if rec and procs.alive(rec[0]) else "dead"
                why = why_dead.get(name, "") if state == "dead" else ""
                lines.append(f"{name:<22} pid={rec[0] if rec else '?':<8} {state}" + (f": {why}" if why else ""))
        if not lines:
            lines.append(f"no lab in {self.paths.lab_dir}")
            return lines
        try:
            r = clients.run(["sinfo", "-N", "-o", "%N %P %T %c %m %G %f"], self.slurm_conf, timeout_s=5)
            lines += (r.stdout + r.stderr).rstrip().splitlines()
        except SlurmGpuError as e:
            lines.append(str(e))
        return lines

    def env_vars(self) -> dict[str, str]:
        """What a client of the lab needs in its environment (``lab env`` prints these as exports)."""
        return {"SLURM_CONF": self.slurm_conf, "GPUSUB_POLICY": self._read("policy") or default_policy_path(),
                "SLURM_GPU_LAB_DIR": self.paths.lab_dir, "SLURM_GPU_LAB_USER": self.user}

    def env_text(self) -> str:
        import sys

        lines = [f"export {key}={value}" for key, value in self.env_vars().items()]
        bindir = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else ""
        if sys.prefix != sys.base_prefix:
            bindir = os.path.join(sys.prefix, "bin")
        if bindir and os.path.exists(os.path.join(bindir, "gpusub")):
            lines.append(f'export PATH="{bindir}:$PATH"')
        return "\n".join(lines) + "\n"


def lab_client_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) plus the lab's client variables it lacks: what
    ``source <(slurm-gpu lab env)`` gives a shell (the benchmarks use it)."""
    env = dict(os.environ if base is None else base)
    for key, value in Lab(LabPaths(lab_dir_from_env())).env_vars().items():
        env.setdefault(key, value)
    return env


@contextlib.contextmanager
def private_lab(lab_dir: str, port_base: str, say: Callable[[str], None] = print) -> Iterator[Lab]:
    """A second lab beside the shared one (docs/lab.md, "A second lab"): ``SLURM_GPU_LAB_DIR`` and
    ``SLURM_GPU_LAB_PORT_BASE`` point at it while it is in use (the caller brings it up); at the end it is
    taken down and the two variables are what they were."""
    saved = {k: os.environ.get(k) for k in ("SLURM_GPU_LAB_DIR", "SLURM_GPU_LAB_PORT_BASE")}
    os.environ.update(SLURM_GPU_LAB_DIR=lab_dir, SLURM_GPU_LAB_PORT_BASE=port_base)
    lab = Lab(LabPaths(lab_dir), say=say)
    try:
        yield lab
    finally:
        try:
            lab.down(quiet=True)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
