# SPDX-License-Identifier: Apache-2.0
"""YAML -> a tree of nodes that remember their line and column (1-based).

We build the tree from parser events (not PyYAML's constructor) so every value keeps its position
for error messages, duplicate keys, which PyYAML silently accepts, can be reported, and the size of
the document is bounded (MAX_NODES with aliases expanded, MAX_DEPTH, MAX_NUMBER_CHARS) while it is
read. libyaml's CSafeLoader is used when present.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from slurm_gpu.jsontypes import JsonValue

try:  # libyaml is ~10x faster; fall back to the pure-Python loader
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


@dataclass
class YNode:
    """One YAML value: ``kind`` is "map", "seq" or "scalar"; ``value`` the Python value of a scalar."""

    kind: str
    line: int
    col: int
    value: str | int | float | bool | None = None  # a scalar's (see plain)
    items: list[YNode] = field(default_factory=list)  # seq items
    keys: dict[str, tuple[YNode, YNode]] = field(default_factory=dict)  # map: key -> (key, value)
    duplicates: list[YNode] = field(default_factory=list)  # repeated keys (their key nodes)
    tag: str = ""

    def plain(self) -> JsonValue:
        """The plain Python value (dict/list/scalar) of this subtree: JSON-shaped, since a scalar is text, a
        number, a bool or None (dates and binary stay their text, :func:`_scalar`)."""
        if self.kind == "map":
            return {k: v.plain() for k, (_, v) in self.keys.items()}
        if self.kind == "seq":
            return [i.plain() for i in self.items]
        return self.value


class YamlSyntaxError(Exception):
    def __init__(self, line: int, col: int, problem: str, allowed: str = "valid YAML"):
        self.line, self.col, self.problem, self.allowed = line, col, problem, allowed
        super().__init__(f"{line}:{col}: {problem}")


MAX_NODES = 100_000  # nodes of the document with every alias expanded (a policy has a few thousand)
MAX_DEPTH = 100  # nesting of lists and mappings (a policy needs about 5)
MAX_NUMBER_CHARS = 100  # a number longer than this is refused before Python reads it

_constructor = yaml.constructor.SafeConstructor()
_resolver = yaml.resolver.Resolver()
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _scalar(event: yaml.ScalarEvent, line: int, col: int) -> tuple[Any, str]:
    tag = event.tag
    if tag is None or tag == "!":
        tag = _resolver.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
    text = event.value
    # YAML 1.1 reads 4:00:00 as a base-60 integer (14400); keep Slurm time strings as text.
    if tag in _NUMBER_TAGS and ":" in text:
        return text, tag
    if tag in _NUMBER_TAGS and len(text) > MAX_NUMBER_CHARS:
        raise YamlSyntaxError(line, col, f"a number of {len(text)} characters",
                              f"a number of at most {MAX_NUMBER_CHARS} characters")
    try:
        value = _constructor.construct_object(yaml.ScalarNode(tag, text, style=event.style), deep=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        value = text
    if hasattr(value, "isoformat") or isinstance(value, bytes):  # dates, binary: keep the text
        value = text
    return value, tag


def _problem(exc: yaml.YAMLError) -> tuple[int, int, str]:
    """PyYAML's problem as 'found ...' text, with its position (1-based)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem, context = exc.problem or "", exc.context or ""
    else:
        mark, problem, context = None, str(exc).splitlines()[0] if str(exc) else "", ""
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    if problem.startswith(("found ", "but found ")):
        text = problem.split("found ", 1)[1]
    else:
        text = f"invalid YAML: {problem or 'syntax error'}"
    if context:
        text += f" ({context})"
    return line, col, text


def parse_yaml(text: str) -> YNode | None:
    """Parse one YAML document. Returns None for an empty document; raises YamlSyntaxError.

    The tree is built from the parser's events, not with PyYAML's composer, so aliases are counted
    as the nodes they expand to (an alias bomb stops at MAX_NODES) and nesting is bounded.
    """
    stack: list[YNode] = []  # open collections
    pending_keys: list[YNode | None] = []  # per open mapping: the key waiting for its value
    anchors: dict[str, tuple[YNode, int]] = {}  # anchor -> (node, expanded size)
    open_anchors: list[str | None] = []
    sizes: list[int] = []  # expanded size of each open collection
    total = 0
    root: YNode | None = None
    documents = 0

    def attach(node: YNode, size: int) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        sizes[-1] += size
        parent = stack[-1]
        if parent.kind == "seq":
            parent.items.append(node)
            return
        key = pending_keys[-1]
        if key is None:
            name = node.value if node.kind == "scalar" else None
            key = YNode(node.kind, node.line, node.col, value=str(name) if name is not None else f"<{node.kind}>")
            pending_keys[-1] = key
            return
        pending_keys[-1] = None
        if key.value in parent.keys:
            parent.duplicates.append(key)
        else:
            parent.keys[str(key.value)] = (key, node)  # a key node holds text (above)

    try:
        for event in yaml.parse(text, Loader=_Loader):
            mark = event.start_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise YamlSyntaxError(line, col, "another document (expected a single document in the stream)")
            elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent,
                                    yaml.MappingStartEvent)):
                total += 1
                if isinstance(event, yaml.AliasEvent):
                    if event.anchor not in anchors:
                        what = "a recursive alias" if event.anchor in open_anchors else "an undefined alias"
                        raise YamlSyntaxError(line, col, f"{what} {event.anchor!r}")
                    node, size = anchors[event.anchor]
                    total += size - 1
                    if total > MAX_NODES:
                        raise YamlSyntaxError(line, col, f"aliases that expand to more than {MAX_NODES} nodes",
                                              "a smaller document")
                    attach(node, size)
                    continue
                if total > MAX_NODES:
                    raise YamlSyntaxError(line, col, f"more than {MAX_NODES} nodes", "a smaller document")
                if isinstance(event, yaml.ScalarEvent):
                    value, tag = _scalar(event, line, col)
                    node = YNode("scalar", line, col, value=value, tag=tag)
                    if event.anchor:
                        anchors[event.anchor] = (node, 1)
                    attach(node, 1)
                    continue
                if len(stack) >= MAX_DEPTH:
                    raise YamlSyntaxError(line, col, f"lists or mappings nested more than {MAX_DEPTH} deep",
                                          "a shallower document")
                kind = "seq" if isinstance(event, yaml.SequenceStartEvent) else "map"
                stack.append(YNode(kind, line, col, tag=event.tag or ""))
                pending_keys.append(None)
                open_anchors.append(event.anchor)
                sizes.append(1)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                node, size, anchor = stack.pop(), sizes.pop(), open_anchors.pop()
                pending_keys.pop()
                if anchor:
                    anchors[anchor] = (node, size)
                attach(node, size)
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(*_problem(exc)) from None
    return root
