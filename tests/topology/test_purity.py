# SPDX-License-Identifier: Apache-2.0
"""The topology core stays pure: no click, subprocess, pynvml, os.environ or file opening.
loader.py is the single documented exception (it reads the files a descriptor names)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "slurm_gpu" / "topology"
FORBIDDEN_MODULES = {"click", "subprocess", "pynvml", "jinja2", "os", "slurm_gpu.adapters", "slurm_gpu.cli"}


@pytest.mark.parametrize("path", sorted(p for p in CORE.glob("*.py") if p.name != "loader.py"), ids=lambda p: p.name)
def test_core_module_is_pure(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            assert not any(
                name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES
            ), f"{path.name} imports {name}"
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            assert called not in {"open", "read_text", "read_bytes", "system", "popen"}, f"{path.name} calls {called}"
    assert path.read_text().startswith("# SPDX-License-Identifier: Apache-2.0\n")


def test_import_does_not_load_heavy_modules():
    import subprocess
    import sys

    code = "import sys, slurm_gpu.topology; print(sorted(m for m in ('pynvml','yaml','click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
