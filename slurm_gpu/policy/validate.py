# SPDX-License-Identifier: Apache-2.0
"""Policy file -> Policy, collecting every problem (file:line:col: field: found X, allowed Y).

Includes are loaded depth-first before the including file's own entries; lists concatenate, the
mappings (defaults, isolation, messages) merge with the including file winning. Names must be
unique across all files.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slurm_gpu.plain import Record, record
from slurm_gpu.policy import fields as F
from slurm_gpu.policy import kinds as K
from slurm_gpu.policy.model import Policy
from slurm_gpu.policy.reader import ReadError, absolute_path, read_policy_text, real_path
from slurm_gpu.policy.yamlload import YamlSyntaxError, YNode, parse_yaml

if TYPE_CHECKING:
    from collections.abc import Iterable

REQ = object()  # marks a required field

# yaml key, model attribute, converter (or a nested Spec, or a SubList), default
Spec = tuple[tuple[str, str, Any, Any], ...]


@record
class SubList(Record):
    """A list of mappings inside a nested mapping (kinds.Section there): each entry converted by ``spec``
    and kept as its :class:`Entry`, so that cross checks name each entry's file, line and field."""

    spec: Spec


def spec_of(cls: type) -> Spec:
    """The converter table of a model dataclass, from its fields' ``yaml(...)`` metadata."""
    out: list[tuple[str, str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("kind")
        if meta is None:
            continue
        default = (f.default if f.default is not dataclasses.MISSING else
                   f.default_factory() if f.default_factory is not dataclasses.MISSING else REQ)
        if isinstance(meta, K.Nested):
            out.append((f.metadata["yaml"], f.name, spec_of(meta.cls), {}))
        elif isinstance(meta, K.Section):
            out.append((f.metadata["yaml"], f.name, SubList(spec_of(meta.cls)), ()))
        else:
            out.append((f.metadata["yaml"], f.name, F.converter(meta), default))
    return tuple(out)


def _top() -> tuple[dict[str, Spec], dict[str, Spec], tuple[str, ...]]:
    lists, maps, keys = {}, {}, []
    for f in dataclasses.fields(Policy):
        kind = f.metadata.get("kind")
        if kind is None:
            continue
        keys.append(f.metadata["yaml"])
        if isinstance(kind, K.Section):
            lists[f.metadata["yaml"]] = spec_of(kind.cls)
        elif isinstance(kind, K.Nested):
            maps[f.metadata["yaml"]] = spec_of(kind.cls)
    return lists, maps, tuple(keys)


LIST_SECTIONS, MAP_SECTIONS, TOP_KEYS = _top()


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
    include_roots: list[str] = field(default_factory=list)  # realpaths includes must stay under

    def bad(self, file: str, node: YNode, path: str, found: str, allowed: str) -> None:
        self.problems.append(f"{file}:{node.line}:{node.col}: {path}: found {found}, allowed {allowed}")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key(ctx: Context, file: str, key: YNode, path: str, allowed: Iterable[str]) -> None:
    shown = F.key_text(key.value)
    ctx.bad(file, key, f"{path}.{shown}" if path else shown, f"unknown key {shown!r}",
            "one of " + ", ".join(allowed) + did_you_mean(str(key.value), allowed))


def convert(ctx: Context, file: str, node: YNode, path: str, spec: Spec) -> Entry:
    """Convert one mapping by its spec; problems go to ctx, bad fields get their default."""
    entry = Entry(file, path, node)
    if node.kind != "map":
        ctx.bad(file, node, path, F.describe(node), "a mapping with keys " + ", ".join(s[0] for s in spec))
        return entry
    for dup in node.duplicates:
        ctx.bad(file, dup, f"{path}.{F.key_text(dup.value)}", f"duplicate key {F.key_text(dup.value)!r}",
                "each key once")
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
        if isinstance(conv, SubList):
            entry.values[attr] = _sub_list(ctx, file, vnode, f"{path}.{ykey}", conv.spec)
            continue
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


def _sub_list(ctx: Context, file: str, node: YNode, path: str, spec: Spec) -> tuple[Entry, ...]:
    if node.kind != "seq":
        ctx.bad(file, node, path, F.describe(node), "a list of mappings with keys " + ", ".join(s[0] for s in spec))
        return ()
    out = []
    for i, item in enumerate(node.items):
        nm = item.keys.get("name", (None, None))[1] if item.kind == "map" else None
        label = nm.value if nm is not None and isinstance(nm.value, str) and F.NAME_RE.match(nm.value) else None
        out.append(convert(ctx, file, item, f"{path}.{label}" if label else f"{path}[{i}]", spec))
    return tuple(out)


MAX_FILES = 100  # the top file and its includes


def _read(ctx: Context, file: str, where: tuple[str, YNode] | None) -> YNode | None:
    try:
        text = read_policy_text(file)
    except ReadError as exc:
        if exc.where is not None:
            ctx.problems.append(f"{file}:{exc.where[0]}:{exc.where[1]}: encoding: found a {exc.reason}, "
                                "allowed UTF-8 text")
        elif where:
            ctx.bad(where[0], where[1], "include", f"{file!r} ({exc.reason})", "a readable policy file")
        else:
            ctx.problems.append(f"{file}: cannot read policy file: {exc.reason}")
        return None
    try:
        root = parse_yaml(text)
    except YamlSyntaxError as exc:
        ctx.problems.append(f"{file}:{exc.line}:{exc.col}: yaml: found {exc.problem}, allowed {exc.allowed}")
        return None
    if root is None or root.kind != "map":  # never quote the content: the file may not be a policy at all
        found = ("an empty document" if root is None
                 else f"a {'list' if root.kind == 'seq' else 'scalar'}, not a YAML mapping")
        node = root or YNode("scalar", 1, 1)
        ctx.bad(file, node, "(top level)", found, "a mapping with 'version: 1'")
        return None
    return root


def _include_roots(ctx: Context, file: str, root: YNode) -> list[str]:
    """Directories includes may come from: the top file's own, and its ``include_dirs``."""
    roots = [real_path(os.path.dirname(absolute_path(file)))]
    if "include_dirs" in root.keys:
        vnode = root.keys["include_dirs"][1]
        allowed = "a list of absolute directories"
        items = vnode.items if vnode.kind == "seq" else None
        if items is None:
            ctx.bad(file, vnode, "include_dirs", F.describe(vnode), allowed)
            items = []
        for item in items:
            if item.kind != "scalar" or not isinstance(item.value, str) or not os.path.isabs(item.value):
                ctx.bad(file, item, "include_dirs", F.describe(item), allowed)
                continue
            roots.append(real_path(item.value))
            ctx.top.setdefault("include_dirs", []).append(item.value)
    return roots


def _under(path: str, roots: list[str]) -> bool:
    return any(os.path.commonpath([path, r]) == r for r in roots)


def load_file(ctx: Context, file: str, stack: tuple[str, ...], where: tuple[str, YNode] | None = None) -> None:
    absolute = real_path(file)
    root = _read(ctx, file, where)
    if root is None:
        return
    ctx.files.append(absolute)
    if "version" not in root.keys:  # not a policy file: check nothing else, so none of it is quoted
        ctx.bad(file, root, "version", "nothing (missing key)",
                "version: 1 (a file without it is not read as a policy)")
        return
    for dup in root.duplicates:
        ctx.bad(file, dup, F.key_text(dup.value), f"duplicate key {F.key_text(dup.value)!r}", "each key once")
    for key, (knode, _) in root.keys.items():
        if key not in TOP_KEYS:
            unknown_key(ctx, file, knode, "", TOP_KEYS)
    vnode = root.keys["version"][1]
    if vnode.kind != "scalar" or vnode.value != 1 or isinstance(vnode.value, bool):
        ctx.bad(file, vnode, "version", F.describe(vnode), "1")
    if not stack:  # top file only
        ctx.include_roots = _include_roots(ctx, file, root)
    elif "include_dirs" in root.keys:
        knode = root.keys["include_dirs"][0]
        ctx.bad(file, knode, "include_dirs", "include_dirs in an included file", "include_dirs in the top file only")
    if not stack:
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
            child_abs = real_path(child)
            if child_abs in stack or child_abs == absolute:
                chain = " -> ".join(os.path.basename(p) for p in (*stack, absolute, child_abs))
                ctx.bad(file, item, "include", f"a cycle {chain}", "an acyclic include graph")
                continue
            if child_abs in ctx.files:
                continue  # diamond: already loaded once
            if not _under(child_abs, ctx.include_roots):
                ctx.bad(file, item, "include", f"{item.value!r}, outside {' and '.join(ctx.include_roots)}",
                        "a file under the policy's directory or under one of include_dirs")
                continue
            if len(ctx.files) >= MAX_FILES:
                ctx.bad(file, item, "include", f"more than {MAX_FILES} files", f"at most {MAX_FILES} files")
                continue
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
            parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(vnode.value) if f is not None]
        except ValueError:
            ctx.bad(file, vnode, f"messages.{key}", F.describe(vnode), "a text with balanced {placeholders}")
            continue
        allowed = sorted(MESSAGE_FIELDS[key])
        for f, spec, conv in parsed:
            base = f.split(".")[0].split("[")[0]
            if base not in MESSAGE_FIELDS[key]:
                ctx.bad(file, vnode, f"messages.{key}", f"placeholder {{{F.key_text(f)}}}",
                        "{" + "}, {".join(allowed) + "}" + did_you_mean(base, allowed))
            elif f != base or spec or conv not in (None, "r", "s"):
                # job_submit.lua formats the same texts server-side: plain placeholders only
                ctx.bad(file, vnode, f"messages.{key}", f"placeholder {{{F.key_text(f)}{'!' + conv if conv else ''}"
                        f"{':' + spec if spec else ''}}}", "{name}, {name!r} or {name!s}, without a format spec")
        ctx.messages[key] = (vnode.value, file, vnode)
