# SPDX-License-Identifier: Apache-2.0
"""YAML -> a tree of nodes that remember their line and column (1-based).

We compose (not construct) so every value keeps its position for error messages, and so duplicate
keys, which PyYAML silently accepts, can be reported. libyaml's CSafeLoader is used when present.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

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
    value: Any = None
    items: list["YNode"] = field(default_factory=list)  # seq items
    keys: dict[str, tuple["YNode", "YNode"]] = field(default_factory=dict)  # map: key -> (key, value)
    duplicates: list["YNode"] = field(default_factory=list)  # repeated keys (their key nodes)
    tag: str = ""

    def plain(self) -> Any:
        """The plain Python value (dict/list/scalar) of this subtree."""
        if self.kind == "map":
            return {k: v.plain() for k, (_, v) in self.keys.items()}
        if self.kind == "seq":
            return [i.plain() for i in self.items]
        return self.value


class YamlSyntaxError(Exception):
    def __init__(self, line: int, col: int, problem: str):
        self.line, self.col, self.problem = line, col, problem
        super().__init__(f"{line}:{col}: {problem}")


_constructor = yaml.constructor.SafeConstructor()


def _scalar(node: yaml.Node) -> Any:
    # YAML 1.1 reads 4:00:00 as a base-60 integer (14400); keep Slurm time strings as text.
    if ":" in str(node.value) and node.tag.endswith((":int", ":float")):
        return node.value
    try:
        value = _constructor.construct_object(node, deep=True)
    except yaml.YAMLError:
        value = node.value
    if hasattr(value, "isoformat"):  # dates: keep the text, the validator wants strings
        value = node.value
    return value


def _convert(node: yaml.Node) -> YNode:
    line, col = node.start_mark.line + 1, node.start_mark.column + 1
    if isinstance(node, yaml.MappingNode):
        out = YNode("map", line, col, tag=node.tag)
        for knode, vnode in node.value:
            key = _convert(knode)
            name = key.value if key.kind == "scalar" else None
            text = str(name) if name is not None else f"<{key.kind}>"
            if text in out.keys:
                out.duplicates.append(key)
                continue
            key.value = text
            out.keys[text] = (key, _convert(vnode))
        return out
    if isinstance(node, yaml.SequenceNode):
        return YNode("seq", line, col, items=[_convert(n) for n in node.value], tag=node.tag)
    return YNode("scalar", line, col, value=_scalar(node), tag=node.tag)


def parse_yaml(text: str) -> YNode | None:
    """Parse one YAML document. Returns None for an empty document; raises YamlSyntaxError."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlSyntaxError(line, col, str(exc.problem or exc.context or "syntax error")) from None
    except yaml.YAMLError as exc:  # e.g. a second document
        raise YamlSyntaxError(1, 1, str(exc).splitlines()[0]) from None
    return None if node is None else _convert(node)
