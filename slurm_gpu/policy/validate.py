# SPDX-License-Identifier: Apache-2.0
"""Policy file -> Policy, collecting every problem (file:line:col: field: found X, allowed Y).

Includes are loaded depth-first before the including file's own entries; lists concatenate, the
mappings (defaults, isolation, messages) merge with the including file winning. Names must be
unique across all files.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Any

from slurm_gpu.policy import fields as F
from slurm_gpu.policy.yamlload import YamlSyntaxError, YNode, parse_yaml

REQ = object()  # marks a required field

# yaml key, model attribute, converter, default
Spec = tuple[tuple[str, str, Any, Any], ...]
GPU_TYPE: Spec = (
    ("name", "name", F.name, REQ), ("memory_gb", "memory_gb", F.number_pos, REQ),
    ("mig_capable", "mig_capable", F.boolean, False), ("mig_profiles", "mig_profiles", F.mig_profiles, ()),
    ("features", "features", F.names, ()),
)
NODE_TYPE: Spec = (
    ("name", "name", F.name, REQ), ("topology", "topology", F.text, REQ),
    ("gpu_type", "gpu_type", F.name, None), ("gpus", "gpus", F.int_min(0), 0),
    ("nodes", "nodes", F.hostlist, REQ), ("features", "features", F.names, ()),
)
PARTITION: Spec = (
    ("name", "name", F.name, REQ), ("node_types", "node_types", F.names, REQ),
    ("gpu_types", "gpu_types", F.names, ()), ("max_time", "max_time_min", F.limit_min, None),
    ("default_time", "default_time_min", F.duration_min, None),
    ("priority_tier", "priority_tier", F.int_min(0), 1), ("preemptible", "preemptible", F.boolean, False),
    ("grace_time", "grace_time_s", F.duration_s, 0), ("default", "default", F.boolean, False),
    ("allowed_qos", "allowed_qos", F.names, ()), ("default_qos", "default_qos", F.name, None),
    ("default_gpu_type", "default_gpu_type", F.name, None),
)
QOS: Spec = (
    ("name", "name", F.name, REQ), ("priority", "priority", F.int_min(0), 0),
    ("max_gpus_per_job", "max_gpus_per_job", F.int_min(0), None),
    ("max_gpus_per_user", "max_gpus_per_user", F.int_min(0), None),
    ("max_wall", "max_wall_min", F.limit_min, None),
    ("preempt_mode", "preempt_mode", F.enum("requeue", "cancel", "off"), None),
    ("preempts", "preempts", F.names, ()),
)
MATCH: Spec = (
    ("min_gpus", "min_gpus", F.int_min(0), None), ("max_gpus", "max_gpus", F.int_min(0), None),
    ("max_time", "max_time_min", F.duration_min, None), ("array", "array", F.boolean, None),
    ("interactive", "interactive", F.boolean, None), ("explicit", "explicit", F.boolean, False),
    ("gpu_fraction", "gpu_fraction", F.boolean, None), ("gpu_types", "gpu_types", F.names, ()),
    ("accounts", "accounts", F.names, ()), ("users", "users", F.names, ()), ("groups", "groups", F.names, ()),
)
CLASS: Spec = (
    ("name", "name", F.name, REQ), ("description", "description", F.text, ""),
    ("match", "match", MATCH, {}), ("partition", "partition", F.name, REQ), ("qos", "qos", F.name, None),
    ("options", "options", F.options, ()), ("checkpoint_required", "checkpoint_required", F.boolean, False),
)
DEFAULTS: Spec = (
    ("cpus_per_gpu", "cpus_per_gpu", F.cpus_per_gpu, "topology"),
    ("mem_per_gpu", "mem_per_gpu_mb", F.mem_mb, None),
    ("signal_lead_time", "signal_lead_time_s", F.duration_s, 120),
    ("max_requeues", "max_requeues", F.int_min(0), 3), ("gpu_type", "gpu_type", F.name, None),
    ("untyped_gpus", "untyped_gpus", F.enum("resolve", "reject"), "resolve"),
)
ISOLATION: Spec = (
    ("fraction_mode", "fraction_mode", F.enum("mig", "mps", "mig-then-mps", "reject"), "mig-then-mps"),
    ("mig_max_fraction", "mig_max_fraction", F.fraction, 0.5),
    ("mig_partition", "mig_partition", F.name, None), ("mig_profiles", "mig_profiles", F.mig_profiles, ()),
    ("mps_partition", "mps_partition", F.name, None),
    ("mps_min_share_pct", "mps_min_share_pct", F.pct, 10), ("mps_max_share_pct", "mps_max_share_pct", F.pct, 50),
)
LIST_SECTIONS: dict[str, Spec] = {
    "gpu_types": GPU_TYPE, "node_types": NODE_TYPE, "partitions": PARTITION, "qos": QOS, "classes": CLASS,
}
MAP_SECTIONS: dict[str, Spec] = {"defaults": DEFAULTS, "isolation": ISOLATION}
TOP_KEYS = ("version", "name", "description", "include", *LIST_SECTIONS, *MAP_SECTIONS, "messages")


@dataclass
class Entry:
    """One converted list item or mapping: values by model attribute, nodes by yaml key."""

    file: str
    path: str
    node: YNode
    values: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, YNode] = field(default_factory=dict)

    def where(self, key: str | None = None) -> str:
        n = self.nodes.get(key, self.node) if key else self.node
        return f"{self.file}:{n.line}:{n.col}"


@dataclass
class Context:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    entries: dict[str, list[Entry]] = field(default_factory=lambda: {k: [] for k in LIST_SECTIONS})
    maps: dict[str, Entry] = field(default_factory=dict)
    messages: dict[str, tuple[str, str, YNode]] = field(default_factory=dict)  # key -> (text, file, node)
    files: list[str] = field(default_factory=list)  # absolute paths, load order
    top: dict[str, Any] = field(default_factory=dict)

    def bad(self, file: str, node: YNode, path: str, found: str, allowed: str) -> None:
        self.problems.append(f"{file}:{node.line}:{node.col}: {path}: found {found}, allowed {allowed}")


def did_you_mean(word: str, choices: Any) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key(ctx: Context, file: str, key: YNode, path: str, allowed: Any) -> None:
    ctx.bad(file, key, f"{path}.{key.value}" if path else str(key.value), f"unknown key {key.value!r}",
            "one of " + ", ".join(allowed) + did_you_mean(str(key.value), allowed))


def convert(ctx: Context, file: str, node: YNode, path: str, spec: Spec) -> Entry:
    """Convert one mapping by its spec; problems go to ctx, bad fields get their default."""
    entry = Entry(file, path, node)
    if node.kind != "map":
        ctx.bad(file, node, path, F.describe(node), "a mapping with keys " + ", ".join(s[0] for s in spec))
        return entry
    for dup in node.duplicates:
        ctx.bad(file, dup, f"{path}.{dup.value}", f"duplicate key {dup.value!r}", "each key once")
    known = {s[0]: s for s in spec}
    for key, (knode, _) in node.keys.items():
        if key not in known:
            unknown_key(ctx, file, knode, path, known)
    for ykey, attr, conv, default in spec:
        if ykey not in node.keys:
            if default is REQ:
                ctx.bad(file, node, f"{path}.{ykey}", "nothing (missing key)", f"a required {ykey!r}")
            else:
                entry.values[attr] = default
            continue
        vnode = node.keys[ykey][1]
        entry.nodes[ykey] = vnode
        if isinstance(conv, tuple):  # nested spec (class match)
            sub = convert(ctx, file, vnode, f"{path}.{ykey}", conv)
            entry.values[attr] = sub.values
            entry.nodes.update({f"{ykey}.{k}": v for k, v in sub.nodes.items()})
            continue
        try:
            entry.values[attr] = conv(vnode)
        except F.Bad as exc:
            ctx.bad(file, exc.node or vnode, f"{path}.{ykey}", exc.found, exc.allowed)
            entry.values[attr] = None if default is REQ else default
    return entry


def _read(ctx: Context, file: str, where: tuple[str, YNode] | None) -> YNode | None:
    try:
        with open(file, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        if where:
            ctx.bad(where[0], where[1], "include", f"{file!r} ({reason.lower()})", "a readable policy file")
        else:
            ctx.problems.append(f"{file}: cannot read policy file: {reason.lower()}")
        return None
    try:
        root = parse_yaml(text)
    except YamlSyntaxError as exc:
        ctx.problems.append(f"{file}:{exc.line}:{exc.col}: yaml: found {exc.problem}, allowed valid YAML")
        return None
    if root is None or root.kind != "map":
        node = root or YNode("scalar", 1, 1)
        ctx.bad(file, node, "(top level)", "an empty document" if root is None else F.describe(root),
                "a mapping with 'version: 1'")
        return None
    return root


def load_file(ctx: Context, file: str, stack: tuple[str, ...], where: tuple[str, YNode] | None = None) -> None:
    absolute = os.path.realpath(file)
    root = _read(ctx, file, where)
    if root is None:
        return
    ctx.files.append(absolute)
    for dup in root.duplicates:
        ctx.bad(file, dup, str(dup.value), f"duplicate key {dup.value!r}", "each key once")
    for key, (knode, _) in root.keys.items():
        if key not in TOP_KEYS:
            unknown_key(ctx, file, knode, "", TOP_KEYS)
    if "version" not in root.keys:
        ctx.bad(file, root, "version", "nothing (missing key)", "version: 1")
    else:
        vnode = root.keys["version"][1]
        if vnode.kind != "scalar" or vnode.value != 1 or isinstance(vnode.value, bool):
            ctx.bad(file, vnode, "version", F.describe(vnode), "1")
    if not stack:  # top file only
        for key, conv in (("name", F.name), ("description", F.text)):
            if key in root.keys:
                try:
                    ctx.top[key] = conv(root.keys[key][1])
                except F.Bad as exc:
                    ctx.bad(file, root.keys[key][1], key, exc.found, exc.allowed)
    if "include" in root.keys:
        inode = root.keys["include"][1]
        items = inode.items if inode.kind == "seq" else [inode] if inode.kind == "scalar" else []
        if inode.kind == "map":
            ctx.bad(file, inode, "include", "a mapping", "a list of file paths")
        for item in items:
            if item.kind != "scalar" or not isinstance(item.value, str) or not item.value.strip():
                ctx.bad(file, item, "include", F.describe(item), "a file path (relative to this file)")
                continue
            child = os.path.normpath(os.path.join(os.path.dirname(file), item.value))
            child_abs = os.path.realpath(child)
            if child_abs in stack or child_abs == absolute:
                chain = " -> ".join(os.path.basename(p) for p in (*stack, absolute, child_abs))
                ctx.bad(file, item, "include", f"a cycle {chain}", "an acyclic include graph")
                continue
            if child_abs in ctx.files:
                continue  # diamond: already loaded once
            load_file(ctx, child, (*stack, absolute), (file, item))
    for section, spec in LIST_SECTIONS.items():
        if section not in root.keys:
            continue
        snode = root.keys[section][1]
        if snode.kind != "seq":
            ctx.bad(file, snode, section, F.describe(snode), f"a list of {section} entries")
            continue
        for i, item in enumerate(snode.items):
            nm = item.keys.get("name", (None, None))[1] if item.kind == "map" else None
            label = nm.value if nm is not None and isinstance(nm.value, str) and F.NAME_RE.match(nm.value) else None
            path = f"{section}.{label}" if label else f"{section}[{i}]"
            ctx.entries[section].append(convert(ctx, file, item, path, spec))
    for section, spec in MAP_SECTIONS.items():
        if section in root.keys:
            entry = convert(ctx, file, root.keys[section][1], section, spec)
            given = {a for (y, a, _, _) in spec if y in entry.nodes}
            prev = ctx.maps.get(section)
            if prev is not None:  # including file wins, key by key
                entry.values = {**prev.values, **{a: entry.values[a] for a in given}}
                entry.nodes = {**prev.nodes, **entry.nodes}
            ctx.maps[section] = entry
    if "messages" in root.keys:
        _messages(ctx, file, root.keys["messages"][1])


def _messages(ctx: Context, file: str, node: YNode) -> None:
    import string

    from slurm_gpu.policy.model import DEFAULT_MESSAGES, MESSAGE_FIELDS

    if node.kind != "map":
        ctx.bad(file, node, "messages", F.describe(node), "a mapping of message name to text")
        return
    for key, (knode, vnode) in node.keys.items():
        if key not in DEFAULT_MESSAGES:
            unknown_key(ctx, file, knode, "messages", DEFAULT_MESSAGES)
            continue
        if vnode.kind != "scalar" or not isinstance(vnode.value, str):
            ctx.bad(file, vnode, f"messages.{key}", F.describe(vnode), "a text with {placeholders}")
            continue
        try:
            used = [f for _, f, _, _ in string.Formatter().parse(vnode.value) if f is not None]
        except ValueError:
            ctx.bad(file, vnode, f"messages.{key}", repr(vnode.value), "a text with balanced {placeholders}")
            continue
        allowed = sorted(MESSAGE_FIELDS[key])
        for f in used:
            base = f.split(".")[0].split("[")[0]
            if base not in MESSAGE_FIELDS[key]:
                ctx.bad(file, vnode, f"messages.{key}", f"placeholder {{{f}}}",
                        "{" + "}, {".join(allowed) + "}" + did_you_mean(base, allowed))
        ctx.messages[key] = (vnode.value, file, vnode)
