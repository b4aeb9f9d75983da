# SPDX-License-Identifier: Apache-2.0
"""The import graph of slurm_gpu/ has no cycle, lazy imports included; no module imports another's
private names; and importing the core loads no heavy module.

The graph is built from the sources (ast; nothing is imported): an edge A -> B for every
``import slurm_gpu.B`` / ``from slurm_gpu.B import x`` / relative import in A. Each edge has a kind:

- ``module``: run when A is imported (module level, inside ``if``/``try``/``with`` blocks and class
  bodies too);
- ``lazy``: inside a function (it runs later, once both modules are loaded, so Python does not
  complain, but the two modules still need each other: a lazy import that closes a loop is a cycle
  hidden from the interpreter, not a cycle removed);
- ``type``: under ``if TYPE_CHECKING:`` (never run; for annotations only).

``test_no_import_cycle`` counts ``module`` and ``lazy`` edges: the run-time graph must be acyclic.
``test_type_checking_edges`` reports the ``type`` edges separately (the list is printed) and allows
one only where it does not close a loop with the run-time edges (or with other ``type`` edges). The
reason: a type-only import cannot break the import order, so it is the right tool for naming a
type a module receives without loading its module (the node hooks keep ``typing`` and the records'
modules out of every job's start); but if A's types are needed by B while B's code is run by A, the
two modules are one concept split in two, and the shared record belongs in a lower module both import
(as ``topology/smi_table.py`` is for ``infer`` and ``nvidia_smi``). ``TYPE_CHECKING`` must not be a way
to hide a cycle.

``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``; the
implicit import of a module's parent packages is not an edge (Python has put them in sys.modules
before the module runs).

Private names (``test_no_private_imports``): in ``slurm_gpu/`` and ``benchmarks/`` no module writes
``from slurm_gpu.x import _name`` (nor ``import slurm_gpu.x._mod``, nor ``mod._name`` on an imported
slurm_gpu module); a helper two modules share is public in a module of its own (e.g.
``sim/trace_fields.py``, ``placement/layout.py``). The rule for ``tests/``: a test module (``test_*.py``)
may use the private names of the module it tests (a white-box test of a helper, or a reset hook such
as ``checkpoint.job._reset``); that the name belongs to the module under test is for review, the AST
cannot tell. The tests' shared modules (``conftest.py``, ``helpers.py``, harnesses such as
``job_submit/lua_harness.py``) may not: they are the tests' own API, and a private name there would
tie every test that uses them to another module's internals. Dunder names (``__version__``) are not
private. Python's own private modules (``_socket``, ``_signal``, ``_blake2``: imported to start fast)
are outside the rule, which is about this package's names.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Collection, Iterator, Mapping
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


KINDS = ("module", "lazy", "type")
RUNTIME = ("module", "lazy")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of a module, with its kind (``module``, ``lazy`` or ``type``)."""
    todo: list[tuple[ast.AST, str]] = [(node, "module") for node in tree.body]
    while todo:
        node, kind = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, kind
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            todo += [(n, "type") for n in node.body] + [(n, kind) for n in node.orelse]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = "type" if kind == "type" else "lazy"
            todo += [(n, inner) for n in ast.iter_child_nodes(node)]
        else:
            todo += [(n, kind) for n in ast.iter_child_nodes(node)]


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_pkg: bool, modules: Mapping[str, str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        anchor = name.split(".") if is_pkg else name.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def import_edges(modules: Mapping[str, str], package: str = "slurm_gpu") -> dict[tuple[str, str], set[str]]:
    """(module, the package's module it imports) -> the kinds of import that make the edge."""
    edges: dict[tuple[str, str], set[str]] = {}
    for name, source in modules.items():
        is_pkg = name == package or any(m.startswith(name + ".") for m in modules)
        for node, kind in imports(ast.parse(source, name)):
            for target in _targets(node, name, is_pkg, modules):
                if target == package or not target.startswith(package + "."):
                    continue
                while target not in modules and "." in target:  # import a.b.c where c is a name
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    edges.setdefault((name, target), set()).add(kind)
    return edges


def import_graph(modules: Mapping[str, str], package: str = "slurm_gpu",
                 kinds: tuple[str, ...] = RUNTIME) -> dict[str, set[str]]:
    """Module -> the package's modules it imports by an import of one of ``kinds`` (default: the
    imports that run, at module level or in a function)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for (a, b), found in import_edges(modules, package).items():
        if found & set(kinds):
            graph[a].add(b)
    return graph


def type_only_edges(modules: Mapping[str, str], package: str = "slurm_gpu") -> list[tuple[str, str]]:
    """The edges made only by ``if TYPE_CHECKING:`` imports."""
    return sorted(e for e, found in import_edges(modules, package).items() if found == {"type"})


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


def _describe(graph: Mapping[str, set[str]], component: list[str],
              edges: Mapping[tuple[str, str], set[str]] | None = None) -> str:
    inside = set(component)

    def label(a: str, b: str) -> str:
        found = (edges or {}).get((a, b), {"module"})
        return "" if "module" in found else f" ({'lazy' if 'lazy' in found else 'TYPE_CHECKING'})"

    return "; ".join(f"{a} -> {b}{label(a, b)}" for a in component for b in sorted(graph[a] & inside))


def test_graph_sees_the_package() -> None:
    graph = import_graph(sources())
    assert "slurm_gpu.placement.plan" in graph and "slurm_gpu.policy.classifier.steps" in graph
    assert "slurm_gpu.policy.reader" in graph["slurm_gpu.policy.validate"]
    assert "slurm_gpu.policy.fields" in graph["slurm_gpu.policy.validate"]  # from slurm_gpu.policy import fields


def test_no_import_cycle() -> None:
    """No loop among the imports that run: at module level or inside functions (lazy)."""
    modules = sources()
    graph, edges = import_graph(modules), import_edges(modules)
    found = cycles(graph)
    assert not found, "import cycles (lazy imports marked):\n" + "\n".join(_describe(graph, c, edges) for c in found)


def test_type_checking_edges() -> None:
    """The TYPE_CHECKING-only edges, listed (``pytest -rP`` shows them); none may close a loop, with
    the run-time edges or with each other (the module docstring says why)."""
    modules = sources()
    only = type_only_edges(modules)
    print("TYPE_CHECKING-only imports:", *(f"  {a} -> {b}" for a, b in only) or ["  none"], sep="\n")
    graph, edges = import_graph(modules, kinds=KINDS), import_edges(modules)
    found = [c for c in cycles(graph) if any((a, b) in only for a in c for b in graph[a] & set(c))]
    assert not found, "TYPE_CHECKING imports that close a loop:\n" + "\n".join(
        _describe(graph, c, edges) for c in found)


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
    "slurm_gpu.t": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from slurm_gpu.u import U\n"
                   "class K:\n    def m(self):\n        if TYPE_CHECKING:\n            import slurm_gpu.v\n",
    "slurm_gpu.u": "async def f():\n    g = lambda: None\n    with open('x'):\n        import slurm_gpu.t\n",
    "slurm_gpu.v": "",
}


def test_checker_finds_a_cycle() -> None:
    edges = import_edges(SYNTHETIC)
    graph = import_graph(SYNTHETIC)
    assert graph["slurm_gpu.b"] == {"slurm_gpu.c"}
    assert graph["slurm_gpu.c"] == {"slurm_gpu.a"}
    assert edges[("slurm_gpu.d", "slurm_gpu.e")] == {"lazy"}  # an import inside a function: an edge
    assert edges[("slurm_gpu.e", "slurm_gpu.d")] == {"type", "module"}  # `from pkg import mod`: the module
    assert graph["slurm_gpu.p.q"] == {"slurm_gpu.a"}
    assert edges[("slurm_gpu.u", "slurm_gpu.t")] == {"lazy"}  # inside with, inside an async def
    assert edges[("slurm_gpu.t", "slurm_gpu.u")] == {"type"}  # TYPE_CHECKING = False, as the hooks spell it
    assert edges[("slurm_gpu.t", "slurm_gpu.v")] == {"type"}  # TYPE_CHECKING inside a method
    assert graph["slurm_gpu.t"] == set()  # type-only edges do not run
    assert cycles(graph) == [["slurm_gpu.a", "slurm_gpu.b", "slurm_gpu.c"], ["slurm_gpu.d", "slurm_gpu.e"]]
    assert _describe(graph, cycles(graph)[0]) == (
        "slurm_gpu.a -> slurm_gpu.b; slurm_gpu.b -> slurm_gpu.c; slurm_gpu.c -> slurm_gpu.a")
    assert _describe(graph, cycles(graph)[1], edges) == "slurm_gpu.d -> slurm_gpu.e (lazy); slurm_gpu.e -> slurm_gpu.d"
    assert cycles(import_graph(SYNTHETIC, kinds=("module",))) == [["slurm_gpu.a", "slurm_gpu.b", "slurm_gpu.c"]]


def test_checker_finds_a_type_checking_loop() -> None:
    only = type_only_edges(SYNTHETIC)
    assert only == [("slurm_gpu.t", "slurm_gpu.u"), ("slurm_gpu.t", "slurm_gpu.v")]
    full = import_graph(SYNTHETIC, kinds=KINDS)
    looped = [c for c in cycles(full) if any((a, b) in only for a in c for b in full[a] & set(c))]
    assert looped == [["slurm_gpu.t", "slurm_gpu.u"]]  # u imports t lazily; t names u's types: one concept


ROOT = PKG.parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: str, source: str, modules: Collection[str], *, tests: bool = False,
                    package: str = "slurm_gpu") -> list[str]:
    """``path:line: what`` for each use of another module's private name in one file: ``from M import
    _x``, ``import M._x`` and ``M._x`` (M a module of the package, or a local name bound to one).
    ``tests``: the file is under tests/, where a test module (``test_*.py``) may use them."""
    if tests and Path(path).name.startswith("test_"):
        return []
    name = ".".join(Path(path).with_suffix("").parts).removesuffix(".__init__")
    tree = ast.parse(source, path)
    aliases = _module_aliases(tree, modules)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _targets(node, name, path.endswith("__init__.py"), {})[0] if node.level else node.module or ""
            if base == package or base.startswith(package + "."):
                found += [f"{path}:{node.lineno}: from {base} import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            found += [f"{path}:{node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith(package + ".") and any(_private(p) for p in a.name.split("."))]
        elif (isinstance(node, ast.Attribute) and _private(node.attr)
              and isinstance(node.value, (ast.Name, ast.Attribute))):
            owner = ast.unparse(node.value)
            if aliases.get(owner, owner) in modules and aliases.get(owner, owner) != name:
                found.append(f"{path}:{node.lineno}: {owner}.{node.attr}")
    return found


def _module_aliases(tree: ast.Module, modules: Collection[str]) -> dict[str, str]:
    """Local names bound to the package's modules (``import slurm_gpu.x as m``, ``from slurm_gpu import x``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.asname: a.name for a in node.names if a.asname and a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                    if f"{node.module}.{a.name}" in modules}
    return out


def _all_private_imports() -> list[str]:
    modules = set(sources())
    found = []
    for top, tests in (("slurm_gpu", False), ("benchmarks", False), ("tests", True)):
        for path in sorted((ROOT / top).rglob("*.py")):
            found += private_imports(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), modules,
                                     tests=tests)
    return found


def test_no_private_imports() -> None:
    """No module imports another's ``_private`` names (the module docstring gives the rule for tests/)."""
    found = _all_private_imports()
    assert not found, "imports of another module's private names:\n" + "\n".join(found)


PRIVATE_CASES = {
    "slurm_gpu/a.py": ("from slurm_gpu.b import _helper, public\nfrom slurm_gpu.b import __version__\n"
                       "import slurm_gpu.b._impl\nimport slurm_gpu.b as bee\nbee._x\nslurm_gpu.b._y()\n"
                       "import _socket\nfrom _blake2 import blake2b\nself._own\n", False),
    "slurm_gpu/p/__init__.py": ("from . import _sibling\nfrom .q import _hidden\n", False),
    "tests/x/test_b.py": ("from slurm_gpu.b import _helper\nfrom slurm_gpu import b\nb._reset()\n", True),
    "tests/x/helpers.py": ("from slurm_gpu import b\ndef helper():\n    from slurm_gpu.b import _other\n"
                           "    b._reset()\n", True),
}


def test_private_check_finds_them() -> None:
    modules = {"slurm_gpu", "slurm_gpu.a", "slurm_gpu.b", "slurm_gpu.p", "slurm_gpu.p.q"}
    got = {path: private_imports(path, text, modules, tests=tests) for path, (text, tests) in PRIVATE_CASES.items()}
    assert got["slurm_gpu/a.py"] == [
        "slurm_gpu/a.py:1: from slurm_gpu.b import _helper", "slurm_gpu/a.py:3: import slurm_gpu.b._impl",
        "slurm_gpu/a.py:5: bee._x", "slurm_gpu/a.py:6: slurm_gpu.b._y"]
    assert got["slurm_gpu/p/__init__.py"] == [
        "slurm_gpu/p/__init__.py:1: from slurm_gpu.p import _sibling",
        "slurm_gpu/p/__init__.py:2: from slurm_gpu.p.q import _hidden"]
    assert got["tests/x/test_b.py"] == []  # a test module: white-box tests of the module it tests
    assert got["tests/x/helpers.py"] == ["tests/x/helpers.py:3: from slurm_gpu.b import _other",
                                         "tests/x/helpers.py:4: b._reset"]


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
