# SPDX-License-Identifier: Apache-2.0
"""Starting the lab's daemons, in order, each waited for: munge, MariaDB, slurmdbd, slurmctld, the
slurmds; plus the fake GPU device files. :class:`slurm_gpu.lab.control.Lab` builds on this."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.lab import clients, procs
from slurm_gpu.lab.config import LabPaths, LabRuntime, db_bootstrap_sql
from slurm_gpu.lab.nvmlnode import NodeNvml
from slurm_gpu.plain import Record, record

MIG_CAPS_DIR = "/dev/nvidia-caps"
MIG_CAPS_MAJOR = 511  # made up (the driver's nvidia-caps major is dynamic); slurmd only stat()s the files


@record
class DaemonStatus(Record):
    """One lab daemon as found: started (has a pidfile), alive, and its log's last error line."""

    name: str  # "slurmdbd", "slurmd.h100n1", ...
    started: bool
    alive: bool
    last_error: str = ""


# Lines of a daemon's log that say why it stopped or what went wrong, most telling first: Slurm's
# "fatal:" and "error:", MariaDB's "[ERROR]", munged's "Error:". A fatal line is always the end; an error
# line counts only after the daemon's last start line (an old warning is not why it died).
ERROR_MARKERS = (re.compile(r"\bfatal:|\bFatal\b|\bFATAL\b"), re.compile(r"\berror:|\[ERROR\]|\bError:|\bERROR\b"))
START_MARKER = re.compile(r"\bstarted\b|ready for connections")
# pmix noise that 22.05's slurmd logs on every start (not why a daemon died)
IGNORED_ERRORS = re.compile(r"pmix", re.IGNORECASE)


def _clip(line: str, max_chars: int) -> str:
    line = re.sub(r"^\[[^]]*\]\s*", "", line)
    return line if len(line) <= max_chars else line[: max_chars - 3] + "..."


def last_error_line(log_text: str, max_chars: int = 200) -> str:
    """The last fatal line of a log, else its last error line after the last start line, else ""; the
    ``[timestamp]`` prefix dropped."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip() and not IGNORED_ERRORS.search(ln)]
    starts = [i for i, ln in enumerate(lines) if START_MARKER.search(ln)]
    since_start = lines[starts[-1] + 1:] if starts else lines
    for marker, scope in zip(ERROR_MARKERS, (lines, since_start), strict=True):
        found = [ln for ln in scope if marker.search(ln)]
        if found:
            return _clip(found[-1], max_chars)
    return ""


def why_dead(log_text: str, max_chars: int = 200) -> str:
    """What a dead daemon's log says last: :func:`last_error_line`, else its last line (say,
    "Terminate signal (SIGINT or SIGTERM) received": someone stopped it)."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip() and not IGNORED_ERRORS.search(ln)]
    return last_error_line(log_text, max_chars) or (_clip(lines[-1], max_chars) if lines else "")


def blame(statuses: list[DaemonStatus], symptom: str) -> str:
    """The one line for a failed ``lab up`` step: the first started daemon that is dead, with its last
    error line, in place of ``symptom`` (a client's "no answer within N s; is slurmctld up?" that would
    name the wrong daemon); ``symptom`` itself when every started daemon is alive."""
    for st in statuses:
        if symptom.startswith(f"{st.name} died:"):  # already named (the daemon's own start check)
            return symptom
        if st.started and not st.alive:
            why = st.last_error or "no error in its log"
            return f"{st.name} died: {why} (while: {symptom.splitlines()[0] if symptom else 'starting the lab'})"
    return symptom


def _distinct_char_devices(count: int) -> list[str]:
    """Up to ``count`` existing character devices with distinct device numbers: slurmd only stat()s a
    GPU's File=, and needs each to be a distinct character device. ttys first (a full /dev), then the
    devices every container or chroot has."""
    names = [f"/dev/tty{i}" for i in range(64)]
    names += ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
              "/dev/console", "/dev/kmsg", "/dev/mem", "/dev/port"]
    seen: set[int] = set()
    out: list[str] = []
    for name in names:
        try:
            st = os.stat(name)
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode) and st.st_rdev not in seen:
            seen.add(st.st_rdev)
            out.append(name)
            if len(out) == count:
                break
    return out


@dataclass
class LabDaemons:
    """A lab directory and the daemons that run from it."""

    paths: LabPaths
    user: str = "labuser"
    say: Callable[[str], None] = print

    # ------------------------------------------------------------------ helpers
    @property
    def slurm_conf(self) -> str:
        return self.paths.slurm_conf

    def _pidfile(self, name: str) -> str:
        return os.path.join(self.paths.pid_dir, f"{name}.pid")

    def _log(self, name: str) -> str:
        return os.path.join(self.paths.log_dir, name)

    def _ms(self, t0: float) -> str:
        return f"{(time.monotonic() - t0) * 1000:.0f} ms"

    def _read(self, name: str) -> str:
        try:
            return Path(self.paths.lab_dir, name).read_text().strip()
        except OSError:
            return ""

    def _write(self, name: str, text: str) -> None:
        Path(self.paths.lab_dir, name).write_text(text + "\n")

    def node_names(self) -> list[str]:
        return [line for line in self._read("nodes").splitlines() if line]

    # ------------------------------------------------------------------ devices
    def _make_fake_gpus(self, count: int) -> str:
        """mknod /dev/nvidiaN (c 195 N); falls back to symlinks to distinct ttys without CAP_MKNOD."""
        created = Path(self.paths.lab_dir, "created-devs")
        made: list[str] = []
        fallback = False
        for i in range(count):
            dev = f"/dev/nvidia{i}"
            try:
                if stat.S_ISCHR(os.stat(dev).st_mode):
                    continue
            except FileNotFoundError:
                pass
            try:
                os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(195, i))
                os.chmod(dev, 0o666)
                made.append(dev)
            except OSError:
                fallback = True
                break
        with created.open("a") as f:
            f.writelines(d + "\n" for d in made)
        if not fallback:
            return "/dev"
        d = self.paths.fake_dev_dir
        os.makedirs(d, exist_ok=True)
        targets = _distinct_char_devices(count)
        if len(targets) < count:
            raise SlurmGpuError(f"cannot emulate {count} GPUs: mknod is not permitted and only {len(targets)} "
                                "distinct character devices exist to link to")
        for i, target in enumerate(targets):
            link = os.path.join(d, f"nvidia{i}")
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
        self.say(f"mknod not permitted: using symlinks {d}/nvidiaN -> {', '.join(targets)}")
        return d

    def _make_fake_mig_caps(self, minors: list[int]) -> None:
        """mknod /dev/nvidia-caps/nvidia-capN for the capability minors of the detected MIG devices (the
        File= that Slurm's gpu/nvml names; slurmd stat()s each for its device cgroup description). Without
        CAP_MKNOD none are made: slurmd then logs one error per file and registers the slices all the same."""
        created = Path(self.paths.lab_dir, "created-devs")
        made: list[str] = []
        try:
            if not os.path.isdir(MIG_CAPS_DIR):
                from slurm_gpu.adapters import fs

                os.close(fs.open_dir(MIG_CAPS_DIR, create=True, mode=0o755))
                made.append(MIG_CAPS_DIR + "/")
            for m in sorted(set(minors)):
                dev = f"{MIG_CAPS_DIR}/nvidia-cap{m}"
                if not os.path.lexists(dev):
                    os.mknod(dev, 0o444 | stat.S_IFCHR, os.makedev(MIG_CAPS_MAJOR, m))
                    made.append(dev)
        except OSError as e:
            self.say(f"cannot make {MIG_CAPS_DIR} devices ({e.strerror}): slurmd will log that it cannot stat them")
        with created.open("a") as f:
            f.writelines(d + "\n" for d in made)

    def _remove_fake_gpus(self) -> None:
        created = Path(self.paths.lab_dir, "created-devs")
        if not created.exists():
            return
        dirs = []
        for dev in created.read_text().split():
            if dev.endswith("/"):
                dirs.append(dev.rstrip("/"))
                continue
            try:
                if stat.S_ISCHR(os.lstat(dev).st_mode):
                    os.unlink(dev)
            except FileNotFoundError:
                pass
        for d in dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass
        created.unlink()

    # ------------------------------------------------------------------ daemons
    def _start_munge(self) -> None:
        if self._munge_works():
            self.say("munge: already running (not started by the lab)")
            return
        key = "/etc/munge/munge.key"
        if not os.path.exists(key) or os.path.getsize(key) == 0:
            os.makedirs("/etc/munge", exist_ok=True)
            subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, timeout=30)
        for d in ("/run/munge", "/var/lib/munge", "/var/log/munge"):
            os.makedirs(d, exist_ok=True)
            shutil.chown(d, "munge", "munge")
        shutil.chown("/etc/munge", "munge", "munge")
        shutil.chown(key, "munge", "munge")
        os.chmod(key, 0o600)
        os.chmod("/run/munge", 0o755)
        r = subprocess.run(
            ["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if r.returncode != 0:
            raise SlurmGpuError(f"munged failed to start: {(r.stderr or r.stdout).strip()}")
        pid = None
        for _ in poll(5):
            try:
                pid = int(Path("/run/munge/munged.pid").read_text().split()[0])
                break
            except (OSError, ValueError, IndexError):
                continue
        if pid:
            procs.write_pidfile(self._pidfile("munged"), pid)
        for _ in poll(5):
            if self._munge_works():
                return
        raise SlurmGpuError("munge does not work after starting munged (munge -n | unmunge failed)")

    @staticmethod
    def _munge_works() -> bool:
        try:
            cred = subprocess.run(
                ["munge", "-n"], capture_output=True, timeout=5, check=False, stdin=subprocess.DEVNULL
            )
            if cred.returncode != 0:
                return False
            r = subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=5, check=False)
            return r.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _start_mariadb(self, rt: LabRuntime) -> None:
        db = self.paths.db_dir
        data = os.path.join(db, "data")
        os.makedirs(db, exist_ok=True)
        shutil.chown(db, "mysql", "mysql")
        if not os.path.isdir(os.path.join(data, "mysql")):
            with open(self._log("mariadb-install.log"), "w") as log:
                r = subprocess.run(
                    [
                        "mariadb-install-db",
                        "--no-defaults",
                        "--user=mysql",
                        f"--datadir={data}",
                        "--auth-root-authentication-method=socket",
                        "--skip-test-db",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=120,
                    check=False,
                )
            if r.returncode != 0:
                raise SlurmGpuError(f"mariadb-install-db failed; see {self._log('mariadb-install.log')}")
        subprocess.run(["chown", "-R", "mysql:mysql", db], check=True, timeout=30)
        procs.start_detached(
            [
                "/usr/sbin/mariadbd",
                "--no-defaults",
                "--user=mysql",
                f"--datadir={data}",
                f"--socket={self.paths.db_socket}",
                f"--pid-file={db}/mysqld.pid",
                "--skip-networking",
                f"--log-error={self._log('mariadb.err')}",
                "--innodb-buffer-pool-size=128M",
                "--innodb-lock-wait-timeout=900",
                # MariaDB 11.6.2+ (Debian 13 and testing ship 11.8) turns snapshot isolation on; 26.05's slurmdbd
                # logs "innodb_snapshot_isolation is enabled, which is not supported by Slurm and will cause
                # slurmdbd to fatal when a write conflicts" (measured on 26.05.5 + 11.8.9). loose-: 10.11 (Debian
                # 12) has no such variable and only notes the unknown option instead of refusing to start.
                "--loose-innodb-snapshot-isolation=OFF",
            ],
            self._log("mariadb.stdout"),
            self._pidfile("mariadb"),
        )
        sql = ["mariadb", "--no-defaults", f"--socket={self.paths.db_socket}", "-e"]
        for _ in poll(30):
            self._check_alive("mariadb", "mariadbd", "mariadb.err")
            if subprocess.run([*sql, "select 1"], capture_output=True, timeout=10, check=False).returncode == 0:
                break
        else:
            raise SlurmGpuError(f"MariaDB did not answer in 30 s; see {self._log('mariadb.err')}")
        boot = subprocess.run([*sql, db_bootstrap_sql(rt)], capture_output=True, text=True, timeout=30, check=False)
        if boot.returncode != 0:
            raise SlurmGpuError(f"MariaDB bootstrap failed: {boot.stderr.strip()}")

    def _start_slurmdbd(self) -> None:
        env = dict(os.environ, MYSQL_UNIX_PORT=self.paths.db_socket, SLURM_CONF=self.slurm_conf)
        procs.start_detached(["/usr/sbin/slurmdbd", "-D"], self._log("slurmdbd.stdout"), self._pidfile("slurmdbd"), env)
        for _ in poll(30):
            self._check_alive("slurmdbd", "slurmdbd", "slurmdbd.stdout")
            try:
                if re.search(r"slurmdbd version .* started", Path(self._log("slurmdbd.log")).read_text()):
                    return
            except OSError:
                pass
        raise SlurmGpuError(f"slurmdbd did not start in 30 s; see {self._log('slurmdbd.log')}")

    def _sacctmgr(self, commands: list[list[str]]) -> None:
        for argv in commands:
            for _ in poll(20, first_s=0.2, max_s=1.0):
                self._check_alive("slurmdbd", "slurmdbd", "slurmdbd.stdout")
                r = clients.run(["sacctmgr", "-i", *argv], self.slurm_conf, timeout_s=30)
                out = (r.stdout + r.stderr).strip()
                # slurmdbd logs "started" a moment before it listens (seen once on 24.11.5 under load)
                if not (r.returncode != 0 and "Connection refused" in out):
                    break
            if r.returncode != 0 and "Nothing new added" not in out and "already exists" not in out:
                raise SlurmGpuError(
                    f"sacctmgr {' '.join(argv)} failed: {out.splitlines()[-1] if out else r.returncode}"
                )

    def _start_slurmctld(self) -> None:
        procs.start_detached(
            ["/usr/sbin/slurmctld", "-D", "-f", self.slurm_conf],
            self._log("slurmctld.stdout"),
            self._pidfile("slurmctld"),
            clients.client_env(self.slurm_conf),
        )
        for _ in poll(30):
            self._check_alive("slurmctld", "slurmctld", "slurmctld.stdout")
            if clients.ping(self.slurm_conf):
                return
        raise SlurmGpuError(f"slurmctld not answering after 30 s; see {self._log('slurmctld.log')}")

    def _start_slurmds(self, nodes: list[str], timeout_s: float = 60,
                       nvml: dict[str, NodeNvml] | None = None) -> None:
        """One slurmd per node; a node of ``nvml`` runs Slurm's gpu/nvml over the stand-in, in its own mount
        namespace (slurm_gpu/lab/nvmlnode.py)."""
        for n in nodes:
            argv = ["/usr/sbin/slurmd", "-D", "-N", n, "-f", self.slurm_conf]
            env = clients.client_env(self.slurm_conf)  # inherited by slurmstepd: `down` finds leftovers by it
            node = (nvml or {}).get(n)
            if node is not None:
                argv, env = node.argv(argv), node.env(env)
            procs.start_detached(argv, self._log(f"slurmd.{n}.stdout"), self._pidfile(f"slurmd.{n}"), env,
                                 comm_of="slurmd")
        states: dict[str, str] = {}
        for _ in poll(timeout_s):
            for n in nodes:
                self._check_alive(f"slurmd.{n}", "slurmd", f"slurmd.{n}.stdout")
            try:
                states = clients.node_states(self.slurm_conf)
            except SlurmGpuError:  # slurmctld busy (e.g. registering with slurmdbd): ask again
                continue
            if all(states.get(n) == "idle" for n in nodes):
                return
        raise SlurmGpuError(f"nodes not idle after {timeout_s:g} s: {states}; see {self.paths.log_dir}")

    # daemon -> (process name, the logs that may hold its last error), in start order
    def daemon_table(self) -> list[tuple[str, str, tuple[str, ...]]]:
        table: list[tuple[str, str, tuple[str, ...]]] = [
            ("munged", "munged", ("/var/log/munge/munged.log",)),
            ("mariadb", "mariadbd", (self._log("mariadb.err"), self._log("mariadb.stdout"))),
            ("slurmdbd", "slurmdbd", (self._log("slurmdbd.log"), self._log("slurmdbd.stdout"))),
            ("slurmctld", "slurmctld", (self._log("slurmctld.log"), self._log("slurmctld.stdout"))),
        ]
        nodes = self.node_names()
        if not nodes and os.path.isdir(self.paths.pid_dir):
            nodes = sorted(f[len("slurmd."):-len(".pid")] for f in os.listdir(self.paths.pid_dir)
                           if f.startswith("slurmd.") and f.endswith(".pid"))
        table += [(f"slurmd.{n}", "slurmd", (self._log(f"slurmd.{n}.log"), self._log(f"slurmd.{n}.stdout")))
                  for n in nodes]
        return table

    def daemon_statuses(self) -> list[DaemonStatus]:
        """Each lab daemon (start order): started (a pidfile), alive, the last error line of its logs."""
        out = []
        for name, want, logs in self.daemon_table():
            started = os.path.exists(self._pidfile(name))
            alive = started and procs.pidfile_process(self._pidfile(name), want) is not None
            last = ""
            read = why_dead if started and not alive else last_error_line
            for log in logs:
                try:
                    last = read(Path(log).read_text(errors="replace")[-65536:])
                except OSError:
                    continue
                if last:
                    break
            out.append(DaemonStatus(name, started, alive, last))
        return out

    def blame(self, e: SlurmGpuError) -> SlurmGpuError:
        """``e`` restated as the daemon that really failed (see :func:`blame`), logs named."""
        line = blame(self.daemon_statuses(), str(e))
        if line == str(e):
            return e
        return SlurmGpuError(f"{line}; logs in {self.paths.log_dir}")

    def _check_alive(self, name: str, want: str, log: str) -> None:
        if procs.pidfile_process(self._pidfile(name), want) is None:
            status = {st.name: st for st in self.daemon_statuses()}.get(name)
            tail = status.last_error if status else ""
            if not tail:
                try:
                    tail = " | ".join(ln for ln in Path(self._log(log)).read_text().splitlines()[-4:]
                                      if "pmix" not in ln)
                except OSError:
                    pass
            raise SlurmGpuError(f"{name} died: {tail or 'no output'} (logs in {self.paths.log_dir})")


def poll(timeout_s: float, first_s: float = 0.05, max_s: float = 0.5) -> Iterator[None]:
    """Yield until ``timeout_s`` passes, sleeping with a growing interval between yields."""
    deadline = time.monotonic() + timeout_s
    delay = first_s
    while True:
        yield
        if time.monotonic() >= deadline:
            return
        time.sleep(delay)
        delay = min(delay * 1.5, max_s)
