# SPDX-License-Identifier: Apache-2.0
"""The Slurm command-line backend: sbatch, scontrol and squeue run as subprocesses with a timeout.

``SlurmBackend`` is the interface gpusub needs; ``SbatchCli`` is the implementation that is tested
against the real lab. Every call is bounded (``timeout_s``) and every failure becomes one line in a
``SubmitError`` / ``SlurmUnreachable``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

from slurm_gpu.errors import SlurmUnreachable, SubmitError
from slurm_gpu.slurm_version import Version, parse_sbatch_version

DEFAULT_TIMEOUT_S = 15.0
_UNREACHABLE_MARKERS = ("Unable to contact slurm controller", "Socket timed out", "Connection refused",
                        "Could not establish a configuration source", "Zero Bytes were transmitted")


@dataclass(frozen=True)
class SubmitResult:
    job_id: int
    cluster: str | None = None


@dataclass(frozen=True)
class TestOnlyResult:
    """What ``sbatch --test-only`` reported (stderr ``Job N to start at T using P processors on nodes X in partition Y``)."""

    __test__ = False  # not a pytest class
    job_id: int | None
    start: str | None
    processors: int | None
    nodes: str | None
    partition: str | None
    preempts: tuple[int, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class JobState:
    """One job as ``scontrol show job -o`` reports it (the fields gpusub --wait shows)."""

    job_id: int
    state: str  # PENDING RUNNING COMPLETED FAILED CANCELLED TIMEOUT ...
    reason: str | None = None
    start_time: str | None = None
    node_list: str | None = None
    run_time: str | None = None
    exit_code: int | None = None  # from ExitCode=RC:SIG
    exit_signal: int | None = None
    raw: Mapping[str, str] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED",
                                  "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING",
                                  "STAGE_OUT", "STOPPED", "PREEMPTED")


class SlurmBackend(Protocol):
    """What gpusub needs from Slurm."""

    def version(self) -> Version: ...

    def submit(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> SubmitResult: ...

    def test_only(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> TestOnlyResult: ...

    def job_state(self, job_id: int) -> JobState | None: ...


def _one_line(stderr: str, fallback: str) -> str:
    """The most useful line of a Slurm client's stderr (its last ``error:``/``fatal:`` line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for marker in ("fatal:", "error:"):
        picked = [ln for ln in lines if marker in ln]
        if picked:
            # sbatch: error: Batch job submission failed: X  ->  keep everything after the first "error: "
            return picked[-1].split(marker, 1)[1].strip()
    return lines[-1] if lines else fallback


def parse_kv_line(line: str) -> dict[str, str]:
    """``scontrol -o`` output: space separated ``Key=Value`` pairs (values may contain ``=``, not spaces)."""
    out: dict[str, str] = {}
    key = None
    for word in line.split(" "):
        if "=" in word and not word.startswith("="):
            key, _, value = word.partition("=")
            out[key] = value
        elif key and word:
            out[key] += " " + word  # a value with spaces (e.g. Reason=... text, Command paths)
    return out


def _parse_test_only(stderr: str) -> TestOnlyResult:
    job_id = start = nodes = partition = None
    processors = None
    preempts: tuple[int, ...] = ()
    message = ""
    for line in stderr.splitlines():
        text = line.split(":", 1)[1].strip() if line.startswith("sbatch:") else line.strip()
        words = text.split()
        if len(words) >= 4 and words[0] == "Job" and "to start at" in text:
            message = text
            job_id = int(words[1]) if words[1].isdigit() else None
            start = words[words.index("at") + 1]
            if "using" in words:
                value = words[words.index("using") + 1]
                processors = int(value) if value.isdigit() else None
            if "nodes" in words:
                nodes = words[words.index("nodes") + 1]
            if "partition" in words:
                partition = words[words.index("partition") + 1]
        elif text.startswith("Preempts:"):
            preempts = tuple(int(x) for x in text.split(":", 1)[1].replace(",", " ").split() if x.isdigit())
    return TestOnlyResult(job_id, start, processors, nodes, partition, preempts, message)


def _exit_code(value: str | None) -> tuple[int | None, int | None]:
    if not value or ":" not in value:
        return None, None
    rc, _, sig = value.partition(":")
    return (int(rc) if rc.isdigit() else None), (int(sig) if sig.isdigit() else None)


class SbatchCli:
    """SlurmBackend through the Slurm client commands. ``env`` is the client environment (default: ours)."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None,
                 sbatch: str = "sbatch", scontrol: str = "scontrol", cache_dir: str | None = None):
        self.timeout_s = timeout_s
        self.env = dict(os.environ if env is None else env)
        self.sbatch = sbatch
        self.scontrol = scontrol
        self.cache_dir = cache_dir
        self._version: Version | None = None

    # -- plumbing -----------------------------------------------------------------------------
    def preflight(self) -> None:
        """Fail at once where the client would retry for a minute (SLURM_CONF naming a missing file)."""
        conf = self.env.get("SLURM_CONF")
        if conf and not os.path.isfile(conf):
            raise SlurmUnreachable(
                f"SLURM_CONF={conf}: no such file; point SLURM_CONF at the cluster's slurm.conf "
                "(in the lab: source <(slurm-gpu lab env))")

    def _run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
             timeout_s: float | None = None) -> tuple[int, str, str]:
        import subprocess  # lazily: not every gpusub path runs a command

        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        try:
            proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                                  env=self.env if env is None else dict(env), stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise SubmitError(f"{argv[0]}: command not found; install the Slurm client (Debian: slurm-client) "
                              "or put it on PATH") from None
        except subprocess.TimeoutExpired:
            raise SlurmUnreachable(
                f"{os.path.basename(argv[0])} gave no answer within {timeout_s:g} s; is slurmctld up? "
                f"(SLURM_CONF={self.env.get('SLURM_CONF', '/etc/slurm/slurm.conf')}; "
                "set GPUSUB_TIMEOUT_S to wait longer)") from None
        return proc.returncode, proc.stdout, proc.stderr

    def _fail(self, what: str, stderr: str) -> SubmitError:
        line = _one_line(stderr, f"{what} failed with no message")
        if any(marker in stderr for marker in _UNREACHABLE_MARKERS):
            return SlurmUnreachable(f"{what}: {line} (SLURM_CONF={self.env.get('SLURM_CONF', '/etc/slurm/slurm.conf')})")
        return SubmitError(f"{what}: {line}")

    # -- version --------------------------------------------------------------------------------
    def version(self) -> Version:
        """``sbatch --version``, run once per call and cached on disk by the binary's path and mtime.

        The query runs with a throw-away minimal slurm.conf so it needs no reachable controller.
        """
        if self._version is None:
            self._version = self._cached_version()
        return self._version

    def _cached_version(self) -> Version:
        import shutil

        path = shutil.which(self.sbatch, path=self.env.get("PATH"))
        if path is None:
            raise SubmitError(f"{self.sbatch}: command not found; install the Slurm client (Debian: slurm-client)")
        real = os.path.realpath(path)
        key = f"{real}:{os.stat(real).st_mtime_ns}"
        cache_dir = self.cache_dir or os.path.join(
            self.env.get("XDG_CACHE_HOME") or os.path.join(self.env.get("HOME") or "/tmp", ".cache"), "slurm-gpu")
        cache_file = os.path.join(cache_dir, "sbatch-version")
        try:
            with open(cache_file, encoding="utf-8") as fh:
                cached_key, _, text = fh.read().partition("\n")
            if cached_key == key:
                return parse_sbatch_version(text)
        except (OSError, ValueError):
            pass
        os.makedirs(cache_dir, exist_ok=True)
        conf = os.path.join(cache_dir, "version-probe.conf")
        if not os.path.exists(conf):
            with open(conf, "w", encoding="utf-8") as fh:
                fh.write("ClusterName=probe\nSlurmctldHost=localhost\n")
        env = dict(self.env, SLURM_CONF=conf)
        rc, out, err = self._run([real, "--version"], env=env)
        if rc != 0:
            raise self._fail("sbatch --version", err)
        version = parse_sbatch_version(out)
        tmp = f"{cache_file}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(f"{key}\n{out.strip()}\n")
        os.replace(tmp, cache_file)
        return version

    # -- submission -----------------------------------------------------------------------------
    def submit_env(self) -> dict[str, str]:
        """The environment sbatch runs with: ours without the ``SBATCH_*`` input variables, whose effect
        the rendered script already carries (sbatch would otherwise let them override its directives)."""
        return {k: v for k, v in self.env.items() if not k.startswith("SBATCH_")}

    def submit(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> SubmitResult:
        """``sbatch --parsable OPTIONS SCRIPT ARGS`` -> the job id."""
        self.preflight()
        rc, out, err = self._run([self.sbatch, "--parsable", *options, script_path, *script_args],
                                 env=self.submit_env())
        if rc != 0:
            raise self._fail("sbatch", err)
        first = out.strip().splitlines()[-1] if out.strip() else ""
        job, _, cluster = first.partition(";")
        if not job.isdigit():
            raise SubmitError(f"sbatch printed no job id (stdout {out.strip()[:80]!r}, stderr {_one_line(err, '')!r})")
        return SubmitResult(int(job), cluster or None)

    def test_only(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> TestOnlyResult:
        """``sbatch --test-only``: Slurm's own verdict and start estimate; nothing is queued."""
        self.preflight()
        rc, _out, err = self._run([self.sbatch, "--test-only", *options, script_path, *script_args],
                                  env=self.submit_env())
        if rc != 0:
            raise self._fail("sbatch --test-only", err)
        result = _parse_test_only(err)
        if result.job_id is None:
            raise SubmitError(f"sbatch --test-only: unexpected answer {_one_line(err, '')!r}")
        return result

    # -- job state ------------------------------------------------------------------------------
    def show_job(self, job_id: int) -> dict[str, str] | None:
        """``scontrol show job -o N`` as a dict (None once Slurm has forgotten the job). ``-o`` works on
        every version; 23.02+ also has ``--json``, whose shape changes per data_parser release."""
        self.preflight()
        rc, out, err = self._run([self.scontrol, "show", "job", "-o", str(job_id)])
        if rc != 0:
            if "Invalid job id" in err:
                return None
            raise self._fail("scontrol show job", err)
        return parse_kv_line(out.strip().splitlines()[0]) if out.strip() else None

    def job_detail_text(self, job_id: int) -> str:
        """``scontrol show job -d N``, multi-line: the per-node ``CPU_IDs``/``GRES`` lines (see
        :func:`node_details` and :mod:`slurm_gpu.locality`)."""
        self.preflight()
        rc, out, err = self._run([self.scontrol, "show", "job", "-d", str(job_id)])
        if rc != 0:
            raise self._fail("scontrol show job -d", err)
        return out

    def job_state(self, job_id: int) -> JobState | None:
        rec = self.show_job(job_id)
        if rec is None:
            return None
        rc, sig = _exit_code(rec.get("ExitCode"))
        reason = rec.get("Reason")
        return JobState(
            job_id=job_id, state=(rec.get("JobState") or "UNKNOWN").split()[0], reason=None if reason == "None" else reason,
            start_time=rec.get("StartTime"), node_list=rec.get("NodeList"), run_time=rec.get("RunTime"),
            exit_code=rc, exit_signal=sig, raw=rec)


def node_details(detail_record: str) -> list[dict[str, str]]:
    """Per-node allocation lines of ``scontrol show job -d`` (multi-line form):
    ``Nodes=h100n1 CPU_IDs=0-3,16-19 Mem=16000 GRES=gpu:h100:2(IDX:0,4)`` -> dicts."""
    out = []
    for line in detail_record.splitlines():
        line = line.strip()
        if line.startswith("Nodes=") and "CPU_IDs=" in line:
            out.append(parse_kv_line(line))
    return out


__all__ = ["SlurmBackend", "SbatchCli", "SubmitResult", "TestOnlyResult", "JobState", "parse_kv_line",
           "node_details", "DEFAULT_TIMEOUT_S"]
