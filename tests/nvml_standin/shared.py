# SPDX-License-Identifier: Apache-2.0
"""The stand-in libnvidia-ml's test helpers, one copy for every test that runs code over it
(tests/nvml_standin/*, tests/node/*): its ``build`` and ``state`` modules, the library built once
(skipped, with the reason, only where the machine has no C compiler), a node state file written from a
recorded fixture, and the environment that points a fresh process at both.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.conftest import missing

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"  # the stand-in tools (nvidia-cuda-mps-control, nvidia-smi)


def _load(name: str) -> ModuleType:
    key = f"nvml_standin_{name}"
    if key in sys.modules:  # one module object per helper, whichever test file loads it first
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


build = _load("build")
state = _load("state")


def standin_lib() -> Path:
    """The directory of the built libnvidia-ml.so.1 (built once; a skip where there is no C compiler)."""
    if build.compiler() is None:
        missing("no C compiler (cc/gcc): the stand-in libnvidia-ml.so.1 cannot be built here")
    return build.build()


def write_node(path: Path, fixture: str | dict[str, Any] = "h100-8gpu",
               edit: Callable[[dict[str, Any]], None] | None = None, **kw: Any) -> Path:
    """A node state file at ``path`` from a recorded fixture (or the data given), after ``edit``."""
    data = state.load_fixture(fixture) if isinstance(fixture, str) else fixture
    if edit:
        edit(data)
    state.write(path, data, **kw)
    return path


def standin_env(lib_dir: Path, node_state: Path, base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (default: this process's environment) without any SLURM_GPU_NVML_STANDIN* setting, then
    the library and node state a fresh process's pynvml finds at start, warnings as errors, ``extra``."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith("SLURM_GPU_NVML_STANDIN")}
    env.update(LD_LIBRARY_PATH=str(lib_dir), SLURM_GPU_NVML_STANDIN=str(node_state), PYTHONWARNINGS="error")
    env.update(extra)
    return env
