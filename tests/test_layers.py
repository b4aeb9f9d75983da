# SPDX-License-Identifier: Apache-2.0
"""The packages' layers: which top-level package (or ground-floor module) of slurm_gpu may import which.

One table, ``MAY_IMPORT``, is the architecture's dependency rule (docs/architecture.md); each package's
``__init__`` docstring says the same in words. Every import counts, at module level or inside a function
(a lazy import is a dependency all the same); imports under ``if TYPE_CHECKING:`` never run and are
checked against the wider ``MAY_NAME_TYPES`` instead. Edge modules inside a pure package (its I/O,
tests/test_core_purity.py's EDGES) may also reach ``adapters``: that is what they are for.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "slurm_gpu"

GROUND = frozenset({"errors", "units", "cpulist", "hostlist", "jsontypes", "request", "plain", "digits", "csv_cells",
                    "yesno", "__init__"})
CORE = GROUND | {"topology", "checkpoint", "sharing", "slurm", "policy", "ports", "placement", "render", "emit"}

MAY_IMPORT: dict[str, frozenset[str]] = {
    # the ground floor: values, errors, units (plain: the record helpers while they last)
    "errors": frozenset(), "units": frozenset(), "jsontypes": frozenset(), "plain": frozenset(),
    "__init__": frozenset(),
    "digits": frozenset(), "csv_cells": frozenset(), "yesno": frozenset(),  # ASCII numbers; CSV cells; yes/no
    "cpulist": frozenset({"digits"}),
    "hostlist": frozenset({"errors", "digits"}),
    "request": frozenset({"plain", "jsontypes"}),
    # pure packages, lowest first
    "topology": GROUND,
    "sharing": GROUND,
    "slurm": GROUND | {"sharing"},
    "checkpoint": GROUND | {"slurm"},  # slurm.release: the step ids (the batch step's is -5 on 26.05)
    "policy": GROUND | {"sharing", "checkpoint"},
    "ports": GROUND | {"slurm"},
    "placement": GROUND | {"topology", "slurm", "policy"},
    "render": GROUND | {"checkpoint", "slurm", "placement", "policy"},
    "emit": GROUND | {"topology", "policy", "placement", "sharing"},
    # features with their own edge modules
    "cluster": CORE,
    "sim": CORE | {"cluster"},
    "submit": CORE,
    "node": CORE | {"cluster"},
    # the edges to outside systems: the core's records and protocols, never a feature's flow
    "adapters": CORE | {"node"},
    "lab": CORE | {"adapters", "node", "cluster"},
    "cli": CORE | {"adapters", "node", "cluster", "sim", "submit", "lab"},
    # the Python API: gpusub's prepare step (submit) and the one Slurm adapter
    "api": CORE | {"adapters", "submit"},
}
# Packages whose edge modules (EDGES in tests/test_core_purity.py) may use the adapters.
EDGE_MODULES_MAY_USE_ADAPTERS = ("checkpoint", "placement", "cluster", "sim", "submit", "node", "emit", "policy",
                                 "topology")
# Names used only in annotations (never imported at run time) may come from any pure package.
MAY_NAME_TYPES = {name: allowed | CORE | {"cluster"} for name, allowed in MAY_IMPORT.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                                         or isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"):
            for child in node.body:
                lines |= {n.lineno for n in ast.walk(child) if hasattr(n, "lineno")}
    return lines


def imports(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, imported slurm_gpu module, only under TYPE_CHECKING) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = _type_checking_lines(tree)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import (the layer test reads absolute ones)")
        for name in names:
            if name == "slurm_gpu" or name.startswith("slurm_gpu."):
                yield node.lineno, name, node.lineno in typing_only


def _edge_files() -> set[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("purity", Path(__file__).with_name("test_core_purity.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {e for e in mod.EDGES if e.endswith(".py")}


EDGE_FILES = _edge_files()


def violations() -> list[str]:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        src = _package(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        allowed = MAY_IMPORT[src]
        if rel in EDGE_FILES and src in EDGE_MODULES_MAY_USE_ADAPTERS:
            allowed = allowed | {"adapters"}
        for line, name, typing_only in imports(path):
            dst = _package(name)
            if dst == src or dst in ((MAY_NAME_TYPES[src] | allowed) if typing_only else allowed):
                continue
            out.append(f"slurm_gpu/{rel}:{line}: {src} imports {name}" + (" (types only)" if typing_only else ""))
    return out


def test_every_package_has_a_row() -> None:
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
            if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__pycache__"}
    assert tops == set(MAY_IMPORT), (sorted(tops - set(MAY_IMPORT)), sorted(set(MAY_IMPORT) - tops))


def test_imports_follow_the_layers() -> None:
    found = violations()
    assert not found, "imports against the layers (tests/test_layers.py MAY_IMPORT):\n" + "\n".join(found)


@pytest.mark.parametrize("package", sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").exists()))
def test_package_docstring_says_what_it_owns(package: str) -> None:
    """Each package's ``__init__`` docstring says what it is for; none says it is not built."""
    doc = ast.get_docstring(ast.parse((PKG / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert len(doc) > 40, f"slurm_gpu/{package}/__init__.py: a docstring saying what the package owns"
    assert "not built yet" not in doc.lower(), f"slurm_gpu/{package}/__init__.py: stale 'not built yet'"
    if package in ("sharing", "node", "submit", "cluster"):  # the feature packages name their imports
        assert "May import" in doc, f"slurm_gpu/{package}/__init__.py: say what the package may import"


def test_the_reader_sees_lazy_and_typing_only_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nimport slurm_gpu.units\nif TYPE_CHECKING:\n"
                 "    from slurm_gpu.policy.model import Policy\ndef lazy():\n    from slurm_gpu.cli import main\n")
    assert sorted(imports(f)) == [(2, "slurm_gpu.units", False), (4, "slurm_gpu.policy.model", True),
                                  (6, "slurm_gpu.cli", False)]
    assert "cli" not in MAY_IMPORT["policy"] and "policy" in MAY_NAME_TYPES["sharing"]
