# SPDX-License-Identifier: Apache-2.0
"""The site policy compiled to one self-contained job_submit.lua (Lua 5.1) for slurmctld (pure).

``compile_policy(policy)`` renders ``job_submit/job_submit.lua.j2``: a header, the policy as a Lua data
table (:func:`policy_table`), then the fixed engine ``job_submit/engine.lua`` whose steps mirror
:data:`slurm_gpu.policy.classifier.steps.STEPS` one function per step. Only what the engine reads goes
into the table, with what the Python model derives (a partition's GPU types and capacity) computed here
once, so that the Lua does not re-derive it. Strings are written as Lua literals with every byte that is
not printable ASCII escaped (``\\ddd``), so no policy text can end a string or inject code.
"""

from __future__ import annotations

import hashlib
import os
import string
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from slurm_gpu.policy.classifier.limits import parse_switches
from slurm_gpu.policy.classifier.steps import STEPS
from slurm_gpu.policy.model import DEFAULT_MESSAGES, Policy
from slurm_gpu.policy.nodes import policy_inventory
from slurm_gpu.units import parse_mig_profile

if TYPE_CHECKING:
    from slurm_gpu.jsontypes import JsonObject, JsonValue

SOURCE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "job_submit")
TEMPLATE_NAME = "job_submit.lua.j2"
ENGINE_NAME = "engine.lua"
STEP_NAMES: tuple[str, ...] = tuple(name for name, _ in STEPS)
REQUEUE_OPTIONS = ("--requeue",)  # class options the engine can apply server-side (job_desc.requeue)


def lua_string(text: str) -> str:
    """``text`` as a Lua 5.1 string literal: printable ASCII kept, everything else as ``\\ddd`` bytes."""
    out = ['"']
    for b in text.encode("utf-8", "surrogatepass"):
        c = chr(b)
        if c in '"\\' or not 32 <= b < 127:
            out.append(f"\\{b:03d}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def lua_value(value: object, indent: str = "") -> str:
    """A Lua literal for plain data: None (as nil), bool, int, str, sequences and mappings."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"no Lua literal for {value!r}")
        return repr(value)
    if isinstance(value, str):
        return lua_string(value)
    inner = indent + "  "
    if isinstance(value, Mapping):
        items = [f"{inner}[{lua_string(str(k))}] = {lua_value(v, inner)}," for k, v in value.items() if v is not None]
        return "{\n" + "\n".join(items) + f"\n{indent}}}" if items else "{}"
    if isinstance(value, Sequence):
        parts = [lua_value(v, inner) for v in value]
        flat = "{ " + ", ".join(parts) + " }" if parts else "{}"
        if len(flat) <= 100 and "\n" not in flat:
            return flat
        return "{\n" + "\n".join(f"{inner}{p}," for p in parts) + f"\n{indent}}}"
    raise TypeError(f"no Lua literal for {type(value).__name__}")


def message_pieces(template: str) -> list[JsonValue]:
    """A message template as the engine formats it: literal strings and [field, conversion] pairs
    (Python's ``str.format`` with ``{name}``, ``{name!r}`` or ``{name!s}``; validation refuses more)."""
    pieces: list[JsonValue] = []
    for literal, field, spec, conv in string.Formatter().parse(template):
        if literal:
            pieces.append(literal)
        if field is not None:
            if spec or conv not in (None, "r", "s") or not field.isidentifier():
                raise ValueError(f"placeholder {{{field}}} is more than {{name}} or {{name!r}}")
            pieces.append([field, conv or ""])
    return pieces


def _messages(policy: Policy) -> dict[str, list[Any]]:
    site = dict(policy.messages)
    out = {}
    for key, default in DEFAULT_MESSAGES.items():
        try:
            out[key] = message_pieces(site.get(key, default))
        except ValueError:
            out[key] = message_pieces(default)  # as Policy.message falls back to the default text
    return out


def policy_table(policy: Policy) -> JsonObject:
    """The data the engine reads, derived once from the policy (plain data; see engine.lua)."""
    parts = []
    iso = policy.isolation
    for p in policy.partitions:
        offered = list(policy.partition_gpu_types(p.name))
        mig = sorted(  # MIG candidates as the classifier's fraction step sorts them (without its type filter)
            (parse_mig_profile(prof).slices, parse_mig_profile(prof).memory_gb, t, prof)
            for t in offered if (g := policy.gpu_type(t)) is not None and g.mig_capable
            for prof in g.mig_profiles if not iso.mig_profiles or prof in iso.mig_profiles)
        parts.append({
            "name": p.name, "max_time": p.max_time_min, "default_time": p.default_time_min,
            "allowed_qos": list(p.allowed_qos), "default_qos": p.default_qos,
            "default_gpu_type": p.default_gpu_type, "offered": offered,
            "capacity": {t: list(policy.gpu_capacity(p.name, t)) for t in offered},
            "mig": [list(c) for c in mig],
            "node_modes": [[nt.name, nt.gpu_type, nt.mig_mode] for n in p.node_types
                           if (nt := policy.node_type(n)) is not None and nt.gpu_type and nt.gpus > 0],
        })
    classes = []
    for c in policy.classes:
        m = c.match
        classes.append({
            "name": c.name, "partition": c.partition, "qos": c.qos,
            "requeue": c.checkpoint_required or any(o in REQUEUE_OPTIONS for o in c.options),
            # locality (classifier/limits.locality): --switches as job_desc's req_switch/wait4switch (seconds)
            "switches": list(parse_switches(c.switches)) if c.switches and policy.fabric.plugin == "tree" else None,
            "match": {
                "min_gpus": m.min_gpus, "max_gpus": m.max_gpus, "max_time": m.max_time_min, "array": m.array,
                "interactive": m.interactive, "explicit": m.explicit, "gpu_fraction": m.gpu_fraction,
                "gpu_types": list(m.gpu_types) or None, "accounts": list(m.accounts) or None,
                "users": list(m.users) or None, "groups": list(m.groups) or None,
            },
        })
    d = policy.defaults
    return {
        "name": policy.name,
        "on_internal_error": d.on_internal_error,
        "untyped_gpus": d.untyped_gpus,
        "default_gpu_type": d.gpu_type,
        "gpu_type_names": [g.name for g in policy.gpu_types],
        "gpu_type_set": {g.name: True for g in policy.gpu_types},
        "mig_types": {f"{g.name}_{prof}": [g.name, prof, parse_mig_profile(prof).slices]
                      for g in policy.gpu_types if g.mig_capable for prof in g.mig_profiles},
        "fraction_mode": iso.fraction_mode,
        # check_sharing (the slurm-gpu token in the comment): the MPS share bounds and, per GPU type, the
        # MIG profiles a per-job layout may use (offered by the type and allowed by isolation.mig_profiles)
        "mps_share": [iso.mps_min_share_pct, iso.mps_max_share_pct],
        "mig_offer": {g.name: [q for q in (g.mig_profiles if g.mig_capable else ())
                               if not iso.mig_profiles or q in iso.mig_profiles] for g in policy.gpu_types},
        "partitions": parts,
        # check_nodes: the policy's nodes as admin emit renders them (policy.nodes.policy_inventory)
        "nodes": [{"name": n.name, "partitions": {p: True for p in n.partitions},
                   "features": {f: True for f in sorted(n.features)},
                   "gres": [[g, t, c] for g, t, c in n.gres], "mig_unknown": n.mig_unknown,
                   "unknown": {u: True for u in sorted(n.unknown)}} for n in policy_inventory(policy).nodes],
        "partition_names": [p.name for p in policy.partitions],
        "partition_index": {p.name: i + 1 for i, p in enumerate(policy.partitions)},
        "qos": [{"name": q.name, "max_gpus_per_job": q.max_gpus_per_job, "max_gpus_per_user": q.max_gpus_per_user,
                 "max_wall": q.max_wall_min} for q in policy.qos],
        "qos_index": {q.name: i + 1 for i, q in enumerate(policy.qos)},
        "classes": classes,
        "leaves": [[s.name, {n: True for n in s.nodes}] for s in policy.fabric.leaves()],
        "messages": _messages(policy),
        "steps": list(STEP_NAMES),
    }


def _comment(text: object) -> str:
    return "".join(c if c.isprintable() else "?" for c in str(text))


def compile_policy(policy: Policy, template_dir: str | None = None) -> str:
    """The job_submit.lua text for ``policy`` (deterministic: the same policy gives the same bytes)."""
    import jinja2  # only for compiling: keeps gpusub's start-up free of it

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir or SOURCE_DIR), autoescape=False,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["comment"] = _comment
    table = lua_value(policy_table(policy))
    engine = env.loader.get_source(env, ENGINE_NAME)[0]  # type: ignore[union-attr]
    return env.get_template(TEMPLATE_NAME).render(
        name=policy.name, source=policy.source or "(in memory)", policy_table=table, engine=engine,
        digest=hashlib.sha256(table.encode()).hexdigest()[:16])


__all__ = ["compile_policy", "policy_table", "lua_string", "lua_value", "message_pieces", "SOURCE_DIR", "STEP_NAMES",
           "ENGINE_NAME", "TEMPLATE_NAME"]
