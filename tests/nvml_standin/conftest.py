# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the stand-in libnvidia-ml tests.

``standin_lib`` builds the C library once per session (skips, with the reason, only when the machine
has no C compiler). ``node`` writes a state file for a recorded node and returns a :class:`Node` whose
``run(code)`` executes Python with the REAL nvidia-ml-py in a fresh process (LD_LIBRARY_PATH set at
process start, as pynvml's ``CDLL("libnvidia-ml.so.1")`` needs) and returns what the code printed as
JSON on its last line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import missing

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"nvml_standin_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load("build")
state = _load("state")

PRELUDE = """\
import json, sys
import pynvml as N
def out(value):
    print(json.dumps(value))
def err(fn, *args):
    try:
        fn(*args)
    except N.NVMLError as e:
        return type(e).__name__
    return None
"""


@dataclass
class Node:
    path: Path
    lib_dir: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_GPU_NVML_STANDIN")}
        env.update(LD_LIBRARY_PATH=str(self.lib_dir), SLURM_GPU_NVML_STANDIN=str(self.path), PYTHONWARNINGS="error")
        env.update(extra)
        return env

    def run(self, code: str, timeout: float = 30, **env: str) -> Any:
        """Run ``code`` (after PRELUDE) in a new interpreter; returns the JSON it printed last."""
        r = self.proc(code, timeout=timeout, **env)
        assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        return json.loads(r.stdout.strip().splitlines()[-1])

    def proc(self, code: str, timeout: float = 30, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", PRELUDE + code],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def read(self) -> dict[str, Any]:
        return state.read(self.path)


@pytest.fixture(scope="session")
def standin_lib() -> Path:
    if build.compiler() is None:
        missing("no C compiler (cc/gcc): the stand-in libnvidia-ml.so.1 cannot be built here")
    return build.build()


@pytest.fixture
def node(standin_lib: Path, tmp_path: Path) -> Callable[..., Node]:
    """node(fixture="h100-8gpu", **render_kw, edit=callable) -> Node with a fresh state file."""

    def make(fixture: str | dict = "h100-8gpu", edit: Callable[[dict], None] | None = None, **kw: Any) -> Node:
        data = state.load_fixture(fixture) if isinstance(fixture, str) else fixture
        if edit:
            edit(data)
        path = tmp_path / "node.state"
        state.write(path, data, **kw)
        return Node(path, standin_lib)

    return make


@pytest.fixture
def helpers():
    """The helper modules (build.py, state.py), for tests that call them directly."""
    return type("Helpers", (), {"build": build, "state": state})
