# SPDX-License-Identifier: Apache-2.0
"""The emitter, the record parsers and the ports are pure: no process, file, environment or CLI access."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "slurm_gpu"
PURE = sorted(str(p.relative_to(PKG)) for p in (PKG / "emit").glob("*.py")) + ["slurm/records.py", "ports.py"]
FORBIDDEN = {"subprocess", "click", "pynvml", "psutil", "socket", "urllib", "http", "shutil", "slurm_gpu.adapters",
             "slurm_gpu.lab", "slurm_gpu.cli"}


@pytest.mark.parametrize("name", PURE)
def test_pure(name):
    tree = ast.parse((PKG / name).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                   else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for m in modules:
            assert not any(m == f or m.startswith(f + ".") for f in FORBIDDEN), f"{name} imports {m}"
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "system", "popen"):
            pytest.fail(f"{name} uses os.{node.attr} (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            pytest.fail(f"{name} opens a file (line {node.lineno})")
