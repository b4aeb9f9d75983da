# SPDX-License-Identifier: Apache-2.0
"""The job's GPU summary as it is stored in its AdminComment (pure; docs/report.md "AdminComment").

Format: ``SG1:`` + base32 (RFC 4648, ``=`` padding dropped) of zlib-compressed compact JSON::

    {"v": 1, "n": {"h100n1": [[index, gpu_util_pct, mem_util_pct, max_memory_bytes, energy_j, seconds], ...]},
     "x": 0}

one row per GPU (``null`` where the epilog did not know the figure), ``x`` the GPUs left out by the caps.
Base32 because the text must survive both ways of writing it on Slurm 22.05: ``scontrol update
admincomment=`` (while the job is not finished: kept as is) and ``sacctmgr modify job ... set
AdminComment=`` (after the end: sacctmgr lower-cases the text and turns ``"`` into a backquote); base32 is
read back case-insensitively and holds no quote, ``|``, comma or space.

``decode`` never raises: anything that is not a well-formed summary within the caps is None.
``merge`` adds one node's records to what the AdminComment holds, and refuses (None) to touch an
AdminComment with someone else's content (Princeton's ``JS1:``, a site's note).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections.abc import Iterable, Mapping

from slurm_gpu.jsontypes import JsonValue
from slurm_gpu.plain import NamedTuple

PREFIX = "SG1:"
MAX_TEXT = 60_000  # characters of an encoded summary (AdminComment is a MySQL TEXT: 65,535 bytes)
MAX_JSON = 1 << 20  # bytes a summary may decompress to (a zip bomb stops here)
MAX_NODES = 1024
MAX_GPUS = 4096  # GPU rows in one summary; more are counted in ``omitted``
MAX_NODE_NAME = 128
_B32 = re.compile(r"^[A-Za-z2-7]*$")

Row = list[float | int | None]  # one GPU's stored row: index, util %, memory util %, peak bytes, joules, seconds


class GpuStat(NamedTuple):
    """One GPU of one node of the job."""

    index: int | None  # type: ignore[assignment]  # the GPU's index; hides tuple.index, which nothing uses
    gpu_util_pct: float | None
    mem_util_pct: float | None
    max_memory_bytes: int | None
    energy_j: float | None
    seconds: float | None  # how long the epilog's record covers (end - start)


class Summary(NamedTuple):
    nodes: dict[str, tuple[GpuStat, ...]]
    omitted: int = 0  # GPUs over the caps, without a row

    @property
    def gpus(self) -> int:
        return sum(len(v) for v in self.nodes.values()) + self.omitted

    def utilisation(self) -> float | None:
        """The job's GPU-time-weighted utilisation U in 0..1 over the GPUs with a figure (each GPU weighted by
        its seconds; equal weights when any GPU lacks them); None when no GPU has one."""
        rows = [g for gs in self.nodes.values() for g in gs if g.gpu_util_pct is not None]
        if not rows:
            return None
        if all(g.seconds for g in rows):
            weight = sum(g.seconds or 0.0 for g in rows)
            value = sum((g.gpu_util_pct or 0.0) * (g.seconds or 0.0) for g in rows) / weight
        else:
            value = sum(g.gpu_util_pct or 0.0 for g in rows) / len(rows)
        return min(max(value / 100.0, 0.0), 1.0)


def _num(value: object, integer: bool = False, hi: float = 1e18) -> float | int | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not 0 <= value <= hi:  # first: an int too large for a float (4,000 digits) stops here, as does NaN
        return None
    if not math.isfinite(value):
        return None
    return int(value) if integer else round(float(value), 1)


def row_of(record: Mapping[str, JsonValue]) -> Row:
    """A hooks JSON-lines record (slurm_gpu.node.stats.record) -> the stored row."""
    start, end = _num(record.get("start")), _num(record.get("end"))
    seconds = round(end - start) if start is not None and end is not None and end >= start else None
    return [_num(record.get("gpu_index"), True, 65535), _num(record.get("gpu_util_pct"), hi=100),
            _num(record.get("mem_util_pct"), hi=100), _num(record.get("max_memory_bytes"), True),
            _num(record.get("energy_j")), seconds]


def _stat(row: object) -> GpuStat | None:
    if not isinstance(row, list) or len(row) != 6:
        return None
    idx, util, mem, peak, energy, secs = row
    checks = ((idx, True, 65535), (util, False, 100), (mem, False, 100), (peak, True, 1e18), (energy, False, 1e18),
              (secs, False, 1e12))
    for value, integer, hi in checks:
        if value is not None and _num(value, integer, hi) is None:
            return None
        if integer and value is not None and not isinstance(value, int):
            return None
    return GpuStat(idx, None if util is None else float(util), None if mem is None else float(mem), peak,
                   None if energy is None else float(energy), None if secs is None else float(secs))


def _pack(doc: Mapping[str, object]) -> str:
    raw = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    return PREFIX + base64.b32encode(zlib.compress(raw, 9)).decode().rstrip("=")


def _encode_rows(nodes: Mapping[str, list[Row]], omitted: int) -> str:
    names = sorted(nodes)[:MAX_NODES]
    kept: dict[str, list[Row]] = {}
    room = MAX_GPUS
    for name in names:
        rows = nodes[name][:room]
        kept[name] = rows
        room -= len(rows)
    omitted += sum(len(v) for v in nodes.values()) - sum(len(v) for v in kept.values())
    text = _pack({"v": 1, "n": kept, "x": omitted})
    while len(text) > MAX_TEXT and kept:  # incompressible rows: keep fewer nodes (in proportion) until it fits
        order = sorted(kept)
        keep = min(len(order) - 1, int(len(order) * MAX_TEXT * 0.95 / len(text)))
        for name in order[keep:]:
            omitted += len(kept.pop(name))
        text = _pack({"v": 1, "n": kept, "x": omitted})
    return text


def encode(per_node: Mapping[str, Iterable[Mapping[str, JsonValue]]]) -> str:
    """node -> its GPUs' JSON-lines records -> the AdminComment text (at most MAX_TEXT characters)."""
    nodes = {str(n)[:MAX_NODE_NAME]: [row_of(r) for r in recs] for n, recs in per_node.items()}
    return _encode_rows(nodes, 0)


def _rows(summary: Summary) -> dict[str, list[Row]]:
    return {n: [list(g) for g in gs] for n, gs in summary.nodes.items()}


def decode(text: object) -> Summary | None:
    """The summary in an AdminComment, or None (empty, someone else's, corrupt, over a cap). Never raises:
    what the checks below do not foresee (a number too large for a float, nesting too deep for the
    parser, memory) is None as well."""
    try:
        return _decode(text)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError, zlib.error):
        return None


def _decode(text: object) -> Summary | None:
    if not isinstance(text, str) or len(text) > MAX_TEXT + 16:
        return None
    text = text.strip()
    if text[:len(PREFIX)].upper() != PREFIX:
        return None
    body = text[len(PREFIX):]
    if not _B32.match(body):
        return None
    try:
        data = base64.b32decode(body.upper() + "=" * (-len(body) % 8))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(data, MAX_JSON)
        if inflater.unconsumed_tail:
            return None
        doc = json.loads(raw)
    except (binascii.Error, ValueError, zlib.error, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("v") != 1 or not isinstance(doc.get("n"), dict):
        return None
    omitted = doc.get("x", 0)
    if isinstance(omitted, bool) or not isinstance(omitted, int) or not 0 <= omitted <= 10**7:
        return None
    if len(doc["n"]) > MAX_NODES:
        return None
    nodes: dict[str, tuple[GpuStat, ...]] = {}
    count = 0
    for name, rows in doc["n"].items():
        if not name or len(name) > MAX_NODE_NAME or not isinstance(rows, list):
            return None
        count += len(rows)
        if count > MAX_GPUS:
            return None
        stats = [_stat(r) for r in rows]
        if any(s is None for s in stats):
            return None
        nodes[name] = tuple(s for s in stats if s is not None)
    return Summary(nodes, omitted)


def merge(existing: str | None, node: str, records: Iterable[Mapping[str, JsonValue]]) -> str | None:
    """The AdminComment after adding ``node``'s GPU records (its earlier rows replaced: an epilog that runs
    twice writes the same text). None when ``existing`` holds something that is not our summary: we
    never overwrite it."""
    text = (existing or "").strip()
    if text in ("", "(null)"):
        summary = Summary({})
    else:
        decoded = decode(text)
        if decoded is None:
            return None
        summary = decoded
    rows = _rows(summary)
    rows[str(node)[:MAX_NODE_NAME]] = [row_of(r) for r in records]
    return _encode_rows(rows, summary.omitted)


__all__ = ["PREFIX", "GpuStat", "Summary", "Row", "encode", "decode", "merge", "row_of", "MAX_TEXT", "MAX_GPUS",
           "MAX_NODES"]
