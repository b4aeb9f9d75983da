# SPDX-License-Identifier: Apache-2.0
"""sbatch's option language, parsed the way sbatch parses it (pure: no I/O, no os.environ).

Sources and precedence are sbatch's own: ``#SBATCH`` lines, then ``SBATCH_*`` input variables, then
the command line; a later source overrides an earlier one. Long options may be abbreviated to any
unambiguous prefix (getopt_long); short flags may be bundled (``-HvJname``); parsing stops at the first
non-option, which is the script (everything after it is the script's own argv). gpusub's own options
are recognised on the command line only. Unknown long options (e.g. SPANK plugin options) pass through
unchanged. The option table lives in :mod:`slurm_gpu.sbatch_table`, value grammars in
:mod:`slurm_gpu.sbatch_values`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from slurm_gpu import sbatch_values as sv
from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.sbatch_directives import script_directives, split_directive
from slurm_gpu.sbatch_request import to_job_request
from slurm_gpu.sbatch_table import (
    BY_ENV,
    BY_NAME,
    BY_SHORT,
    ENV_ORDER,
    EXCLUSIVE_CONFLICT_SINCE,
    GPUSUB_BY_NAME,
    GPUSUB_OPTIONS,
    MEMORY_GROUP,
    SAME_FIELD,
    SBATCH_OPTIONS,
    GpusubOption,
    SbatchOption,
    Version,
)

__all__ = [
    "OptionError",
    "Submission",
    "SBATCH_OPTIONS",
    "GPUSUB_OPTIONS",
    "parse_submission",
    "split_directive",
    "script_directives",
    "to_job_request",
    "to_argv",
    "sbatch_input_env",
]


class OptionError(SlurmGpuError):
    """An sbatch or gpusub option is malformed; the message names it and the accepted forms."""


@dataclass(frozen=True)
class Submission:
    """The effective submission after sbatch's precedence (cli > env > ``#SBATCH``)."""

    options: tuple[tuple[str, str | None], ...]
    gpusub: dict[str, Any] = field(default_factory=dict)
    script_path: str | None = None
    script_args: tuple[str, ...] = ()
    wrap: str | None = None
    origin: dict[str, str] = field(default_factory=dict)

    def get(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.options:
            if key == name:
                return value
        return default

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.options)


# --- value checks -----------------------------------------------------------------------------------

def _count(minimum: int):
    return lambda text: sv.parse_count(text, minimum)


_VALIDATORS = {
    "time": sv.parse_time_min,
    "time-min": sv.parse_time_min,
    "mem": sv.parse_mem_mb,
    "mem-per-cpu": sv.parse_mem_mb,
    "mem-per-gpu": sv.parse_mem_mb,
    "gres": sv.parse_gres,
    "gpus": sv.parse_gpus,
    "gpus-per-node": sv.parse_gpus,
    "gpus-per-task": sv.parse_gpus,
    "gpus-per-socket": sv.parse_gpus,
    "tres-per-task": sv.parse_tres,
    "gpu-bind": sv.parse_gpu_bind,
    "tres-bind": sv.parse_tres_bind,
    "array": sv.parse_array,
    "nodes": sv.parse_nodes_min,
    "ntasks": _count(1),
    "cpus-per-task": _count(1),
    "cpus-per-gpu": _count(1),
    "ntasks-per-node": _count(1),
    "ntasks-per-gpu": _count(1),
    "ntasks-per-tres": _count(1),
    "ntasks-per-socket": _count(1),
    "ntasks-per-core": _count(1),
    "nodelist": sv.parse_nodelist,
    "exclude": sv.parse_nodelist,
}


def _where(origin: str, line: int | None, env_var: str | None) -> str:
    if origin == "script":
        return f"line {line}: "
    if origin == "env":
        return f"{env_var}: "
    return ""


def _check(name: str, value: str | None, origin: str, line: int | None = None, env_var: str | None = None):
    check = _VALIDATORS.get(name)
    if check is None or value is None:
        return
    try:
        check(value)
    except ValueError as exc:
        raise OptionError(f"{_where(origin, line, env_var)}--{name}: {exc}") from None


# --- getopt_long, the way sbatch calls it ("+" optstring: stop at the first non-option) ------------

_UNKNOWN = object()


def _match_long(name: str, version: Version | None, where: str) -> SbatchOption | None:
    """Exact name, else an unambiguous prefix (glibc rules); None if no option matches."""
    exact = BY_NAME.get(name)
    if exact is not None and exact.exists_in(version):
        return exact
    found = [o for o in SBATCH_OPTIONS if o.name.startswith(name) and o.exists_in(version)]
    if not found:
        return None
    first = found[0]

    def val(o: SbatchOption) -> str:
        return o.alias_of if o.same_val and o.alias_of else o.name

    if any(val(o) != val(first) or o.arg_in(version) != first.arg_in(version) for o in found[1:]):
        names = ", ".join("--" + o.name for o in found)
        raise OptionError(f"{where}option '--{name}' is ambiguous; possibilities: {names}")
    return first


class _Event:
    """One option setting: canonical name (or a foreign option's own name), value, where it came from."""

    __slots__ = ("name", "value", "origin", "line", "env_var")

    def __init__(self, name: str, value: Any, origin: str, line: int | None = None, env_var: str | None = None):
        self.name, self.value, self.origin, self.line, self.env_var = name, value, origin, line, env_var


_RESET = object()  # an SBATCH_* flag variable set to something other than "", "yes" or a number


def _getopt(
    args: list[str],
    origin: str,
    version: Version | None,
    lines: list[int] | None = None,
    gpusub: dict[str, Any] | None = None,
) -> tuple[list[_Event], int]:
    """Parse options from ``args``; returns the events and the index of the first non-option."""
    events: list[_Event] = []
    i = 0

    def line_of(k: int) -> int | None:
        return lines[k] if lines else None

    while i < len(args):
        arg = args[i]
        where = _where(origin, line_of(i), None)
        if arg == "--":
            return events, i + 1
        if not arg.startswith("-") or arg == "-":
            return events, i
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if gpusub is not None and name in GPUSUB_BY_NAME:
                gopt = GPUSUB_BY_NAME[name]
                if gopt.takes_value and not eq:
                    if i + 1 >= len(args):
                        raise OptionError(f"--{name}: requires a value{_choices(gopt)}")
                    i += 1
                    value = args[i]
                elif not gopt.takes_value and eq:
                    raise OptionError(f"--{name}: takes no value")
                _set_gpusub(gpusub, gopt, value if gopt.takes_value else True)
                if gopt.passthrough:
                    events.append(_Event(name, None, origin))
                i += 1
                continue
            if gpusub is None and name in GPUSUB_BY_NAME and name not in BY_NAME:
                raise OptionError(f"{where}--{name} is a gpusub option: give it on the gpusub command line")
            opt = _match_long(name, version, where)
            if opt is None:  # not sbatch's: a SPANK plugin option, say; passed through as written
                if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", name):
                    raise OptionError(f"{where}unrecognized option {arg!r}")
                events.append(_Event(name, value if eq else None, origin, line_of(i)))
                i += 1
                continue
            kind = opt.arg_in(version)
            if kind == "none":
                if eq:
                    raise OptionError(f"{where}--{opt.name}: takes no value (got {value!r})")
                value = None
            elif kind == "required" and not eq:
                if i + 1 >= len(args):
                    raise OptionError(f"{where}--{opt.name}: requires a value; accepted: --{opt.name}=VALUE")
                i += 1
                value = args[i]
            elif kind == "optional" and not eq:
                value = None
            events.append(_Event(opt.canonical, value, origin, line_of(i)))
            i += 1
            continue
        j = 1  # a bundle of short options
        while j < len(arg):
            letter = arg[j]
            opt = BY_SHORT.get(letter)
            if opt is None or not opt.exists_in(version):
                raise OptionError(f"{where}invalid option -- '{letter}' (see sbatch --help for the options)")
            kind = opt.arg_in(version)
            rest = arg[j + 1 :]
            if kind == "none":
                events.append(_Event(opt.canonical, None, origin, line_of(i)))
                j += 1
                continue
            if kind == "optional":
                events.append(_Event(opt.canonical, rest or None, origin, line_of(i)))
            elif rest:
                events.append(_Event(opt.canonical, rest, origin, line_of(i)))
            else:
                if i + 1 >= len(args):
                    raise OptionError(f"{where}-{letter}: requires a value; accepted: -{letter} VALUE")
                i += 1
                events.append(_Event(opt.canonical, args[i], origin, line_of(i)))
            break
        i += 1
    return events, i


def _choices(gopt: GpusubOption) -> str:
    return f"; accepted: {', '.join(gopt.choices)}" if gopt.choices else ""


def _set_gpusub(gpusub: dict[str, Any], gopt: GpusubOption, value: Any) -> None:
    if gopt.choices and value not in gopt.choices:
        raise OptionError(f"--{gopt.name}: bad value {value!r}{_choices(gopt)}")
    check = {"model_params": sv.parse_model_params, "gpu_fraction": sv.parse_gpu_fraction}.get(gopt.key)
    if check is not None:
        try:
            check(value)
        except ValueError as exc:
            raise OptionError(f"--{gopt.name}: {exc}") from None
    gpusub[gopt.key] = value


# --- the whole submission ---------------------------------------------------------------------------

def _env_events(env: Mapping[str, str], version: Version | None) -> list[_Event]:
    events = []
    for var in ENV_ORDER:
        if var not in env:
            continue
        opt = BY_ENV.get(var)
        if opt is None or not opt.exists_in(version):
            continue
        value: Any = env[var]
        # with no version given, a variable reads as in the oldest release (SBATCH_REQUEUE=0 unsets)
        kind = opt.arg_in(version) if version or not opt.arg_by_version else opt.arg_by_version[0][1]
        if opt.name == "verbose":  # SBATCH_DEBUG=N: verbosity level
            value = env[var]
        elif kind == "none":
            text = value
            on = text == "" or text.lower() == "yes" or (re.fullmatch(r"[+-]?\d+", text) and int(text) != 0)
            value = None if on else _RESET
        elif kind == "optional" and value == "":
            value = None
        events.append(_Event(opt.canonical, value, "env", env_var=var))
    return events


def parse_submission(
    argv: list[str] | tuple[str, ...],
    env: Mapping[str, str],
    script_text: str | None,
    *,
    version: Version | None = None,
) -> Submission:
    """Parse a gpusub/sbatch command line with its environment and script (text read by the caller).

    ``version`` (major, minor) limits options to one Slurm release; None accepts every release's.
    Raises OptionError naming the option, the source ("line N", the variable) and the accepted forms.
    """
    gpusub: dict[str, Any] = {}
    cli_events, stop = _getopt(list(argv), "cli", version, gpusub=gpusub)
    positional = list(argv[stop:])
    wrap = next((e.value for e in reversed(cli_events) if e.name == "wrap"), None)
    if wrap is not None and positional:
        raise OptionError(f"--wrap: script arguments are not permitted with --wrap (got {positional[0]!r})")
    script_path = positional[0] if positional else None
    script_args = tuple(positional[1:])

    script_events: list[_Event] = []
    if wrap is None and script_text is not None:
        try:
            words, lines = script_directives(script_text, version)
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        cli_ignores_pbs = any(e.name == "ignore-pbs" for e in cli_events) or "SBATCH_IGNORE_PBS" in env
        if "\0wrapper" in words:
            k = words.index("\0wrapper")
            if not (cli_ignores_pbs or "--ignore-pbs" in words):
                raise OptionError(
                    f"line {lines[k]}: #PBS/#BSUB directives are not supported by gpusub; "
                    "convert them to #SBATCH or pass --ignore-pbs"
                )
            keep = [n for n, w in enumerate(words) if w != "\0wrapper"]
            words, lines = [words[n] for n in keep], [lines[n] for n in keep]
        script_events, used = _getopt(words, "script", version, lines)
        if used < len(words):
            raise OptionError(f"line {lines[used]}: invalid directive {words[used]!r} (not an sbatch option)")
        # sbatch handles its early-pass options (--help, --wrap, --verbose ...) from the command line only
        script_events = [e for e in script_events if not (e.name in BY_NAME and BY_NAME[e.name].early)]

    events = script_events + _env_events(env, version) + cli_events
    if version is not None and version >= EXCLUSIVE_CONFLICT_SINCE:
        given = {e.name for e in events if e.origin != "env" and e.name in ("exclusive", "oversubscribe")}
        if len(given) == 2:
            raise OptionError("--exclusive and --oversubscribe are mutually exclusive (Slurm >= 24.11); give only one")
    return _apply(events, gpusub, script_path, script_args, wrap)


def _apply(events, gpusub, script_path, script_args, wrap) -> Submission:
    state: dict[str, _Event] = {}
    verbose = 0
    for ev in events:
        if ev.value is not _RESET:
            _check(ev.name, ev.value, ev.origin, ev.line, ev.env_var)
        if ev.name == "verbose":
            verbose = verbose + 1 if ev.origin != "env" else _verbosity(ev.value)
            continue
        for group in SAME_FIELD:
            if ev.name in group:
                for other in group - {ev.name}:
                    state.pop(other, None)
        if ev.value is _RESET:
            state.pop(ev.name, None)
        else:
            state.pop(ev.name, None)  # re-insert: the last setting decides the position too
            state[ev.name] = ev
    _resolve_memory(state)
    if "wait" in state:  # gpusub follows the job itself (a live state line); sbatch must not block
        gpusub["wait"] = True
        del state["wait"]
    if "test-only" in state:
        gpusub["test_only"] = True
    names = sorted(state)
    options = [(n, state[n].value) for n in names] + [("verbose", None)] * verbose
    origin = {n: state[n].origin for n in names}
    if verbose:
        origin["verbose"] = "cli"
    return Submission(tuple(options), gpusub, script_path, script_args, wrap, origin)


def _verbosity(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def _resolve_memory(state: dict[str, _Event]) -> None:
    """--mem/--mem-per-cpu/--mem-per-gpu: one set in the script or on the command line wins over the
    environment; two set there (or two in the environment) are an error, as in sbatch."""
    direct = [n for n in MEMORY_GROUP if n in state and state[n].origin != "env"]
    from_env = [n for n in MEMORY_GROUP if n in state and state[n].origin == "env"]
    if len(direct) > 1:
        raise OptionError("--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive; give only one")
    if direct:
        for n in from_env:
            del state[n]
    elif len(from_env) > 1:
        raise OptionError("SBATCH_MEM_PER_NODE, SBATCH_MEM_PER_CPU and SBATCH_MEM_PER_GPU are mutually exclusive")


# --- outputs ----------------------------------------------------------------------------------------

def to_argv(options: Iterable[tuple[str, str | None]]) -> list[str]:
    """``[("time", "10"), ("hold", None)]`` -> ``["--time=10", "--hold"]``."""
    return [f"--{name}" if value is None else f"--{name}={value}" for name, value in options]


def sbatch_input_env(env: Mapping[str, str]) -> dict[str, str]:
    """The ``SBATCH_*`` input variables present in ``env`` (an adapter should drop these from the
    environment it runs sbatch with, since the rendered script already carries their effect)."""
    names = set(ENV_ORDER) | {"SBATCH_WAIT4SWITCH"}
    return {k: v for k, v in env.items() if k in names}
