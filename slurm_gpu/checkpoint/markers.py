# SPDX-License-Identifier: Apache-2.0
"""Checkpoint markers, pure: the marker record, its file name and JSON, validation of what was read,
which steps are complete, which marker files to prune. The filesystem is adapters/markers.py.

A marker says "rank R of a world of W ranks finished the checkpoint of step S, at PATH". There is one
file per rank per step, ``gpusub-marker.<step>.<rank>.json``. A step is **complete** when rank 0's
marker names a world of W ranks and every rank 0..W-1 has a marker of that step with the same world
size, job id and restart count (one run made it: shards of two runs are not a checkpoint anyone
made). Steps are ordered by their number: the newest complete step is the complete step with the
highest number. The last K complete steps are kept; every marker file of an older step is pruned.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field

from slurm_gpu.checkpoint.contract import MAX_STEP, MAX_WORLD
from slurm_gpu.jsontypes import nested_deeper_than
from slurm_gpu.plain import Record, record

SCHEMA = "gpusub-ckpt-marker"
VERSION = 1
MAX_MARKER_BYTES = 64 * 1024  # a marker is a few hundred bytes; anything bigger is not ours
MAX_PATH_CHARS = 4096  # PATH_MAX
MAX_HOST_CHARS = 255
PREFIX = "gpusub-marker."
_NAME_RE = r"^gpusub-marker\.(0|[1-9][0-9]{0,15})\.(0|[1-9][0-9]{0,6})\.json$"
_TEMP_RE = r"^\.gpusub-marker\.[0-9]{1,16}\.[0-9]{1,7}\.json\.[0-9]{1,10}\.[0-9a-f]{8}\.tmp$"
STALE_TEMP_S = 3600  # a writer's temporary file this old was left by a killed writer
KEYS = frozenset({"schema", "version", "step", "path", "rank", "world_size", "time", "job_id",
                  "restart_count", "cost_s", "host"})


class MarkerError(ValueError):
    """A marker (or a value meant for one) that breaks the schema; the message is one line."""


@record
class Marker(Record):
    """One rank's marker of one step (the JSON file's content)."""

    step: int
    path: str
    rank: int = 0
    world_size: int = 1
    time: float = 0.0  # seconds since the epoch, when the rank marked
    job_id: str | None = None
    restart_count: int = 0
    cost_s: float | None = None  # how long the checkpoint took, when known
    host: str | None = None

    @property
    def name(self) -> str:
        return marker_name(self.step, self.rank)

    @property
    def run(self) -> tuple[int, str | None, int]:
        """What the ranks of one complete step share: world size, job id, restart count."""
        return self.world_size, self.job_id, self.restart_count


@record
class Step(Record):
    """A complete step: every rank's marker, rank 0 first."""

    step: int
    markers: tuple[Marker, ...] = field(default=())

    @property
    def path(self) -> str:
        """Rank 0's path: what GPUSUB_RESUME_FROM holds (the ranks' paths agree when they all mark one
        directory, as torch.distributed.checkpoint does)."""
        return self.markers[0].path

    def path_of(self, rank: int) -> str:
        return self.markers[rank].path if 0 <= rank < len(self.markers) else self.path

    @property
    def cost_s(self) -> float | None:
        """The slowest rank's checkpoint cost (None when no rank recorded one)."""
        costs = [m.cost_s for m in self.markers if m.cost_s is not None]
        return max(costs) if costs else None

    @property
    def time(self) -> float:
        """When the step became complete (the last rank's time)."""
        return max(m.time for m in self.markers)


def marker_name(step: int, rank: int) -> str:
    return f"{PREFIX}{step}.{rank}.json"


def temp_name(name: str, pid: int, token: str) -> str:
    """The hidden temporary file a writer renames onto ``name`` (no marker name: readers skip it)."""
    return f".{name}.{pid}.{token}.tmp"


def is_temp_name(name: str) -> bool:
    return re.match(_TEMP_RE, name) is not None


def parse_name(name: str) -> tuple[int, int] | None:
    """(step, rank) of a marker file name; None for any other name (temp files included)."""
    m = re.match(_NAME_RE, name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _int(data: Mapping[str, object], key: str, lo: int, hi: int) -> int:
    v = data.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise MarkerError(f"{key} must be a whole number {lo}..{hi}, not {_show(v)}")
    return v


def _num(data: Mapping[str, object], key: str, optional: bool) -> float | None:
    v = data.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not 0 <= v < 1e12:
        raise MarkerError(f"{key} must be a finite number >= 0{' or null' if optional else ''}, not {_show(v)}")
    return float(v)


def _show(v: object) -> str:
    text = json.dumps(v) if isinstance(v, (str, int, float, bool, type(None))) else type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def check_path(path: object) -> str:
    """A checkpoint path as markers hold it: text of 1..4096 characters without control characters
    (the shell protocol hands it on in GPUSUB_RESUME_FROM)."""
    if not isinstance(path, str) or not path:
        raise MarkerError(f"path must be non-empty text, not {_show(path)}")
    if len(path) > MAX_PATH_CHARS:
        raise MarkerError(f"path is longer than {MAX_PATH_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise MarkerError(f"path {_show(path)} contains a control character (newline, tab, ...)")
    return path


def check_step(step: object) -> int:
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= MAX_STEP:
        raise MarkerError(f"step must be a whole number 0..{MAX_STEP}, not {_show(step)}")
    return step


def from_dict(data: object) -> Marker:
    """The marker a parsed JSON value describes, or MarkerError (schema, version, types, ranges)."""
    if not isinstance(data, dict):
        raise MarkerError(f"not a JSON object but {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise MarkerError(f"schema is {_show(data.get('schema'))}, not {SCHEMA!r}")
    if data.get("version") != VERSION or isinstance(data.get("version"), bool):
        raise MarkerError(f"version {_show(data.get('version'))} is not {VERSION}")
    if set(data) != KEYS:
        extra, missing = sorted(set(data) - KEYS), sorted(KEYS - set(data))
        raise MarkerError("; ".join(([f"unknown keys {', '.join(map(str, extra))[:80]}"] if extra else [])
                                    + ([f"missing keys {', '.join(missing)}"] if missing else [])))
    world = _int(data, "world_size", 1, MAX_WORLD)
    rank = _int(data, "rank", 0, world - 1)
    job, host = data["job_id"], data["host"]
    if job is not None and not (isinstance(job, str) and job.isascii() and job.isdigit() and len(job) <= 20):
        raise MarkerError(f"job_id must be a Slurm job id or null, not {_show(job)}")
    if host is not None and not (isinstance(host, str) and host.isprintable() and 0 < len(host) <= MAX_HOST_CHARS):
        raise MarkerError(f"host must be a host name or null, not {_show(host)}")
    time = _num(data, "time", False)
    assert time is not None
    return Marker(step=check_step(data["step"]), path=check_path(data["path"]), rank=rank, world_size=world,
                  time=time, job_id=job, restart_count=_int(data, "restart_count", 0, 1 << 31),
                  cost_s=_num(data, "cost_s", True), host=host)


def _no_constant(text: str) -> object:
    raise MarkerError(f"{text} is not a number JSON allows")


def parse_marker(raw: bytes, name: str | None = None) -> Marker:
    """A marker file's bytes -> the marker; MarkerError names what is wrong. ``name``, when given, must
    be the file name that the marker's own step and rank give (a renamed or copied file is not valid)."""
    if len(raw) > MAX_MARKER_BYTES:
        raise MarkerError(f"larger than {MAX_MARKER_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
        if nested_deeper_than(text):  # the same on every Python (3.14's json builds what 3.11's refuses)
            raise MarkerError("nested too deeply")
        data = json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise MarkerError("not UTF-8 text") from None
    except RecursionError:
        raise MarkerError("nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise MarkerError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except MarkerError:
        raise
    except ValueError:  # an integer of more than 4,300 digits (int's conversion limit)
        raise MarkerError("a number too long to read") from None
    marker = from_dict(data)
    if name is not None and name != marker.name:
        raise MarkerError(f"the file name says {name!r} but the marker is step {marker.step} rank {marker.rank}")
    return marker


def to_json(marker: Marker) -> bytes:
    """The marker as its file holds it (one line of JSON, keys sorted); parse_marker reads it back."""
    from_dict(to_dict(marker))  # never write what the reader would refuse
    return (json.dumps(to_dict(marker), sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def to_dict(marker: Marker) -> dict[str, object]:
    return {"schema": SCHEMA, "version": VERSION, "step": marker.step, "path": marker.path, "rank": marker.rank,
            "world_size": marker.world_size, "time": round(marker.time, 3), "job_id": marker.job_id,
            "restart_count": marker.restart_count,
            "cost_s": None if marker.cost_s is None else round(marker.cost_s, 3), "host": marker.host}


def complete_steps(markers: Iterable[Marker]) -> list[Step]:
    """The complete steps, newest (highest step number) first."""
    by_step: dict[int, dict[int, Marker]] = {}
    for m in markers:
        by_step.setdefault(m.step, {})[m.rank] = m
    out = []
    for step, ranks in by_step.items():
        first = ranks.get(0)
        if first is None:
            continue
        world = first.world_size
        found = [ranks.get(r) for r in range(world)]
        if all(m is not None and m.run == first.run for m in found):
            out.append(Step(step, tuple(m for m in found if m is not None)))
    return sorted(out, key=lambda s: -s.step)


def newest_complete(markers: Iterable[Marker]) -> Step | None:
    steps = complete_steps(markers)
    return steps[0] if steps else None


def prune_names(entries: Iterable[tuple[str, int]], complete: Sequence[int], keep: int) -> list[str]:
    """The marker files to delete: (file name, step from the name) of every file the caller may delete,
    the complete steps' numbers and K. Everything of a step older than the K newest complete steps
    goes (incomplete steps too: they can no longer be chosen); nothing while fewer than K are complete."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    kept = sorted(set(complete), reverse=True)[:keep]
    if len(kept) < keep:
        return []
    oldest = kept[-1]
    return sorted(name for name, step in entries if step < oldest)


def next_step(markers: Iterable[Marker], rank: int) -> int:
    """The step number ``mark`` uses when none is given: one past the rank's highest marked step (0 first)."""
    return max((m.step + 1 for m in markers if m.rank == rank), default=0)
