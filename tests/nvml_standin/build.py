# SPDX-License-Identifier: Apache-2.0
"""Build the stand-in ``libnvidia-ml.so.1`` from the C sources next to this file.

``build()`` compiles with the system C compiler (``$CC``, else ``cc``/``gcc``) into a cache directory
keyed by the sha256 of the sources and flags, so a second call (or a second test session) reuses the
library. The result is ``<dir>/libnvidia-ml.so.1``, soname ``libnvidia-ml.so.1``: put ``<dir>`` on
``LD_LIBRARY_PATH`` and the unmodified nvidia-ml-py binding loads it.

    python tests/nvml_standin/build.py [DIR]   # build (or reuse) and print the library path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = ("standin_state.c", "standin_api.c", "standin_device.c", "standin_mig.c", "standin_links.c")
HEADERS = ("standin.h", "standin_api.h")
FLAGS = (
    "-std=gnu11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-Wl,-soname,libnvidia-ml.so.1",
)
SONAME = "libnvidia-ml.so.1"
# Slurm 22.05's gpu plugin selector dlopen()s the unversioned name before loading gpu_nvml.so
# (src/common/gpu.c gpu_plugin_init: dlopen("libnvidia-ml.so")); the driver packages ship it as a link.
DEV_LINK = "libnvidia-ml.so"


class BuildError(RuntimeError):
    pass


def compiler() -> str | None:
    """The C compiler to use, or None when the machine has none."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and (path := shutil.which(name)):
            return path
    return None


def source_hash(cc: str) -> str:
    h = hashlib.sha256()
    for name in (*HEADERS, *SOURCES):
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    h.update(" ".join((cc, *FLAGS)).encode())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    root = os.environ.get("SLURM_GPU_NVML_STANDIN_CACHE")
    return Path(root) if root else Path(tempfile.gettempdir()) / f"slurm-gpu-nvml-standin-{os.getuid()}"


def build(cache: Path | None = None) -> Path:
    """Return the directory holding a built ``libnvidia-ml.so.1`` (built now if not cached)."""
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler (cc/gcc) on PATH; install gcc and libc6-dev")
    out_dir = (cache or cache_root()) / source_hash(cc)
    lib = out_dir / SONAME
    if lib.is_file():
        _dev_link(out_dir)
        return out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(out_dir, 0o755)  # the lab's hooks run as other users
    tmp = out_dir / f".{SONAME}.{os.getpid()}"
    argv = [cc, *FLAGS, "-o", str(tmp), *(str(HERE / s) for s in SOURCES)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"{' '.join(argv)} failed (exit {r.returncode}):\n{r.stderr.strip()}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, lib)  # atomic: concurrent builders never see a half-written library
    _dev_link(out_dir)
    return out_dir


def _dev_link(out_dir: Path) -> None:
    link = out_dir / DEV_LINK
    if link.is_symlink() or link.exists():
        return
    tmp = out_dir / f".{DEV_LINK}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    os.symlink(SONAME, tmp)
    os.replace(tmp, link)


def main(argv: list[str]) -> int:
    try:
        lib = build() / SONAME
    except (BuildError, OSError, subprocess.TimeoutExpired) as e:
        print(f"build.py: {e}", file=sys.stderr)
        return 1
    if argv:
        dest = Path(argv[0])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, dest / SONAME)
        lib = dest / SONAME
    print(lib)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
