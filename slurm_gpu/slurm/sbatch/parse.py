# SPDX-License-Identifier: Apache-2.0
"""sbatch's option language, parsed the way sbatch parses it (pure: no I/O, no os.environ).

Sources and precedence are sbatch's own: ``#SBATCH`` lines, then ``SBATCH_*`` input variables, then
the command line; a later source overrides an earlier one, option by option. Long options may be
abbreviated to any unambiguous prefix (getopt_long); short flags may be bundled (``-HvJname``); parsing
stops at the first non-option, which is the script (everything after it is the script's own argv).
gpusub's own options are recognised on the command line only. A long option that is not sbatch's is
accepted only when it is a SPANK plugin's (the list ``sbatch --help`` prints, given as data); any other
is refused with a did-you-mean. Heterogeneous jobs (``#SBATCH hetjob``, `` : `` on the command line)
are parsed per component, each with sbatch's precedence; the ``SBATCH_*`` environment applies to
every component (measured on 22.05.8). The option table lives in :mod:`.table`, getopt and the
environment in :mod:`.getopt`, value grammars in :mod:`.values`, the ``#SBATCH`` lexer in
:mod:`.directives`, the request in :mod:`.to_request`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field

from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.release import GPUS_PER_NODE_WITH_GRES_GPU, Version, as_version, spelling_for
from slurm_gpu.slurm.sbatch import values as sv
from slurm_gpu.slurm.sbatch.directives import DEFAULT_MAX_SCRIPT_BYTES, check_script, script_directives
from slurm_gpu.slurm.sbatch.getopt import RESET, Event, OptionError, check_value, env_events, getopt
from slurm_gpu.slurm.sbatch.gpu_forms import check_gpu_options
from slurm_gpu.slurm.sbatch.table import (
    BY_NAME,
    ENV_ORDER,
    EXCLUSIVE_CONFLICT_SINCE,
    MEMORY_GROUP,
    SAME_FIELD,
    GpusubOptions,
    SbatchOption,
)

__all__ = [
    "OptionError",
    "Submission",
    "parse_submission",
    "to_argv",
    "sbatch_input_env",
]


Options = tuple[tuple[str, "str | None"], ...]


@record
class Submission(Record):
    """The effective submission after sbatch's precedence (cli > env > ``#SBATCH``), per option.

    ``options`` are the first (for a normal job, the only) component's; ``components`` holds one option
    list per heterogeneous-job component (``components[0] == options``). ``script_from_stdin`` is True
    when neither a script nor ``--wrap`` was named: sbatch then reads the script from standard input,
    and so must the caller (then parse again with the text).
    """

    options: Options
    gpusub: GpusubOptions = GpusubOptions()
    script_path: str | None = None
    script_args: tuple[str, ...] = ()
    wrap: str | None = None
    origin: dict[str, str] = field(default_factory=dict)
    components: tuple[Options, ...] = ()
    script_from_stdin: bool = False

    def __post_init__(self) -> None:
        if not self.components:
            object.__setattr__(self, "components", (self.options,))

    @property
    def is_hetjob(self) -> bool:
        return len(self.components) > 1

    def get(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.options:
            if key == name:
                return value
        return default

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.options)


# --- the whole submission ---------------------------------------------------------------------------

def parse_submission(
    argv: list[str] | tuple[str, ...],
    env: Mapping[str, str],
    script_text: str | None,
    *,
    version: Version | tuple[int, int] | None = None,
    spank_options: Iterable[SbatchOption] = (),
    max_script_bytes: int = DEFAULT_MAX_SCRIPT_BYTES,
) -> Submission:
    """Parse a gpusub/sbatch command line with its environment and script (text read by the caller).

    ``version`` limits options to one Slurm release; None accepts every release's. ``spank_options``
    are the SPANK plugin options ``sbatch --help`` lists (:func:`spank_options_from_help`); a long
    option that is neither sbatch's nor one of these is refused. ``script_text`` is checked as sbatch
    checks it (``#!``, no NUL, no ``\\r\\n``, not empty, at most ``max_script_bytes``).
    Raises OptionError naming the option, the source ("line N", the variable) and the accepted forms.
    """
    version = as_version(version) if version is not None else None
    spank = tuple(spank_options)
    gpusub: dict[str, str | bool] = {}
    args, cli_parts = list(argv), []
    while True:  # one getopt pass per command-line component; a ":" word starts the next one
        part, stop = getopt(args, "cli", version, gpusub=gpusub, spank=spank)
        cli_parts.append(part)
        if stop < len(args) and args[stop] == ":":
            args = args[stop + 1:]
            continue
        positional = args[stop:]
        break
    cli_events = [e for part in cli_parts for e in part]
    wrap = next((_setting(e) for e in reversed(cli_events) if e.name == "wrap" and e.value is not RESET), None)
    if wrap is not None and positional:
        raise OptionError(f"--wrap: script arguments are not permitted with --wrap (got {positional[0]!r})")
    script_path = positional[0] if positional else None
    script_args = tuple(positional[1:])

    script_parts: list[list[Event]] = [[]]
    if wrap is None and script_text is not None:
        try:
            check_script(script_text, max_script_bytes)
        except ValueError as exc:
            raise OptionError(f"{script_path or 'standard input'}: {exc}") from None
        cli_ignores_pbs = any(e.name == "ignore-pbs" for e in cli_events) or "SBATCH_IGNORE_PBS" in env
        try:
            components = script_directives(script_text, version)
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        script_parts = [_script_events(w, ln, version, spank, cli_ignores_pbs) for w, ln in components]

    env_part = env_events(env, version)
    count = max(len(cli_parts), len(script_parts))
    comps = []
    for k in range(count):  # per component: its script part, then the environment, then its command line
        events = (script_parts[k] if k < len(script_parts) else []) + env_part + \
            (cli_parts[k] if k < len(cli_parts) else [])
        if version is not None and version >= EXCLUSIVE_CONFLICT_SINCE:
            given = {e.name for e in events if e.origin != "env" and e.name in ("exclusive", "oversubscribe")}
            if len(given) == 2:
                raise OptionError("--exclusive and --oversubscribe are mutually exclusive (Slurm >= 24.11); "
                                  "give only one")
        comps.append(_apply(events, gpusub, version))
    if version is not None and spelling_for(version).gpus_per_node_excludes_gres_gpu:
        for options, _origin in comps:
            _refuse_gpus_per_node_with_gres_gpu(dict(options))
    for n, (options, _origin) in enumerate(comps):
        try:
            check_gpu_options(dict(options).get)
        except ValueError as exc:
            raise OptionError(f"{f'component {n}: ' if count > 1 else ''}{exc}") from None
    options, origin = comps[0]
    opts = GpusubOptions.of(gpusub)
    return Submission(options, opts, script_path, script_args, wrap, origin,
                      components=tuple(c[0] for c in comps),
                      script_from_stdin=script_path is None and wrap is None)


def _refuse_gpus_per_node_with_gres_gpu(options: Mapping[str, str | None]) -> None:
    """26.05's sbatch: --gpus-per-node and --gres=gpu (a gpu item, typed or not) may not both be set, from
    whatever sources they came (the script, SBATCH_*, the command line; measured on 26.05.5)."""
    gres = options.get("gres")
    if options.get("gpus-per-node") is None or gres is None:
        return
    try:
        items = sv.parse_gres(gres)
    except ValueError:
        return  # check_gpu_options reports a bad --gres
    if any(g.name == "gpu" for g in items):
        raise OptionError(f"{GPUS_PER_NODE_WITH_GRES_GPU[:-1]} (Slurm >= 26.05); give the GPUs per node once: "
                          "--gres=gpu:[TYPE:]N or --gpus-per-node=[TYPE:]N")


def _script_events(words: list[str], lines: list[int], version: Version | None,
                   spank: tuple[SbatchOption, ...], cli_ignores_pbs: bool) -> list[Event]:
    if "\0wrapper" in words:
        k = words.index("\0wrapper")
        if not (cli_ignores_pbs or "--ignore-pbs" in words):
            raise OptionError(f"line {lines[k]}: #PBS/#BSUB directives are not supported by gpusub; "
                              "convert them to #SBATCH or pass --ignore-pbs")
        keep = [n for n, w in enumerate(words) if w != "\0wrapper"]
        words, lines = [words[n] for n in keep], [lines[n] for n in keep]
    events, used = getopt(words, "script", version, lines, spank=spank)
    if used < len(words):
        raise OptionError(f"line {lines[used]}: invalid directive {words[used]!r} (not an sbatch option)")
    # sbatch handles its early-pass options (--help, --wrap, --verbose ...) from the command line only
    return [e for e in events if not (e.name in BY_NAME and BY_NAME[e.name].early)]


def _setting(ev: Event) -> str | None:
    """A kept event's value (a reset one is never kept)."""
    assert ev.value is not RESET
    return ev.value


def _apply(events: list[Event], gpusub: dict[str, str | bool],
           version: Version | None) -> tuple[Options, dict[str, str]]:
    state: dict[str, Event] = {}
    verbose = 0
    for ev in events:
        if ev.value is not RESET:
            check_value(ev.name, ev.value, ev.origin, ev.line, ev.env_var, version)
        if ev.name == "verbose":
            verbose = verbose + 1 if ev.origin != "env" else _verbosity(None if ev.value is RESET else ev.value)
            continue
        for group in SAME_FIELD:
            if ev.name in group:
                for other in group - {ev.name}:
                    state.pop(other, None)
        if ev.value is RESET:
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
    options = tuple((n, _setting(state[n])) for n in names) + (("verbose", None),) * verbose
    origin = {n: state[n].origin for n in names}
    if verbose:
        origin["verbose"] = "cli"
    return options, origin


def _verbosity(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def _resolve_memory(state: dict[str, Event]) -> None:
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
