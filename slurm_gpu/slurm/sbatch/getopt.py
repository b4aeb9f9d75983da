# SPDX-License-Identifier: Apache-2.0
"""getopt_long the way sbatch calls it (``+`` optstring: stop at the first non-option), the
``SBATCH_*`` input environment, and the per-option value checks. Pure; used by :mod:`.parse`."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from typing import Any

from slurm_gpu import units
from slurm_gpu.errors import UsageError
from slurm_gpu.slurm.release import Version
from slurm_gpu.slurm.sbatch import values as sv
from slurm_gpu.slurm.sbatch.table import (
    BY_ENV,
    BY_NAME,
    BY_SHORT,
    ENV_ORDER,
    GPUSUB_BY_NAME,
    GPUSUB_OPTIONS,
    SBATCH_OPTIONS,
    GpusubOption,
    SbatchOption,
)


class OptionError(UsageError):
    """An sbatch or gpusub option is malformed; the message names it and the accepted forms."""


# --- value checks -----------------------------------------------------------------------------------

def _count(minimum: int) -> Callable[[str], int]:
    return lambda text: sv.parse_count(text, minimum)


_VALIDATORS: dict[str, Callable[[str], object]] = {
    "time": units.parse_time_minutes,
    "time-min": units.parse_time_minutes,
    "mem": units.parse_mem_mb,
    "mem-per-cpu": units.parse_mem_mb,
    "mem-per-gpu": units.parse_mem_mb,
    "partition": sv.parse_partitions,
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
    "requeue": sv.parse_requeue,
}


def _where(origin: str, line: int | None, env_var: str | None) -> str:
    if origin == "script":
        return f"line {line}: "
    if origin == "env":
        return f"{env_var}: "
    return ""


def check_value(name: str, value: str | None, origin: str, line: int | None = None, env_var: str | None = None,
           version: Version | None = None) -> None:
    check: Callable[[str], object] | None = _VALIDATORS.get(name)
    if name == "exclusive":  # the accepted words depend on the release
        check = lambda v: sv.parse_exclusive(v, version)  # noqa: E731
    elif name == "gres":  # so does a type that starts with a digit
        check = lambda v: sv.parse_gres(v, version)  # noqa: E731
    if check is None or value is None:
        return
    try:
        check(value)
    except ValueError as exc:
        raise OptionError(f"{_where(origin, line, env_var)}--{name}: {exc}") from None


# --- getopt_long, the way sbatch calls it ("+" optstring: stop at the first non-option) ------------


def _match_long(name: str, version: Version | None, where: str,
                spank: tuple[SbatchOption, ...] = ()) -> SbatchOption | None:
    """Exact name, else an unambiguous prefix (glibc rules) among sbatch's and the SPANK plugins'
    options; None if no option matches."""
    exact = BY_NAME.get(name)
    if exact is not None and exact.exists_in(version):
        return exact
    for o in spank:
        if o.name == name:
            return o
    found = [o for o in SBATCH_OPTIONS if o.name.startswith(name) and o.exists_in(version)]
    found += [o for o in spank if o.name.startswith(name) and o.name not in BY_NAME]
    if not found:
        return None
    first = found[0]

    def val(o: SbatchOption) -> str:
        return o.alias_of if o.same_val and o.alias_of else o.name

    if any(val(o) != val(first) or o.arg_in(version) != first.arg_in(version) for o in found[1:]):
        names = ", ".join("--" + o.name for o in found)
        raise OptionError(f"{where}option '--{name}' is ambiguous; possibilities: {names}")
    return first


class Event:
    """One option setting: canonical name (or a foreign option's own name), value, where it came from."""

    __slots__ = ("name", "value", "origin", "line", "env_var")

    def __init__(self, name: str, value: str | None | Reset, origin: str, line: int | None = None,
                 env_var: str | None = None) -> None:
        self.name, self.value, self.origin, self.line, self.env_var = name, value, origin, line, env_var


class Reset(enum.Enum):
    """An SBATCH_* flag variable set to something other than "", "yes" or a number: the flag is unset."""

    RESET = 0


RESET = Reset.RESET


def getopt(
    args: list[str],
    origin: str,
    version: Version | None,
    lines: list[int] | None = None,
    gpusub: dict[str, str | bool] | None = None,
    spank: tuple[SbatchOption, ...] = (),
) -> tuple[list[Event], int]:
    """Parse options from ``args``; returns the events and the index of the first non-option."""
    events: list[Event] = []
    i = 0
    value: str | None

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
                    events.append(Event(name, None, origin))
                i += 1
                continue
            if gpusub is None and name in GPUSUB_BY_NAME and name not in BY_NAME:
                raise OptionError(f"{where}--{name} is a gpusub option: give it on the gpusub command line")
            opt = _match_long(name, version, where, spank)
            if opt is None:
                raise OptionError(f"{where}{_unknown(arg, name, version, spank, gpusub is not None)}")
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
            events.append(Event(opt.canonical, value, origin, line_of(i)))
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
                events.append(Event(opt.canonical, None, origin, line_of(i)))
                j += 1
                continue
            if kind == "optional":
                events.append(Event(opt.canonical, rest or None, origin, line_of(i)))
            elif rest:
                events.append(Event(opt.canonical, rest, origin, line_of(i)))
            else:
                if i + 1 >= len(args):
                    raise OptionError(f"{where}-{letter}: requires a value; accepted: -{letter} VALUE")
                i += 1
                events.append(Event(opt.canonical, args[i], origin, line_of(i)))
            break
        i += 1
    return events, i


def _unknown(arg: str, name: str, version: Version | None, spank: tuple[SbatchOption, ...], cli: bool) -> str:
    """sbatch's "unrecognized option" with a did-you-mean among sbatch's (and on the command line,
    gpusub's) options; a gpusub typo is never passed on as a plugin option."""
    names = [o.name for o in SBATCH_OPTIONS if o.exists_in(version) and o.documented] + [o.name for o in spank]
    if cli:
        names += [o.name for o in GPUSUB_OPTIONS]
    import difflib  # only on an unknown option: keeps gpusub's start-up small

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    hint = (f"; did you mean --{close[0]}?" if close
            else " (not an sbatch option, nor a plugin option sbatch --help lists)")
    return f"unrecognized option {arg!r}{hint}"


def _choices(gopt: GpusubOption) -> str:
    return f"; accepted: {', '.join(gopt.choices)}" if gopt.choices else ""


def _mig_value(text: str) -> object:
    from slurm_gpu.sharing.token import parse_mig_spec  # only with --mig: keeps gpusub's start-up small

    return parse_mig_spec(text)


def _mps_value(text: str) -> object:
    from slurm_gpu.sharing.token import parse_mps_pct

    return parse_mps_pct(text)


def _set_gpusub(gpusub: dict[str, str | bool], gopt: GpusubOption, value: str | bool) -> None:
    if gopt.choices and value not in gopt.choices:
        raise OptionError(f"--{gopt.name}: bad value {value!r}{_choices(gopt)}")
    check = {"model_params": units.parse_param_count, "gpu_fraction": sv.parse_gpu_fraction,
             "mig": _mig_value, "mps": _mps_value}.get(gopt.key)
    if check is not None:
        try:
            check(str(value))
        except ValueError as exc:
            raise OptionError(f"--{gopt.name}: {exc}") from None
    gpusub[gopt.key] = value


def env_events(env: Mapping[str, str], version: Version | None) -> list[Event]:
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
            on = text == "" or text.lower() == "yes" or (re.fullmatch(r"[+-]?[0-9]+", text) and int(text) != 0)
            value = None if on else RESET
        elif kind == "optional" and value == "":
            value = None
        events.append(Event(opt.canonical, value, "env", env_var=var))
    return events
