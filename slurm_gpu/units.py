# SPDX-License-Identifier: Apache-2.0
"""One grammar for the values Slurm users write: time, memory sizes, parameter counts, MIG profiles.

Every ``parse_*`` is total: it returns a value or raises :class:`UnitError` (a ``ValueError``) whose
message is one line, ``bad <what> '<text>': <why>; accepted: <forms>``. Every ``format_*`` writes a
text that the matching ``parse_*`` reads back to the same value. Inputs are bounded: more than
:data:`MAX_TEXT` characters, more digits than a field can sensibly hold, NaN or infinity are refused.

Time (sbatch ``--time``): ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``. As a *limit*
(:func:`parse_time_minutes`), ``0``, ``-1``, ``UNLIMITED`` and ``INFINITE`` mean no limit (``None``)
and seconds round up to whole minutes, as Slurm does. As a *duration* (:func:`parse_time_seconds`,
the policy's ``grace_time``/``signal_lead_time``), ``0`` is zero and the suffix forms ``90s``, ``30m``,
``4h``, ``2d`` are also read.

Memory: a whole number with an optional unit ``K``, ``M``, ``G``, ``T`` (1024-based, any case, an
optional trailing ``B``); no unit means MB, as in Slurm. ``K`` rounds up to whole MB.

Parameter counts: a decimal or scientific number (``1.5e9``) with an optional SI suffix ``K``
(1e3), ``M`` (1e6), ``B`` (1e9) or ``T`` (1e12), any case. ``G`` is refused: ``7G`` reads like a
memory size; write ``7B``.

MIG profiles: ``[GPUTYPE_]<slices>g.<memory>gb[+me]`` (``1g.10gb``, ``a100_1g.10gb``, ``1g.10gb+me``),
slices 1-7; :data:`MIG_PROFILE_RE` is the one regex.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TEXT = 64  # characters: no value of these grammars is longer


class UnitError(ValueError):
    """A value that does not follow its grammar; the message is one line."""


def _bad(what: str, text: object, why: str, forms: str) -> UnitError:
    shown = repr(text) if len(repr(text)) <= MAX_TEXT + 2 else repr(text)[:MAX_TEXT] + "...'"
    return UnitError(f"bad {what} {shown}: {why}; accepted: {forms}")


def _text(what: str, value: object, forms: str) -> str:
    if not isinstance(value, str):
        raise _bad(what, value, f"a {type(value).__name__}, not text", forms)
    text = value.strip()
    if len(text) > MAX_TEXT:
        raise _bad(what, value, f"longer than {MAX_TEXT} characters", forms)
    if not text:
        raise _bad(what, value, "empty", forms)
    return text


# ---- time -------------------------------------------------------------------------------------

TIME_FORMS = "M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED"
DURATION_FORMS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/4h/2d"
UNLIMITED_WORDS = ("unlimited", "infinite")
MAX_TIME_MINUTES = 0xFFFFFFFE  # Slurm keeps minutes in a uint32; 0xFFFFFFFF is INFINITE
_N = r"[0-9]{1,10}"  # no field of a time needs more than 10 digits
# regex sources (also used by the policy JSON schema)
TIME_PATTERN = rf"{_N}(?::{_N}){{0,2}}|{_N}-{_N}(?::{_N}){{0,2}}"
DURATION_PATTERN = rf"{_N}\s*[smhdSMHD]|{TIME_PATTERN}"
# Patterns stay strings: re compiles (and caches) them on first use, so importing this module costs
# no compilation (gpusub's start-up imports it through the policy model).
_TIME_RE = (rf"^(?:(?P<d>{_N})-(?P<dh>{_N})(?::(?P<dm>{_N})(?::(?P<ds>{_N}))?)?"
            rf"|(?P<a>{_N})(?::(?P<b>{_N})(?::(?P<c>{_N}))?)?)$")
_SUFFIX_RE = rf"(?i)^({_N})\s*([smhd])$"
_SUFFIX_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _time_s(what: str, text: str, forms: str, suffixes: bool) -> int:
    m = re.match(_SUFFIX_RE, text) if suffixes else None
    if m:
        secs = int(m.group(1)) * _SUFFIX_S[m.group(2).lower()]
    else:
        m = re.match(_TIME_RE, text)
        if not m:
            raise _bad(what, text, "not a time", forms)
        g = {k: int(v) for k, v in m.groupdict().items() if v is not None}
        if "d" in g:  # D-H[:M[:S]]
            if g["dh"] > 23 or g.get("dm", 0) > 59 or g.get("ds", 0) > 59:
                raise _bad(what, text, "hours over 23, or minutes or seconds over 59", forms)
            secs = ((g["d"] * 24 + g["dh"]) * 60 + g.get("dm", 0)) * 60 + g.get("ds", 0)
        elif "c" in g:  # H:M:S
            if g["b"] > 59 or g["c"] > 59:
                raise _bad(what, text, "minutes or seconds over 59", forms)
            secs = (g["a"] * 60 + g["b"]) * 60 + g["c"]
        elif "b" in g:  # M:S
            if g["b"] > 59:
                raise _bad(what, text, "seconds over 59", forms)
            secs = g["a"] * 60 + g["b"]
        else:  # M
            secs = g["a"] * 60
    if secs > MAX_TIME_MINUTES * 60:
        raise _bad(what, text, f"more than {MAX_TIME_MINUTES} minutes", forms)
    return secs


def parse_time_seconds(text: str) -> int:
    """A duration in seconds: Slurm's time forms (a bare number is minutes) or ``90s``/``30m``/``4h``/``2d``."""
    return _time_s("duration", _text("duration", text, DURATION_FORMS), DURATION_FORMS, True)


def parse_time_minutes(text: str) -> int | None:
    """An sbatch time limit in whole minutes (seconds round up); ``None`` means no limit."""
    t = _text("time", text, TIME_FORMS)
    if t.lower() in UNLIMITED_WORDS or t == "-1":
        return None
    minutes = -(-_time_s("time", t, TIME_FORMS, False) // 60)
    return minutes or None  # Slurm: a time limit of zero imposes no limit


def format_time_minutes(minutes: int | None) -> str:
    """Minutes as Slurm writes a limit: ``D-HH:MM:SS``, ``HH:MM:SS`` under a day, ``UNLIMITED`` for None."""
    if minutes is None:
        return "UNLIMITED"
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 <= minutes <= MAX_TIME_MINUTES:
        raise UnitError(f"bad time {minutes!r}: not a whole number of minutes 0..{MAX_TIME_MINUTES}")
    d, rem = divmod(minutes, 1440)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


# ---- memory -----------------------------------------------------------------------------------

MEM_FORMS = "N (MB) or N with a unit K, M, G or T (e.g. 4000, 16G, 512M)"
MAX_MEM_MB = 2 ** 53  # far beyond any node; keeps every value exact in JSON and Lua
MEM_PATTERN = r"[0-9]{1,16}[KMGTkmgt]?[Bb]?"
_MEM_RE = r"(?i)^([0-9]{1,16})([KMGT])?(B)?$"
_MEM_MB = {"K": None, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_mem_mb(text: str) -> int:
    """A memory size in MB (no unit = MB; K rounds up). ``0`` stays 0 (Slurm: all of a node's memory)."""
    t = _text("memory size", text, MEM_FORMS)
    m = re.match(_MEM_RE, t)
    if not m or (m.group(3) and not m.group(2)):
        raise _bad("memory size", text, "not a size", MEM_FORMS)
    n, unit = int(m.group(1)), (m.group(2) or "M").upper()
    mb = -(-n // 1024) if unit == "K" else n * _MEM_MB[unit]  # type: ignore[operator]
    if mb > MAX_MEM_MB:
        raise _bad("memory size", text, f"more than {MAX_MEM_MB} MB", MEM_FORMS)
    return mb


def format_mem_mb(mb: int) -> str:
    """MB as the shortest exact size: ``2T``, ``16G`` or ``1500M``."""
    if isinstance(mb, bool) or not isinstance(mb, int) or not 0 <= mb <= MAX_MEM_MB:
        raise UnitError(f"bad memory size {mb!r}: not a whole number of MB 0..{MAX_MEM_MB}")
    for unit, scale in (("T", 1024 * 1024), ("G", 1024)):
        if mb and mb % scale == 0:
            return f"{mb // scale}{unit}"
    return f"{mb}M"


# ---- parameter counts -------------------------------------------------------------------------

PARAMS_FORMS = "a parameter count such as 7B, 70b, 350M, 1.5e9"
MAX_PARAMS = 1e15  # a thousand times the largest models
_PARAMS_RE = r"(?i)^([0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE]([+-]?[0-9]{1,3}))?\s*([KMBT])?$"
_PARAMS_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def parse_param_count(text: str | int | float) -> float:
    """``7B`` -> 7e9, ``350M`` -> 3.5e8, ``1.5e9`` -> 1.5e9; a number is taken as it is. Must be > 0."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text) if abs(text) < 1e300 else float("inf")
        shown: object = text
    else:
        t = _text("parameter count", text, PARAMS_FORMS)
        m = re.match(_PARAMS_RE, t)
        if not m:
            why = "G is not a parameter unit (write B for billions)" if t[-1:] in "gG" else "not a count"
            raise _bad("parameter count", text, why, PARAMS_FORMS)
        value = float(m.group(1) + (f"e{m.group(2)}" if m.group(2) else "")) * _PARAMS_SCALE[(m.group(3) or "").upper()]
        shown = text
    if value != value or not 0 < value <= MAX_PARAMS:
        raise _bad("parameter count", shown, f"must be above 0 and at most {MAX_PARAMS:.0e}", PARAMS_FORMS)
    return value


def format_param_count(n: float) -> str:
    """A count with the largest SI suffix that reads back exactly (``7B``, ``1.5B``, ``350M``)."""
    value = float(n)
    if value != value or not 0 < value <= MAX_PARAMS:
        raise UnitError(f"bad parameter count {n!r}: must be above 0 and at most {MAX_PARAMS:.0e}")
    for suffix in ("T", "B", "M", "K"):
        scale = _PARAMS_SCALE[suffix]
        if value >= scale:
            text = f"{value / scale:.15g}{suffix}"
            if "e" not in text and parse_param_count(text) == value:
                return text
    text = repr(value).replace("e+", "e")
    return text[:-2] if text.endswith(".0") else text


# ---- MIG profiles -----------------------------------------------------------------------------

MIG_FORMS = "a MIG profile such as 1g.10gb, 3g.40gb, 1g.10gb+me or a100_1g.10gb"
MIG_PROFILE_PATTERN = r"[1-7]g\.[0-9]{1,4}gb(?:\+me)?"  # without the GPU type prefix (the policy's form)
_MIG_RE = (r"^(?:(?P<gpu>[A-Za-z0-9][A-Za-z0-9.-]{0,30})_)?"
           r"(?P<slices>[1-7])g\.(?P<memory_gb>[0-9]{1,4})gb(?P<me>\+me)?$")


def __getattr__(name: str) -> Any:
    if name == "MIG_PROFILE_RE":  # the compiled regex, on first use (PEP 562)
        return re.compile(_MIG_RE)
    raise AttributeError(f"module 'slurm_gpu.units' has no attribute {name!r}")


class MigProfile(tuple[int, int, bool, "str | None"]):
    """(slices, memory_gb, media_extensions, gpu_type): ``a100_1g.10gb+me`` is (1, 10, True, "a100").

    A plain tuple subclass (not typing.NamedTuple, whose class creation costs gpusub's start-up).
    """

    __slots__ = ()

    def __new__(cls, slices: int, memory_gb: int, media_extensions: bool = False,
                gpu_type: str | None = None) -> MigProfile:
        return tuple.__new__(cls, (slices, memory_gb, media_extensions, gpu_type))

    slices = property(lambda self: self[0], doc="compute slices of 7")
    memory_gb = property(lambda self: self[1])
    media_extensions = property(lambda self: self[2], doc='"+me"')
    gpu_type = property(lambda self: self[3], doc='"a100" in "a100_1g.10gb" (Slurm\'s gres type name)')

    def __repr__(self) -> str:
        return f"MigProfile({self[0]!r}, {self[1]!r}, {self[2]!r}, {self[3]!r})"

    @property
    def name(self) -> str:
        """The profile without the GPU type: ``1g.10gb+me``."""
        return f"{self.slices}g.{self.memory_gb}gb" + ("+me" if self.media_extensions else "")


def parse_mig_profile(text: str) -> MigProfile:
    m = re.match(_MIG_RE, _text("MIG profile", text, MIG_FORMS))
    if not m:
        raise _bad("MIG profile", text, "not a profile", MIG_FORMS)
    return MigProfile(int(m["slices"]), int(m["memory_gb"]), bool(m["me"]), m["gpu"])


def format_mig_profile(p: MigProfile) -> str:
    return f"{p.gpu_type}_{p.name}" if p.gpu_type else p.name
