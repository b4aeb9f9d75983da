# SPDX-License-Identifier: Apache-2.0
"""The core stays pure: policy/topology/binding/rendering modules take data and return data.

Adapters (slurm_gpu/adapters), the CLI, the lab and the orchestration (submit, follow) may do I/O;
the modules below may not import process, NVML, CLI or network modules, read os.environ, or open
files. (The policy and topology packages have their own, finer purity tests.) render.py may load
its Jinja2 templates, lazily, and nothing else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "slurm_gpu"
CORE = ["cpulist", "hostlist", "request", "placement/plan", "placement/per_gpu", "render/script", "slurm/sbatch/parse", "slurm/sbatch/table",
        "slurm/sbatch/values", "slurm/sbatch/directives", "slurm/sbatch/to_request", "slurm/release", "locality", "errors"]
FORBIDDEN_IMPORTS = {"subprocess", "click", "pynvml", "psutil", "socket", "urllib", "http", "shutil"}
ALLOWED_LAZY = {"render/script": {"jinja2", "sys", "hashlib"}}


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """(top-level module name, imported at module level?)"""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[0], node.col_offset == 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module.split(".")[0], node.col_offset == 0))
    return out


@pytest.mark.parametrize("name", CORE)
def test_core_module_is_pure(name):
    tree = ast.parse((PKG / f"{name}.py").read_text(encoding="utf-8"))
    for module, top_level in _imports(tree):
        assert module not in FORBIDDEN_IMPORTS, f"{name}.py imports {module}"
        if module in ALLOWED_LAZY.get(name, set()):
            assert not top_level, f"{name}.py must import {module} lazily (gpusub start-up)"
        elif module == "jinja2":
            pytest.fail(f"{name}.py imports jinja2")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "system", "popen"):
            pytest.fail(f"{name}.py uses os.{node.attr} (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            pytest.fail(f"{name}.py opens a file (line {node.lineno})")
