# SPDX-License-Identifier: Apache-2.0
"""The import graph of slurm_gpu/ has no cycle, and importing the core loads no heavy module.

The graph is built from the sources (ast; nothing is imported): an edge A -> B for every
``import slurm_gpu.B`` / ``from slurm_gpu.B import x`` / relative import that A runs when it is itself
imported, i.e. at module level (inside ``if``/``try`` blocks and class bodies too). Left out, and so
allowed to close a loop: imports inside functions (lazy imports run after both modules are loaded)
and imports under ``if TYPE_CHECKING:`` (never run). ``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg``; the implicit import of a module's parent packages
is not an edge (Python has put them in sys.modules before the module runs).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "slurm_gpu"


def sources(root: Path = PKG) -> dict[str, str]:
    """Module name -> source text, for every module of the package under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path.read_text(encoding="utf-8")
    return out


def _module_level(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                    isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
                todo += node.orelse
            else:
                todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
        elif isinstance(node, (ast.With, ast.ClassDef)):
            todo += node.body


def import_graph(modules: Mapping[str, str], package: str = "slurm_gpu") -> dict[str, set[str]]:
    """Module -> the package's modules it imports at module level."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, source in modules.items():
        is_pkg = name == package or any(m.startswith(name + ".") for m in modules)
        for node in _module_level(ast.parse(source, name)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                if target == package or not target.startswith(package + "."):
                    continue
                while target not in modules and "." in target:  # import a.b.c where c is a name
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a loop (Tarjan), each sorted, biggest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def _describe(graph: Mapping[str, set[str]], component: list[str]) -> str:
    inside = set(component)
    return "; ".join(f"{a} -> {b}" for a in component for b in sorted(graph[a] & inside))


def test_graph_sees_the_package() -> None:
    graph = import_graph(sources())
    assert "slurm_gpu.placement.plan" in graph and "slurm_gpu.policy.classifier.steps" in graph
    assert "slurm_gpu.policy.reader" in graph["slurm_gpu.policy.validate"]
    assert "slurm_gpu.policy.fields" in graph["slurm_gpu.policy.validate"]  # from slurm_gpu.policy import fields


def test_no_import_cycle() -> None:
    graph = import_graph(sources())
    found = cycles(graph)
    assert not found, "import cycles (module level):\n" + "\n".join(_describe(graph, c) for c in found)


SYNTHETIC = {
    "slurm_gpu": "",
    "slurm_gpu.a": "from slurm_gpu.b import f\n",
    "slurm_gpu.b": "import os\nfrom . import c\n",
    "slurm_gpu.c": "try:\n    from .a import g\nexcept ImportError:\n    pass\n",
    "slurm_gpu.d": "def lazy():\n    from slurm_gpu.e import h\n",
    "slurm_gpu.e": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from slurm_gpu.d import x\n"
                   "from slurm_gpu import d\n",
    "slurm_gpu.p": "from slurm_gpu.p.q import y\n",
    "slurm_gpu.p.q": "from .. import a\n",
}


def test_checker_finds_a_cycle() -> None:
    graph = import_graph(SYNTHETIC)
    assert graph["slurm_gpu.b"] == {"slurm_gpu.c"}
    assert graph["slurm_gpu.c"] == {"slurm_gpu.a"}
    assert graph["slurm_gpu.d"] == set()  # lazy import: no edge
    assert graph["slurm_gpu.e"] == {"slurm_gpu.d"}  # TYPE_CHECKING: no edge; `from pkg import mod`: the module
    assert graph["slurm_gpu.p.q"] == {"slurm_gpu.a"}
    assert cycles(graph) == [["slurm_gpu.a", "slurm_gpu.b", "slurm_gpu.c"]]
    assert _describe(graph, cycles(graph)[0]) == (
        "slurm_gpu.a -> slurm_gpu.b; slurm_gpu.b -> slurm_gpu.c; slurm_gpu.c -> slurm_gpu.a")


@pytest.mark.parametrize("module,heavy", [
    ("slurm_gpu.topology", ("pynvml", "yaml", "click", "jinja2")),
    ("slurm_gpu.render.script", ("pynvml", "click", "jinja2")),
    ("slurm_gpu.placement.plan", ("pynvml", "click", "jinja2", "subprocess")),
])
def test_import_does_not_load_heavy_modules(module: str, heavy: tuple[str, ...]) -> None:
    """gpusub's start-up: pynvml, jinja2 and the CLI are imported where first used, not by the core."""
    code = f"import sys, {module}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
