# SPDX-License-Identifier: Apache-2.0
"""``SbatchCli``: the :class:`slurm_gpu.ports.SlurmClient` through the Slurm client commands.

Every call goes through :func:`slurm_gpu.adapters.slurm.runner.run_slurm` (bounded by ``timeout_s``);
every answer is read by :mod:`slurm_gpu.slurm.records` (jobs from squeue's JSON, one job's state from
``squeue -O`` fields that hold no user text: docs/records.md); every failure is one line in a
``SubmitError`` / ``SlurmUnreachable``. Tested against the real lab (tests/adapters).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from slurm_gpu.adapters.cache import Cache, entry_name, user_cache_dir
from slurm_gpu.adapters.fs import create_private
from slurm_gpu.adapters.slurm.runner import DEFAULT_TIMEOUT_S, failure, run_slurm
from slurm_gpu.errors import SlurmRefused, SlurmUnreachable, SubmitError
from slurm_gpu.slurm.records import (
    JobsRead,
    JobState,
    NodeAlloc,
    SubmitResult,
    TestOnlyResult,
    job_from,
    job_state_of,
    one_line,
    parse_node_records,
    parse_parsable,
    parse_sbatch_version,
    parse_squeue_job,
    parse_test_only,
    read_jobs,
    squeue_format,
    topology_of,
)
from slurm_gpu.slurm.release import SlurmSpelling, Version, spelling_for


def _which(command: str, path: str | None) -> str | None:
    """shutil.which for one executable (without importing shutil and what it pulls in on every run)."""
    if os.sep in command:
        return command if os.access(command, os.X_OK) and not os.path.isdir(command) else None
    for directory in (path if path is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", command)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


# PEP 538: a Python started in the C locale sets LC_CTYPE to one of these in its own environment, which
# sbatch would pass on to the job (plain sbatch's job has no LC_CTYPE then; measured on 22.05.8).
_COERCED = frozenset({"C.UTF-8", "C.utf8", "UTF-8"})


def _coerced_locale(env: Mapping[str, str]) -> bool:
    """Whether ``env``'s LC_CTYPE is the one this interpreter set at its start (not in the environment
    the process was started with, /proc/self/environ), rather than the user's."""
    value = env.get("LC_CTYPE")
    if value not in _COERCED or os.environ.get("LC_CTYPE") != value:
        return False
    try:
        with open("/proc/self/environ", "rb") as fh:
            initial = fh.read().split(b"\0")
    except OSError:
        return False
    return not any(item.startswith(b"LC_CTYPE=") for item in initial)


class SbatchCli:
    """SlurmClient through sbatch and scontrol. ``env`` is the client environment (default: ours)."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None,
                 sbatch: str = "sbatch", scontrol: str = "scontrol", cache_dir: str | None = None,
                 squeue: str = "squeue"):
        self.timeout_s = timeout_s
        self.env = dict(os.environ if env is None else env)
        self.sbatch = sbatch
        self.scontrol = scontrol
        self.squeue = squeue
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

    def _run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
        proc = run_slurm(argv, env=self.env if env is None else env, timeout_s=self.timeout_s)
        return proc.returncode, proc.stdout, proc.stderr

    def _fail(self, what: str, stderr: str) -> SubmitError:
        return failure(what, stderr, self.env)

    # -- version --------------------------------------------------------------------------------
    def version(self) -> Version:
        """``sbatch --version``, run once per call and cached on disk by the binary's path and mtime.

        The query runs with a throw-away minimal slurm.conf so it needs no reachable controller.
        """
        if self._version is None:
            self._version = self._cached_version()
        return self._version

    def spelling(self) -> SlurmSpelling:
        return spelling_for(self.version())

    def _cached_version(self) -> Version:
        text = self._probe("--version", "sbatch-version", with_site_conf=False)
        return parse_sbatch_version(text)

    def help_text(self) -> str:
        """``sbatch --help`` (its "Options provided by plugins:" section lists the site's SPANK options),
        cached like the version. It reads the site's slurm.conf (plugstack.conf sits beside it) but needs
        no reachable controller."""
        conf = self.env.get("SLURM_CONF", "/etc/slurm/slurm.conf")
        # one entry per slurm.conf: a user of two clusters (or two labs) does not evict one with the other
        return self._probe("--help", entry_name("sbatch-help", conf), with_site_conf=True)

    def _probe(self, flag: str, name: str, with_site_conf: bool) -> str:
        """``sbatch FLAG``'s output, cached on disk by the binary's path and mtime (and the site's
        slurm.conf for ``with_site_conf``). A cache that cannot be read or written costs one run of
        sbatch, never an error."""
        path = _which(self.sbatch, self.env.get("PATH"))
        if path is None:
            raise SubmitError(f"{self.sbatch}: command not found; install the Slurm client (Debian: slurm-client)")
        real = os.path.realpath(path)
        key = f"{real}:{os.stat(real).st_mtime_ns}"
        if with_site_conf:
            conf = self.env.get("SLURM_CONF", "/etc/slurm/slurm.conf")
            try:
                key += f":{conf}:{os.stat(conf).st_mtime_ns}"
            except OSError:
                key += f":{conf}:-"
        cache = Cache(self.cache_dir or user_cache_dir(self.env), 1 << 20)
        cached = cache.get(name, key)
        if cached is not None:
            return cached.decode("utf-8", "replace")
        env = dict(self.env)
        probe_conf = None
        if not with_site_conf:  # --version needs no cluster: a throw-away minimal slurm.conf
            probe_conf = create_private(self.env.get("TMPDIR") or "/tmp", "gpusub-probe.", ".conf",
                                        b"ClusterName=probe\nSlurmctldHost=localhost\n")
            env["SLURM_CONF"] = probe_conf
        try:
            rc, out, err = self._run([real, flag], env=env)
        finally:
            if probe_conf is not None:
                os.unlink(probe_conf)
        if rc != 0:
            raise self._fail(f"sbatch {flag}", err)
        cache.put(name, key, out.encode("utf-8", "replace"))  # a read-only or missing home: no cache, same answer
        return out

    # -- submission -----------------------------------------------------------------------------
    def submit_env(self) -> dict[str, str]:
        """The environment sbatch runs with: ours without the ``SBATCH_*`` input variables, whose effect
        the rendered script already carries (sbatch would otherwise let them override its directives)."""
        env = {k: v for k, v in self.env.items() if not k.startswith("SBATCH_")}
        if _coerced_locale(env):
            del env["LC_CTYPE"]
        return env

    def _sbatch(self, flag: str, options: Sequence[str], script_path: str,
                script_args: Sequence[str]) -> tuple[str, str]:
        """``sbatch FLAG OPTIONS SCRIPT ARGS`` in :meth:`submit_env` after the preflight -> (stdout, stderr);
        a failure is the error of :meth:`_fail`, named by the flag."""
        self.preflight()
        rc, out, err = self._run([self.sbatch, flag, *options, script_path, *script_args], env=self.submit_env())
        if rc != 0:
            exc = self._fail("sbatch" if flag == "--parsable" else f"sbatch {flag}", err)
            raise exc if isinstance(exc, SlurmUnreachable) else SlurmRefused(str(exc))
        return out, err

    def submit(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> SubmitResult:
        """``sbatch --parsable OPTIONS SCRIPT ARGS`` -> the job id."""
        out, err = self._sbatch("--parsable", options, script_path, script_args)
        result = parse_parsable(out)
        if result is None:
            raise SubmitError(f"sbatch printed no job id (stdout {out.strip()[:80]!r}, stderr {one_line(err, '')!r})")
        return result._replace(messages=err)

    def test_only(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> TestOnlyResult:
        """``sbatch --test-only``: Slurm's own verdict and start estimate; nothing is queued."""
        _out, err = self._sbatch("--test-only", options, script_path, script_args)
        result = parse_test_only(err)
        if result.job_id is None:
            raise SubmitError(f"sbatch --test-only: unexpected answer {one_line(err, '')!r}")
        return result

    # -- the cluster view (slurm-gpu cluster) -----------------------------------------------------
    def _text(self, argv: Sequence[str]) -> str:
        self.preflight()
        rc, out, err = self._run(argv)
        if rc != 0:
            raise self._fail(" ".join(argv[:3]), err)
        return out

    def nodes_text(self) -> str:
        """``scontrol show node -d -o``: one line per node with Gres, GresUsed (IDX), CPUs and memory
        (22.05 and 24.11 print the same keys; ``--json`` changes shape per data_parser release)."""
        return self._text([self.scontrol, "show", "node", "-d", "-o"])

    def jobs_json(self, job_ids: Sequence[int] = ()) -> str:
        """squeue's JSON (docs/records.md) of every job slurmctld holds (``-t all``: pending, running and
        finished within MinJobAge), or of ``job_ids`` (22.05 prints every job whatever -j says; the
        reader picks). A job id Slurm no longer knows gives a document without jobs."""
        self.preflight()
        argv = [self.squeue, self.spelling().squeue_json, "-t", "all"]
        if job_ids:
            argv += ["-j", ",".join(str(int(j)) for j in job_ids)]
        rc, out, err = self._run(argv)
        if rc != 0:
            if job_ids and "Invalid job id" in err:
                return '{"jobs": []}'
            raise self._fail("squeue --json", err)
        return out

    def accounts_text(self, user: str) -> str:
        """``sacctmgr -nP show assoc user=USER format=account``: the user's accounts, one a line."""
        return self._text(["sacctmgr", "-nP", "show", "assoc", f"user={user}", "format=account"])

    def partitions_text(self) -> str:
        """``scontrol show partition -o`` (JobDefaults=DefCpuPerGPU=…,DefMemPerGPU=…)."""
        return self._text([self.scontrol, "show", "partition", "-o"])

    def topology_text(self) -> str:
        """``scontrol show topology`` (leaf switches, blocks); "" when Slurm has none or refuses."""
        self.preflight()
        rc, out, _err = self._run([self.scontrol, "show", "topology"])
        return out if rc == 0 else ""

    def gres_conf_text(self) -> str | None:
        """gres.conf beside the slurm.conf in use (its ``Cores=`` give each GPU's socket); None when it
        cannot be read (a login node without it: the picture then groups no sockets)."""
        conf = self.env.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
        try:
            with open(os.path.join(os.path.dirname(conf), "gres.conf"), encoding="utf-8") as fh:
                return fh.read(4 << 20)
        except (OSError, UnicodeDecodeError):
            return None

    # -- job state ------------------------------------------------------------------------------
    def job_records(self, job_ids: Sequence[int] = (), topology: bool = False) -> JobsRead:
        """The jobs (all, or ``job_ids``) read from squeue's JSON; ``topology``: read the nodes' cores per
        socket too (``scontrol show node -o``), for the allocations' CPU ids."""
        topo = topology_of(parse_node_records(self.nodes_text())) if topology else None
        return read_jobs(self.jobs_json(job_ids), topo)

    def show_job(self, job_id: int) -> dict[str, str] | None:
        """One job's fields in scontrol's names (from squeue's JSON); None once Slurm has forgotten it."""
        rec = job_from(self.job_records([job_id]), job_id)
        return None if rec is None else dict(rec.fields)

    def job_detail(self, job_id: int) -> tuple[dict[str, str], list[NodeAlloc]]:
        """(job fields, per-node allocations with CPU ids and GPU indices); SubmitError when Slurm has no
        record of the job."""
        rec = job_from(self.job_records([job_id], topology=True), job_id)
        if rec is None:
            raise SubmitError(f"job {job_id}: unknown to Slurm (squeue --json has no record of it)")
        return dict(rec.fields), list(rec.allocs)

    def job_fields(self, job_id: int) -> dict[str, str] | None:
        """``squeue -h -t all -j ID -O ...``: the job's state fields, none of them user text
        (:data:`slurm_gpu.slurm.records.SQUEUE_FIELDS`); None once Slurm has forgotten the job."""
        self.preflight()
        rc, out, err = self._run([self.squeue, "-h", "-t", "all", "-j", str(int(job_id)), "-O", squeue_format()])
        if rc != 0:
            if "Invalid job id" in err:
                return None
            raise self._fail("squeue -j", err)
        return parse_squeue_job(out, job_id)

    def job_state(self, job_id: int) -> JobState | None:
        rec = self.job_fields(job_id)
        return None if rec is None else job_state_of(job_id, rec)


__all__ = ["SbatchCli", "DEFAULT_TIMEOUT_S"]
