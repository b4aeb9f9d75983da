# SPDX-License-Identifier: Apache-2.0
"""The per-job GPU isolation request that travels from gpusub to the node hooks, and the outcome the
prolog leaves for the TaskProlog. Pure: text in, data out.

**Carrier: the job's ``Comment``.** Slurm hands it to the Prolog and the Epilog as ``SLURM_JOB_COMMENT``
on 22.05 and 24.11 (both checked in the lab, /work/shared/notes/slurm-lab.md section 6); job_submit.lua
can read and rewrite ``job_desc.comment``. Our part of the comment is ONE whitespace-delimited token:

    slurm-gpu:mig=3g.40gb:2            a dynamic MIG layout per allocated GPU (profile[:count], comma list)
    slurm-gpu:mig=1g.10gb:2,2g.20gb:1
    slurm-gpu:mps=25                   an MPS share: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25

Other text in the comment is left alone (``with_token`` replaces only our token). Our token is read
strictly: at most one, at most :data:`MAX_TOKEN` characters, known keys only, each value in its grammar
(MIG profiles by :func:`slurm_gpu.units.parse_mig_profile`). Anything else is a :class:`RequestError`
whose message is one line; the prolog turns it into a failed job, never into a drained node.
"""

from __future__ import annotations

import json
from typing import Any

from slurm_gpu.digits import is_digits
from slurm_gpu.plain import Record, record
from slurm_gpu.units import UnitError, parse_mig_profile

PREFIX = "slurm-gpu:"
KEYS = ("mig", "mps")
MAX_TOKEN = 128  # characters of our token (the whole comment may be longer)
MAX_COMMENT = 4096  # a longer comment is not searched (bounded work for the hook)
MAX_MIG_ITEMS = 7  # a GPU has 7 compute slices: no layout has more instances
MIG_FORMS = "profile[:count] items joined by commas, e.g. 3g.40gb:2 or 1g.10gb:2,2g.20gb:1 (count 1-7)"
MPS_FORMS = "a whole percentage 1-100, e.g. 25"

MigSpec = tuple[tuple[str, int], ...]  # ((profile, count), ...), profiles without a GPU-type prefix


class RequestError(ValueError):
    """A bad slurm-gpu token in the job's comment (one line)."""


@record
class JobRequest(Record):
    """What the job asked the node hooks for: a MIG layout (per allocated GPU) or an MPS share."""

    mig: MigSpec = ()
    mps_pct: int | None = None


def parse_mig_spec(text: str) -> MigSpec:
    """``3g.40gb:2,1g.10gb`` -> (("3g.40gb", 2), ("1g.10gb", 1)). No GPU-type prefix, no repeats."""
    if not isinstance(text, str) or not text or len(text) > MAX_TOKEN:
        raise RequestError(f"bad MIG request {str(text)[:MAX_TOKEN]!r}: empty or too long; accepted: {MIG_FORMS}")
    items = text.split(",")
    if len(items) > MAX_MIG_ITEMS:
        raise RequestError(f"bad MIG request {text!r}: more than {MAX_MIG_ITEMS} items; accepted: {MIG_FORMS}")
    out: list[tuple[str, int]] = []
    for item in items:
        prof_text, sep, count_text = item.partition(":")
        try:
            prof = parse_mig_profile(prof_text)
        except UnitError as e:
            raise RequestError(f"bad MIG request {text!r}: {e}") from None
        if prof.gpu_type is not None:
            raise RequestError(f"bad MIG request {text!r}: write the profile without a GPU type "
                               f"({prof.name}); accepted: {MIG_FORMS}")
        if sep and not (count_text.isascii() and count_text.isdigit() and len(count_text) == 1
                        and 1 <= int(count_text) <= 7):
            raise RequestError(f"bad MIG request {text!r}: count {count_text!r} is not 1-7; accepted: {MIG_FORMS}")
        if prof_text != prof.name:  # surrounding blanks or other spellings: one canonical form only
            raise RequestError(f"bad MIG request {text!r}: write {prof.name!r}; accepted: {MIG_FORMS}")
        if any(p == prof.name for p, _ in out):
            raise RequestError(f"bad MIG request {text!r}: profile {prof.name} given twice; accepted: {MIG_FORMS}")
        out.append((prof.name, int(count_text) if sep else 1))
    return tuple(out)


def format_mig_spec(spec: MigSpec) -> str:
    return ",".join(f"{p}:{n}" for p, n in spec)


def parse_mps_pct(text: str) -> int:
    if not (isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 3 and 1 <= int(text) <= 100):
        raise RequestError(f"bad MPS share {str(text)[:MAX_TOKEN]!r}: accepted: {MPS_FORMS}")
    return int(text)


def encode(request: JobRequest) -> str:
    """The token for ``request`` (exactly one of mig / mps must be set)."""
    if bool(request.mig) == (request.mps_pct is not None):
        raise RequestError("a slurm-gpu request is either a MIG layout or an MPS share")
    if request.mig:
        token = f"{PREFIX}mig={format_mig_spec(request.mig)}"
        parse_mig_spec(format_mig_spec(request.mig))  # the token must read back
    else:
        token = f"{PREFIX}mps={parse_mps_pct(str(request.mps_pct))}"
    if len(token) > MAX_TOKEN:
        raise RequestError(f"slurm-gpu request longer than {MAX_TOKEN} characters")
    return token


def decode(comment: str | None) -> JobRequest | None:
    """Our request in a job comment; ``None`` when the comment carries no slurm-gpu token."""
    if not comment:
        return None
    if len(comment) > MAX_COMMENT:
        if PREFIX in comment:
            raise RequestError(f"job comment longer than {MAX_COMMENT} characters with a {PREFIX} token")
        return None
    tokens = [w for w in comment.split() if w.startswith(PREFIX)]
    if not tokens:
        return None
    if len(tokens) > 1:
        raise RequestError(f"job comment has {len(tokens)} {PREFIX} tokens; allowed one")
    token = tokens[0]
    if len(token) > MAX_TOKEN:
        raise RequestError(f"{PREFIX} token longer than {MAX_TOKEN} characters")
    key, eq, value = token[len(PREFIX):].partition("=")
    if not eq or key not in KEYS:
        raise RequestError(f"bad {PREFIX} token {token!r}: allowed {PREFIX}mig=<layout> or {PREFIX}mps=<percent>")
    if key == "mig":
        return JobRequest(mig=parse_mig_spec(value))
    return JobRequest(mps_pct=parse_mps_pct(value))


def with_token(comment: str | None, request: JobRequest | None) -> str:
    """``comment`` with our token replaced by ``request``'s (or removed when ``request`` is None)."""
    words = [w for w in (comment or "").split() if not w.startswith(PREFIX)]
    if request is not None:
        words.append(encode(request))
    return " ".join(words)


# ---- the outcome the prolog leaves for the TaskProlog ----------------------------------------

MAX_OUTCOME = 64 * 1024


@record
class Outcome(Record):
    """What a setup/teardown step did. ``ok`` False with ``fault`` "job": the job's own fault (bad
    profile, no capacity, GPU busy): the prolog exits 0 and the TaskProlog fails the job with
    ``message``. ``fault`` "node": the node's (NVML hung, daemon refuses to quit): the runner decides
    whether to drain. ``env``: variables the TaskProlog exports (MIG UUIDs, MPS directories)."""

    ok: bool
    message: str = ""
    fault: str = ""  # "", "job" or "node"
    env: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> str:
        return json.dumps({"ok": self.ok, "message": self.message, "fault": self.fault, "env": dict(self.env)},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        """Strict reading of :meth:`to_json`'s output (a corrupt file is a ``ValueError``)."""
        if len(text) > MAX_OUTCOME:
            raise ValueError("outcome file too large")
        data: Any = json.loads(text)
        if not isinstance(data, dict) or set(data) != {"ok", "message", "fault", "env"}:
            raise ValueError("outcome: expected keys ok, message, fault, env")
        ok, message, fault, env = data["ok"], data["message"], data["fault"], data["env"]
        if not isinstance(ok, bool) or not isinstance(message, str) or fault not in ("", "job", "node") \
                or not isinstance(env, dict) or not all(_env_ok(k, v) for k, v in env.items()):
            raise ValueError("outcome: bad value")
        return cls(ok, message, fault, tuple(sorted(env.items())))


def _env_ok(key: object, value: object) -> bool:
    return (isinstance(key, str) and key.isascii() and key.replace("_", "").isalnum() and not is_digits(key[:1])
            and isinstance(value, str) and value.isprintable() and "'" not in value)


def ok(env: dict[str, str] | None = None) -> Outcome:
    return Outcome(True, env=tuple(sorted((env or {}).items())))


def failed(message: str, fault: str = "job") -> Outcome:
    return Outcome(False, " ".join(message.split())[:500], fault)


def task_prolog_lines(outcome: Outcome) -> tuple[list[str], int]:
    """The TaskProlog's stdout lines for ``outcome`` (Slurm obeys ``export``/``print``) and its exit
    status: a failed setup prints one ``slurm-gpu:`` line into the job's output and exits 1."""
    if not outcome.ok:
        return [f"print slurm-gpu: GPU setup failed: {outcome.message}"], 1
    return [f"export {k}={v}" for k, v in outcome.env], 0


__all__ = ["PREFIX", "KEYS", "MAX_TOKEN", "MigSpec", "RequestError", "JobRequest", "parse_mig_spec",
           "format_mig_spec", "parse_mps_pct", "encode", "decode", "with_token", "Outcome", "ok", "failed",
           "task_prolog_lines"]
