# SPDX-License-Identifier: Apache-2.0
"""Render gpusub's batch script (pure: data in, text out; the shell itself is written by render.shell).

The rendered script carries the effective sbatch options as sorted ``#SBATCH`` lines, a header comment,
the plan's environment, the checkpoint hook point and the user's original script (the *payload*) inside a
quoted here-document, byte for byte, so no node needs the submitter's files. The batch shell writes it
into a private directory, runs it once with its own ``#!`` interpreter (as sbatch would), stays its
parent (signals for the batch shell are passed on) and exits with its code. Every value is quoted twice
over: with ``shlex.quote`` for bash, and for sbatch's own ``#SBATCH`` lexer. A value neither can carry on
one line (a newline) goes to ``sbatch_argv`` instead of a directive.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from slurm_gpu import __version__
from slurm_gpu.digits import is_digits
from slurm_gpu.errors import UsageError
from slurm_gpu.plain import NamedTuple
from slurm_gpu.render.checkpoint import CheckpointSettings, protocol_options, user_lead
from slurm_gpu.render.job_env import EnvStep, TresPerTask, restore_steps, sbatch_inputs
from slurm_gpu.render.shell import ScriptParts, batch_script, comment_text
from slurm_gpu.slurm.sbatch.table import BY_NAME, MEMORY_GROUP, SAME_FIELD

if TYPE_CHECKING:
    from slurm_gpu.placement.plan import BindingPlan
    from slurm_gpu.request import Decision
    from slurm_gpu.slurm.release import SlurmSpelling
    from slurm_gpu.slurm.sbatch.parse import Submission

# sbatch options that steer the sbatch client, not the job: always on the command line.
# (--wrap is dropped: gpusub writes the wrapped command as the payload script, as sbatch would.)
CLIENT_OPTIONS = frozenset(
    {"test-only", "parsable", "quiet", "verbose", "wait", "ignore-pbs", "help", "usage", "version", "wrap"}
)

# srun options that an srun inside the batch script also reads from its input environment.
SRUN_INPUT_ENV = {
    "cpu-bind": "SLURM_CPU_BIND",
    "gpu-bind": "SLURM_GPU_BIND",
    "tres-bind": "SLURM_TRES_BIND",
    "mem-bind": "SLURM_MEM_BIND",
    "distribution": "SLURM_DISTRIBUTION",
    "gres-flags": "SLURM_GRES_FLAGS",
    "exact": "SLURM_EXACT",
    "overlap": "SLURM_OVERLAP",
    "gpus-per-task": "SLURM_GPUS_PER_TASK",
    "cpus-per-task": "SLURM_CPUS_PER_TASK",
    "hint": "SLURM_HINT",
}

# The per-task shim (srun launch, shared isolation): rank variables and this task's GPUs, in
# CUDA_VISIBLE_DEVICES order (ordinals for frameworks, entries for tools), then the payload.
SHIM = (
    'export LOCAL_RANK="${SLURM_LOCALID:-0}" RANK="${SLURM_PROCID:-0}" WORLD_SIZE="${SLURM_NTASKS:-1}"; '
    "n=@GPUS_PER_TASK@; first=$((LOCAL_RANK * n)); "
    'IFS=, read -r -a cvd <<< "${CUDA_VISIBLE_DEVICES:-}"; '
    'export GPUSUB_TASK_GPUS="$(IFS=,; echo "${cvd[*]:first:n}")" '
    'GPUSUB_TASK_GPU_ORDINALS="$(seq -s, "$first" "$((first + n - 1))")"; '
    'exec "$@"'
)

_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./\-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RenderError(UsageError):
    """The job cannot be rendered (a value no script can carry, a bad environment name)."""


class RenderedScript(NamedTuple):  # NamedTuples: a frozen dataclass costs ~1 ms at import
    """The batch script text and the sbatch options that must go on sbatch's command line
    (options only: no ``sbatch``, no script path; the script's arguments are inside the text)."""

    text: str
    sbatch_argv: tuple[str, ...]


def directive_quote(value: str) -> str:
    """Quote ``value`` for sbatch's ``#SBATCH`` lexer: bare when safe, else in double quotes with
    ``\\`` and ``"`` escaped (sbatch honours backslash escapes inside quotes in every release)."""
    if value and _SAFE.match(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _split_option(text: str) -> tuple[str, str | None]:
    name, eq, value = text.lstrip("-").partition("=")
    return name, (value if eq else None)


# The GPU count forms. The user's forms stay as written; where the policy resolved an untyped request
# to a type, the type is added to each untyped form (so a QOS limit on a typed GPU applies; slurmctld
# refuses typed and untyped GPU options together). The classifier adds GPU options of its own only
# where the user gave none (a --gpu-fraction slice or share, a VRAM fit).
GPU_COUNT_FORMS = frozenset({"gres", "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket"})


def _is_gpu_gres_item(item: str) -> bool:
    name = item.split(":", 1)[0].split("=", 1)[0]
    return name in ("gpu", "gres/gpu")


def _type_gres(value: str, gpu_type: str) -> str:
    """``gpu:2`` -> ``gpu:TYPE:2``, ``gpu`` -> ``gpu:TYPE``; typed items and other GRES unchanged."""
    out = []
    for item in value.split(","):
        parts = item.split(":")
        if parts[0] in ("gpu", "gres/gpu") and len(parts) == 1:
            item = f"{parts[0]}:{gpu_type}"
        elif parts[0] in ("gpu", "gres/gpu") and len(parts) == 2 and is_digits(parts[1]):
            item = f"{parts[0]}:{gpu_type}:{parts[1]}"
        out.append(item)
    return ",".join(out)


def user_gpu_forms(options: Iterable[tuple[str, str | None]]) -> frozenset[str]:
    """The GPU count forms among the user's options (``gres`` only when it names a GPU)."""
    found = set()
    for name, value in options:
        canonical = BY_NAME[name].canonical if name in BY_NAME else name
        if canonical == "gres":
            if any(_is_gpu_gres_item(i) for i in (value or "").split(",")):
                found.add(canonical)
        elif canonical in GPU_COUNT_FORMS and value:
            found.add(canonical)
    return frozenset(found)


def type_user_gpu_forms(state: dict[str, str | None], gpu_type: str) -> None:
    """Add the policy's GPU type to the user's untyped GPU forms, in place."""
    for name in GPU_COUNT_FORMS:
        value = state.get(name)
        if not value:
            continue
        if name == "gres":
            state[name] = _type_gres(value, gpu_type)
        elif is_digits(value):
            state[name] = f"{gpu_type}:{value}"


def effective_options(sub: Submission, decision: Decision | None, plan: BindingPlan | None,
                      component: int = 0) -> list[tuple[str, str | None]]:
    """The user's options (of one heterogeneous-job component; 0 for a normal job), then the policy's
    changes, then the plan's additions (later wins)."""
    user_options = sub.components[component]
    state: dict[str, str | None] = {}
    order: list[str] = []
    verbose = 0

    def put(name: str, value: str | None) -> None:
        nonlocal verbose
        if name == "verbose":
            verbose += 1
            return
        canonical = BY_NAME[name].canonical if name in BY_NAME else name
        for group in SAME_FIELD + (frozenset(MEMORY_GROUP),):
            if canonical in group:
                for other in group - {canonical}:
                    state.pop(other, None)
        state[canonical] = value
        if canonical not in order:
            order.append(canonical)

    for name, value in user_options:
        put(name, value)
    if decision is not None:
        if decision.partition:
            put("partition", decision.partition)
        if decision.qos:
            put("qos", decision.qos)
        mine = user_gpu_forms(user_options)
        for text in decision.added_options:  # the classifier adds GPU options only where the user gave none
            name, value = _split_option(text)
            if name == "gres" and state.get("gres"):  # the user's non-GPU gres items (shard, licences) stay
                value = ",".join([state["gres"] or "", value or ""]).strip(",")
            put(name, value)
        if mine and decision.gpu_type:
            type_user_gpu_forms(state, decision.gpu_type)
    for text in plan.sbatch_options if plan is not None else ():
        put(*_split_option(text))
    # sbatch names a job after its script; the submitted file has another name
    if "job-name" not in state and component == 0:
        script = sub.script_path
        put("job-name", os.path.basename(script) if script and script != "-" else
            ("wrap" if sub.wrap is not None else "sbatch"))
    out = [(n, state[n]) for n in sorted(state)]
    return out + [("verbose", None)] * verbose


def _canonical_options(options: Iterable[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    return [(BY_NAME[n].canonical if n in BY_NAME else n, v) for n, v in options]


def _job_name_added(sub: Submission) -> bool:
    """Whether effective_options named the job where sbatch itself sets no SLURM_JOB_NAME: a script read
    from standard input, no --job-name (measured on 22.05.8; 24.11.5 sets SLURM_JOB_NAME=sbatch; a named
    script or --wrap: sbatch sets it)."""
    named = any((BY_NAME[n].canonical if n in BY_NAME else n) == "job-name" for n, _ in sub.components[0])
    return not named and sub.wrap is None and (not sub.script_path or sub.script_path == "-")


def _option_text(name: str, value: str | None) -> str:
    return f"--{name}" if value is None else f"--{name}={value}"


def _srun_env(srun_options: Iterable[str], spelling: SlurmSpelling) -> tuple[list[tuple[str, str]], list[str]]:
    """srun options as srun input variables (batch launch); the rest are returned to be listed."""
    has_tres_bind = spelling.has_tres_bind
    exports: list[tuple[str, str]] = []
    leftover: list[str] = []
    for text in srun_options:
        name, value = _split_option(text)
        if name == "tres-bind" and not has_tres_bind and value and value.startswith("gres/gpu:"):
            kind = value[len("gres/gpu:") :]
            name, value = "gpu-bind", kind.replace("map:", "map_gpu:").replace("mask:", "mask_gpu:")
        var = SRUN_INPUT_ENV.get(name)
        if var is None or (name == "tres-bind" and not has_tres_bind):
            leftover.append(text)
            continue
        exports.append((var, "1" if value is None else value))
    return exports, leftover


def _isolation(plan: BindingPlan | None, sub: Submission) -> str | None:
    """The plan's GPU isolation, else the one the user asked for (``--gpu-isolation``), else None."""
    return (plan.isolation if plan is not None else None) or sub.gpusub.gpu_isolation


def _task_shim(plan: BindingPlan | None, sub: Submission) -> str:
    """Bash run by each srun task before the payload: the plan's own prelude (GPU order, LOCAL_RANK)
    when it has one, else the generic shim for shared isolation; "" when no shim is needed."""
    if plan is not None and plan.task_prelude:
        return plan.task_prelude.rstrip("\n") + '\nexec "$@"'
    if _isolation(plan, sub) == "shared":
        gpus_per_task = plan.gpus_per_task if plan is not None else None
        return SHIM.replace("@GPUS_PER_TASK@", str(gpus_per_task or 1))
    return ""


def _check_value(name: str, value: str | None) -> None:
    if value is not None and "\0" in value:
        raise RenderError(f"--{name}: a value cannot contain a NUL byte")


class Payload(NamedTuple):
    """The user's batch script, carried inside the rendered one byte for byte (bytes that are not UTF-8
    travel as surrogate escapes and are written back as the same bytes)."""

    text: str
    name: str  # the file name it runs under (the original's base name)


_SIGNAL = re.compile(r"^(?:R?B|BR?):(?:SIG)?([A-Z][A-Z0-9]*|[0-9]{1,2})(?:@[0-9]+)?$")
_SIGNAL_NAMES = frozenset({"HUP", "INT", "QUIT", "USR1", "USR2", "ALRM", "TERM", "CONT", "URG", "XCPU", "XFSZ",
                           "VTALRM", "PROF", "WINCH", "PWR", "SYS", "STKFLT", "IO", "POLL"})
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


def check_payload(text: str) -> None:
    """What no batch script may contain (sbatch refuses a NUL byte; bash cannot carry one)."""
    if "\0" in text:
        raise RenderError("the batch script contains a NUL byte (sbatch refuses it too)")


def payload_of(sub: Submission, script_text: str | None) -> Payload:
    """The payload for a submission: the script's text, or the ``--wrap`` command as sbatch writes it."""
    if script_text is None:
        wrap = sub.wrap if sub.wrap is not None else ""
        return Payload(text=f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{wrap}\n", name="wrap")
    path = sub.script_path
    base = os.path.basename(path) if path and path != "-" else "script"
    name = _SAFE_NAME.sub("_", base)[:64].lstrip(".-") or "script"
    return Payload(text=script_text, name=name)


def _base64(text: str) -> str:
    import base64

    raw = base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")
    return "\n".join(raw[i:i + 76] for i in range(0, len(raw), 76))


def _delimiter(text: str) -> str:
    """A here-document end marker that is not a line of ``text``."""
    from slurm_gpu.plain import blake2b

    digest = blake2b(text.encode("utf-8", "surrogateescape"), digest_size=32).hexdigest()
    lines = set(text.split("\n"))
    for n in range(8, 65, 8):
        candidate = f"GPUSUB_PAYLOAD_{digest[:n]}"
        if candidate not in lines:
            return candidate
    raise RenderError("the batch script cannot be carried in a here-document")  # sha256 collision: never


def forwarded_signals(options: Iterable[tuple[str, str | None]]) -> list[str]:
    """Signals the user asked Slurm to send to the batch shell alone (``--signal=B:SIG@T``): gpusub's
    batch shell passes them on to the script, which is where sbatch would have delivered them."""
    out = []
    for name, value in options:
        if name == "signal" and value:
            m = _SIGNAL.match(value.upper())
            if m:
                sig: str = m.group(1)
                if sig in _SIGNAL_NAMES or (is_digits(sig) and 1 <= int(sig) <= 64 and sig not in ("9", "19")):
                    out.append(sig)
    return sorted(set(out))


def _with_protocol_options(options: list[tuple[str, str | None]], added: list[str]) -> list[tuple[str, str | None]]:
    """The options with the checkpoint protocol's (which win), sorted as effective_options sorts them."""
    extra = [_split_option(text) for text in added]
    drop = {name for name, _ in extra} | {"no-requeue"}
    kept = [(n, v) for n, v in options if n not in drop and n != "verbose"]
    return sorted(kept + extra) + [o for o in options if o[0] == "verbose"]


def render_script(
    sub: Submission,
    decision: Decision | None,
    plan: BindingPlan | None,
    spelling: SlurmSpelling,
    payload: Payload,
    *,
    component_decisions: Sequence[Decision] = (),
    checkpoint: CheckpointSettings | None = None,
    submit_env: Mapping[str, str] | None = None,
) -> RenderedScript:
    """Render the batch script for one submission (see the module docstring).

    ``decision``: the policy's (None: no policy, the options as given); ``plan``: the binding plan
    (None: no binding, plain batch launch); ``payload``: the user's script; ``component_decisions``: one
    Decision per heterogeneous-job component (default: ``decision`` for each); ``checkpoint``: the
    protocol's settings when it is on (None: the script is exactly as without it);
    ``submit_env``: the submitter's environment, whose ``SBATCH_*`` variables (gpusub runs sbatch without
    them) the job gets back as sbatch's job would see them (slurm_gpu/render/job_env.py).
    Raises RenderError.
    """
    check_payload(payload.text)
    directives: list[str] = []
    argv: list[str] = []
    components = len(sub.components)
    decisions = tuple(component_decisions) or (decision,) * components
    options: list[tuple[str, str | None]] = []
    submitted: list[list[tuple[str, str | None]]] = []
    for k in range(components):
        if k:
            directives.append("hetjob")  # sbatch: the next #SBATCH lines are the next component's
            argv.append(":")
        mine = effective_options(sub, decisions[k] if k < len(decisions) else decision, plan if k == 0 else None, k)
        if checkpoint is not None and k == 0:
            mine = _with_protocol_options(mine, protocol_options(checkpoint, sub.options))
        options += mine
        submitted.append(mine)
        for name, value in mine:
            if name == "wrap":  # the wrapped command is the payload
                continue
            _check_value(name, value)
            if name in CLIENT_OPTIONS or (value is not None and ("\n" in value or "\r" in value)):
                argv.append(_option_text(name, value))
            else:
                directives.append(f"--{name}" if value is None else f"--{name}={directive_quote(value)}")
    while argv and argv[-1] == ":":
        argv.pop()
    if any(a == ":" for a in argv):
        raise RenderError("a heterogeneous job's option with a line break (or a client option) in a later "
                          "component cannot be carried; give it in the script")
    launch = (plan.launch if plan is not None else None) or sub.gpusub.launch or "batch"
    if launch not in ("batch", "per-gpu"):
        raise RenderError(f"launch {launch!r}: accepted: batch, per-gpu")
    env = list(plan.env) if plan is not None else []
    for key, _ in env:
        if not _ENV_NAME.match(key):
            raise RenderError(f"environment name {key!r}: accepted: letters, digits and _ (not first)")
    srun_options = plan.srun_options if plan is not None else ()
    srun_exports, srun_unexported = _srun_env(srun_options, spelling) if launch == "batch" else ([], [])
    for arg in sub.script_args:
        _check_value("script argument", arg)
    shim = _task_shim(plan, sub) if launch == "per-gpu" else ""
    restore: list[EnvStep] = []
    tres_per_task: list[TresPerTask] = []
    if launch == "batch":  # --launch=per-gpu is no drop-in: its srun reads the submitted options' variables
        restore, tres_per_task = restore_steps(sub.components, submitted, spelling)
        if _job_name_added(sub) and not spelling.stdin_job_name_env:  # stdin: 22.05 names the job, sets no variable
            restore.append(EnvStep("SLURM_JOB_NAME", None))
        export = dict(_canonical_options(submitted[0])).get("export") if submitted else None
        restore += sbatch_inputs(submit_env or {}, export)
    for step in restore:
        if not _ENV_NAME.match(step.name):
            raise RenderError(f"environment name {step.name!r}: accepted: letters, digits and _ (not first)")
        _check_value(step.name, step.value)
    text = payload.text
    # the protocol's settings with the lead time the job's --signal carries (the user's own, if given)
    ckpt = checkpoint._replace(lead_s=user_lead(options) or checkpoint.lead_s) if checkpoint is not None else None
    parts = ScriptParts(
        gpusub_version=__version__,
        slurm_version=comment_text(spelling.label),
        # a hetjob: each component's value, joined with "+" as Slurm names the components (J+0, J+1)
        decision={field: "+".join(comment_text(getattr(d, field, None) or "-") for d in
                                  (decisions if components > 1 else (decision,)))
                  for field in ("job_class", "partition", "qos", "gres")},
        isolation=comment_text(_isolation(plan, sub) or "-"),
        directives=directives,
        env=env,
        srun_exports=srun_exports,
        srun_unexported=[comment_text(t) for t in srun_unexported],
        restore=restore,
        tres_per_task=tres_per_task,
        launch=launch,
        srun_options=list(srun_options),
        shim_text=shim if launch == "per-gpu" else "",
        payload_name=payload.name,
        payload_base64=_base64(text) if text.endswith("\r") else "",
        payload_text=text if text.endswith("\n") else text + "\n",
        strip_last_newline=bool(text) and not text.endswith("\n"),
        delimiter=_delimiter(text),
        # with the checkpoint protocol, the job's one --signal is the protocol's own
        forward_signals=[] if checkpoint is not None else forwarded_signals(options),
        ckpt=ckpt,
        args=list(sub.script_args),
    )
    rendered = batch_script(parts)
    return RenderedScript(text=rendered, sbatch_argv=tuple(argv))


__all__ = ["RenderedScript", "RenderError", "render_script", "Payload", "payload_of", "forwarded_signals",
           "effective_options", "directive_quote", "comment_text", "SRUN_INPUT_ENV",
           "CLIENT_OPTIONS"]
