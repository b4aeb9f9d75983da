# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the stand-in libnvidia-ml tests.

``standin_lib`` builds the C library once per session (skips, with the reason, only when the machine
has no C compiler). ``node`` writes a state file for a recorded node and returns a :class:`Node` whose
``run(code)`` executes Python with the REAL nvidia-ml-py in a fresh process (LD_LIBRARY_PATH set at
process start, as pynvml's ``CDLL("libnvidia-ml.so.1")`` needs) and returns what the code printed as
JSON on its last line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.nvml_standin.shared import build, standin_env, standin_lib, state, write_node

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
        return standin_env(self.lib_dir, self.path, **extra)

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


@pytest.fixture(scope="session", name="standin_lib")
def _standin_lib() -> Path:
    return standin_lib()


@pytest.fixture
def node(standin_lib: Path, tmp_path: Path) -> Callable[..., Node]:
    """node(fixture="h100-8gpu", **render_kw, edit=callable) -> Node with a fresh state file."""

    def make(fixture: str | dict = "h100-8gpu", edit: Callable[[dict], None] | None = None, **kw: Any) -> Node:
        return Node(write_node(tmp_path / "node.state", fixture, edit, **kw), standin_lib)

    return make


@pytest.fixture
def helpers():
    """The helper modules (build.py, state.py), for tests that call them directly."""
    return type("Helpers", (), {"build": build, "state": state})
