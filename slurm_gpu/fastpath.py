# SPDX-License-Identifier: Apache-2.0
"""Replay a repeated submission without re-deciding it.

parse -> classify -> plan -> render is a pure function of the command line, the ``SBATCH_*`` /
``SLURM_*`` / ``GPUSUB_*`` environment, the user and groups, the script's text, and the files it
reads (policy, topology captures, templates, gpusub's own code, the sbatch binary that fixes the
option spellings). After a normal submission gpusub stores its result under a key of the first
four; a later call with the same key replays it only when every recorded file still has the same
size and mtime and the script the same digest. Anything else falls through to the full path.

The replay imports nothing beyond the standard library's cheapest modules (marshal, posix_spawn,
select): on the lab it turns a ~110 ms submission into about a bare interpreter start plus sbatch.
"""

from __future__ import annotations

import os

FORMAT = 1
_ENV_PREFIXES = ("SBATCH_", "SLURM_", "GPUSUB_")
_ENV_NAMES = ("HOME", "USER", "PATH", "XDG_CACHE_HOME")
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
PAYLOAD_TOKEN = "\x00GPUSUB-PAYLOAD\x00"


def shell_quote(text: str) -> str:
    """shlex.quote, without importing shlex (and re)."""
    if text and all(ch in _SAFE for ch in text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _digest(data: bytes) -> str:
    from _blake2 import blake2b

    return blake2b(data, digest_size=20).hexdigest()


def cache_dir(env) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or "/tmp", ".cache")
    return os.path.join(base, "slurm-gpu", "submit")


def key_of(argv, env) -> str:
    parts = [str(FORMAT), os.getcwd(), str(os.getuid()), ",".join(map(str, sorted(os.getgroups())))]
    parts += ["\x01" + a for a in argv]
    parts += sorted(f"\x02{k}={v}" for k, v in env.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES)
    return _digest("\x00".join(parts).encode("utf-8", "surrogateescape"))


def file_stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return (path, -1, -1)
    return (path, st.st_size, st.st_mtime_ns)


def code_files() -> list[str]:
    """gpusub's own code and templates: a change there must not replay an old rendering."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for folder in (here, os.path.join(here, "policy"), os.path.join(here, "topology"), os.path.join(here, "adapters"),
                   os.path.join(os.path.dirname(here), "templates")):
        try:
            out += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith((".py", ".j2"))]
        except OSError:
            pass
    return out


def store(env, argv, record: dict) -> None:
    """Save a replayable submission (written atomically; a failure to write costs nothing)."""
    import marshal

    folder = cache_dir(env)
    try:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, key_of(argv, env))
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "wb") as fh:
            marshal.dump(dict(record, format=FORMAT), fh)
        os.replace(tmp, path)
    except OSError:
        pass


def remember(argv, env, *, script_path: str, job_sh: str, rendered_text: str, options, sbatch: str,
             topology_dirs, policy_files, json_text: str | None, warnings) -> None:
    """Record a finished normal submission (called by slurm_gpu.submit) if it can be replayed exactly."""
    import shutil
    from shlex import quote

    payload = os.path.join(os.path.dirname(job_sh), "payload")
    if quote(payload) not in rendered_text or PAYLOAD_TOKEN in rendered_text:
        return
    sbatch_path = shutil.which(sbatch, path=env.get("PATH"))
    if sbatch_path is None:
        return
    files = [os.path.abspath(p) for p in policy_files] + [os.path.realpath(sbatch_path)]
    for folder in topology_dirs:
        files += [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
    files += code_files()
    with open(script_path, "rb") as fh:
        digest = _digest(fh.read())
    store(env, argv, {
        "files": [file_stamp(p) for p in dict.fromkeys(files)],
        "script_path": os.path.abspath(script_path), "script_digest": digest,
        "spool": os.path.dirname(os.path.dirname(job_sh)),
        "name": os.path.basename(os.path.dirname(job_sh)).rsplit(".", 1)[0],
        "text": rendered_text.replace(quote(payload), PAYLOAD_TOKEN),
        "options": list(options), "sbatch": sbatch_path, "json": json_text, "warnings": list(warnings),
    })


def _spawn(argv, env, timeout_s: float) -> tuple[int | None, str, str]:
    """Run argv with stdout/stderr captured; (None, ...) on timeout (the child is killed)."""
    import select
    import time

    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, w_out, 1),
               (os.POSIX_SPAWN_DUP2, w_err, 2), (os.POSIX_SPAWN_CLOSE, r_out), (os.POSIX_SPAWN_CLOSE, r_err)]
    try:
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions)
    finally:
        os.close(w_out)
        os.close(w_err)
    chunks = {r_out: [], r_err: []}
    open_fds = [r_out, r_err]
    deadline = time.monotonic() + timeout_s
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, 9)
            break
        ready, _, _ = select.select(open_fds, [], [], left)
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.remove(fd)
    for fd in (r_out, r_err):
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    out = b"".join(chunks[r_out]).decode("utf-8", "replace")
    err = b"".join(chunks[r_err]).decode("utf-8", "replace")
    return (None if open_fds else os.waitstatus_to_exitcode(status)), out, err


def try_submit(argv, env, out, err) -> int | None:
    """Replay a stored submission; None when there is none that is still valid (or on any doubt)."""
    import marshal

    try:
        with open(os.path.join(cache_dir(env), key_of(argv, env)), "rb") as fh:
            rec = marshal.load(fh)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        return None
    if any(file_stamp(p) != (p, size, mtime) for p, size, mtime in rec["files"]):
        return None
    conf = env.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        return None  # the full path reports this with its one-line error
    try:
        with open(rec["script_path"], "rb") as fh:
            script = fh.read()
    except OSError:
        return None
    if _digest(script) != rec["script_digest"]:
        return None

    job_dir = os.path.join(rec["spool"], f"{rec['name']}.{os.urandom(4).hex()}")
    payload = os.path.join(job_dir, "payload")
    job_sh = os.path.join(job_dir, "job.sh")
    try:
        os.mkdir(job_dir, 0o700)
        with open(os.open(payload, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700), "wb") as fh:
            fh.write(script)
        with open(os.open(job_sh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700), "w", encoding="utf-8",
                  errors="surrogateescape") as fh:
            fh.write(rec["text"].replace(PAYLOAD_TOKEN, shell_quote(payload)))
    except OSError:
        return None  # nothing submitted yet: the full path reports the problem

    try:
        timeout_s = float(env.get("GPUSUB_TIMEOUT_S") or 15)
    except ValueError:
        return None
    try:
        sbatch_env = {k: v for k, v in env.items() if not k.startswith("SBATCH_")}  # as SbatchCli.submit_env
        rc, sout, serr = _spawn([rec["sbatch"], "--parsable", *rec["options"], job_sh], sbatch_env, timeout_s)
    except OSError:
        return None
    first = sout.strip().splitlines()[-1] if sout.strip() else ""
    job = first.partition(";")[0]
    if rc is None or rc != 0 or not job.isdigit():
        # the same one-line errors as the full path (never a second sbatch: it may have queued the job)
        from slurm_gpu.adapters.slurm_cli import SbatchCli, _one_line
        from slurm_gpu.errors import SlurmUnreachable, SubmitError

        cli = SbatchCli(timeout_s=timeout_s, env=env)
        if rc is None:
            raise SlurmUnreachable(f"sbatch gave no answer within {timeout_s:g} s; is slurmctld up? "
                                   f"(SLURM_CONF={env.get('SLURM_CONF', '/etc/slurm/slurm.conf')}; "
                                   "set GPUSUB_TIMEOUT_S to wait longer)")
        if rc != 0:
            raise cli._fail("sbatch", serr)
        raise SubmitError(f"sbatch printed no job id (stdout {sout.strip()[:80]!r}, stderr {_one_line(serr, '')!r})")
    if rec["json"] is not None:
        path_json = '"' + job_sh + '"' if all(ch in _SAFE for ch in job_sh) else None
        if path_json is None:
            import json

            path_json = json.dumps(job_sh)
        out.write(rec["json"].replace('"@@JOB_ID@@"', job).replace('"@@SCRIPT@@"', path_json) + "\n")
    else:
        out.write(job + "\n")
    for line in rec.get("warnings", ()):
        err.write(f"gpusub: warning: {line}\n")
    return 0


__all__ = ["try_submit", "store", "remember", "key_of", "file_stamp", "code_files", "shell_quote", "PAYLOAD_TOKEN"]
