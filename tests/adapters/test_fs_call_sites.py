# SPDX-License-Identifier: Apache-2.0
"""Every file write of slurm_gpu/ goes through the one file-safety adapter (slurm_gpu/adapters/fs.py, and
adapters/cache.py on top of it): one AST test over every module.

The source of each module is parsed (nothing is imported) and its names are resolved through its imports,
as tests/test_core_purity.py does. A module fails when it renames, replaces, moves, copies or chmods
by name, creates a directory by path, creates a file by path (``open`` for writing, ``os.open`` with
``O_CREAT`` and no ``dir_fd``, ``Path.write_text`` ...), or uses :mod:`tempfile`: each of those is a
name that someone else may have created first (a planted symlink, a directory a user can write). Only
the exceptions below may, each with its reason; an exception nobody needs any more fails too.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "slurm_gpu"
_purity_spec = importlib.util.spec_from_file_location("core_purity_for_fs",
                                                      PKG.parent / "tests" / "test_core_purity.py")
assert _purity_spec is not None and _purity_spec.loader is not None
purity = importlib.util.module_from_spec(_purity_spec)
_purity_spec.loader.exec_module(purity)

ADAPTER = "adapters/fs.py"
# Qualified names whose every use is a write by name (a prefix ending in "." covers a whole module).
BY_NAME = ("os.rename", "os.renames", "os.replace", "os.chmod", "os.lchmod", "os.chown", "os.lchown",
           "os.makedirs", "os.link", "os.symlink", "os.truncate", "os.mkfifo", "os.mknod", "shutil.move",
           "shutil.copy", "shutil.copyfile", "shutil.copy2", "shutil.copytree", "shutil.copymode",
           "shutil.copystat", "tempfile.")
# Functions that are safe with ``dir_fd=`` (relative to a directory descriptor) and a write by name without.
NEED_DIR_FD = ("os.mkdir",)
# Methods that write by name whatever they are called on (pathlib.Path's).
METHODS = ("write_text", "write_bytes", "mkdir", "touch", "chmod", "lchmod", "rename", "symlink_to", "hardlink_to")

# (module, what is reported) -> why it may. Keep each short and true.
EXCEPTIONS = {
    # The test lab builds its own Slurm as root in $SLURM_GPU_LAB_DIR, a directory it makes itself under the
    # developer's control (docs/lab.md): no site's root-run path, no user of a cluster can write there.
    ("lab/control.py", "os.makedirs"): "the lab's own directory tree (made by `lab up`)",
    ("lab/control.py", "os.chmod"): "the lab's own directories and config files (modes slurmd/slurmdbd demand)",
    ("lab/control.py", ".write_text()"): "the lab's own env file and Slurm config files",
    ("lab/control.py", "os.open O_CREAT"): "the lab's own lock file",
    ("lab/control.py", ".touch()"): "the lab's marker file in its own directory",
    ("lab/control.py", "shutil.copyfile"): "a test's own job_submit.lua into the lab's config directory",
    ("lab/burst.py", "tempfile."): "the burst's spool directory inside the lab's own directory",
    ("lab/burst.py", "open for writing"): "the burst's job lists, fresh names (O_EXCL) in its own spool directory",
    ("lab/burst.py", "os.chmod"): "the burst's spool and job lists made readable for the lab user",
    ("lab/burst.py", "os.mkdir"): "the burst's work directory under the lab's jobs directory",
    ("lab/daemons.py", "os.mknod"): "the lab's stand-in GPU device nodes in /dev (root's) for slurmd's gres.conf",
    ("lab/daemons.py", "os.symlink"): "the lab's stand-in GPU devices in its own directory where mknod is refused",
    ("lab/daemons.py", ".write_text()"): "the lab's own pid/name files",
    ("lab/daemons.py", "os.chmod"): "the lab's own munge key and device stand-ins",
    ("lab/daemons.py", "os.makedirs"): "the lab daemons' own run/spool/log directories",
    ("lab/daemons.py", "open for writing"): "the lab's own record of created devices",
    ("lab/runtime.py", "os.makedirs"): "the lab's copy of this checkout (lab/runtime: a directory tree, not a file)",
    ("lab/runtime.py", "os.replace"): "the lab's copy of this checkout swapped in whole (a directory)",
    ("lab/runtime.py", "os.chmod"): "the lab's copy made world-readable for the lab users",
    ("lab/runtime.py", "shutil.copyfile"): "the lab's copy of the policy files",
    ("lab/runtime.py", "shutil.copytree"): "the lab's copy of this checkout",
    ("lab/runtime.py", ".mkdir()"): "the lab's copy of this checkout",
    ("lab/runtime.py", ".write_text()"): "the lab's copy: its stamp and entry-point wrappers",
    ("lab/runtime.py", ".chmod()"): "the lab's entry-point wrappers",
    ("lab/nodehooks.py", "os.makedirs"): "the lab's stand-in NVML state and agent directories",
    ("lab/nodehooks.py", "os.chmod"): "the lab's stand-in NVML state directory",
    ("lab/nodehooks.py", ".write_text()"): "the lab's stand-in kernel log",
    ("lab/install.py", "open for writing"): "apt's policy-rc.d and install log while the lab installs Slurm",
    ("lab/install.py", "os.chmod"): "apt's policy-rc.d while the lab installs Slurm",
    ("lab/procs.py", "open for writing"): "the lab's own pid files",
    ("lab/demo.py", "os.makedirs"): "the demo's work directory, as the lab user",
    ("lab/demo.py", "os.open O_CREAT"): "the demo's job script (O_EXCL|O_NOFOLLOW, then fchmod), as the lab user",
    # Outside the lab:
    ("node/agent.py", "os.chmod"): "the agent's socket right after bind, in a directory fs.open_dir checked is root's "
                                   "and writable by nobody else (a socket has no descriptor to fchmod)",
    ("adapters/gpu_config.py", "tempfile."): "an unnamed file (TemporaryFile, unlinked at once) for the MPS "
                                             "daemon's stderr: no name anyone can reach",
    ("policy/schema.py", "open for writing"): "the developer's generator (`python -m slurm_gpu.policy.schema "
                                              "--write`) of the shipped schema in the source tree",
}


def _is_write_open(call: ast.Call) -> bool:
    """``open(path, "w")`` or ``Path.open("a")``: a mode (positional or keyword) with w, a, x or +."""
    mode: ast.expr | None = None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        is_builtin = isinstance(call.func, ast.Name)
        pos = 1 if is_builtin else 0
        if len(call.args) > pos:
            mode = call.args[pos]
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


def _mentions(node: ast.AST, attr: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == attr or isinstance(n, ast.Name) and n.id == attr
               for n in ast.walk(node))


def writes_by_name(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """(line, what) for every write by name in a module's source (see the module doc)."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    bound = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}

    def qualname(expr: ast.expr) -> str | None:
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.insert(0, expr.attr)
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in aliases:
            return ".".join([aliases[expr.id], *parts])
        if isinstance(expr, ast.Name) and not parts and expr.id == "open" and "open" not in bound:
            return "open"
        return None

    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n == "tempfile" or n.startswith("tempfile.") for n in names):
                found.append((node.lineno, "tempfile."))
            continue
        if not isinstance(node, ast.Call):
            continue
        name = qualname(node.func)
        has_dir_fd = any(kw.arg in ("dir_fd", "src_dir_fd", "dst_dir_fd") for kw in node.keywords)
        if name is not None:
            hit = next((b for b in BY_NAME if name == b or (b.endswith(".") and name.startswith(b))), None)
            if hit is not None:
                found.append((node.lineno, hit))
            elif name in NEED_DIR_FD and not has_dir_fd:
                found.append((node.lineno, name))
            elif name == "os.open" and _mentions(node, "O_CREAT") and not has_dir_fd:
                found.append((node.lineno, "os.open O_CREAT"))
            elif name in ("open", "io.open") and _is_write_open(node):
                found.append((node.lineno, "open for writing"))
        elif isinstance(node.func, ast.Attribute):
            if node.func.attr in METHODS:
                found.append((node.lineno, f".{node.func.attr}()"))
            elif node.func.attr == "open" and _is_write_open(node):
                found.append((node.lineno, "open for writing"))
    return sorted(set(found))


MODULES = [m for m in purity.MODULES if m != ADAPTER]


@pytest.mark.parametrize("rel", MODULES)
def test_every_write_goes_through_the_adapter(rel: str) -> None:
    hits = [(line, what) for line, what in writes_by_name((PKG / rel).read_text(encoding="utf-8"), rel)
            if (rel, what) not in EXCEPTIONS]
    assert not hits, ("a write by name outside slurm_gpu/adapters/fs.py (use fs.write_atomic, fs.open_dir, "
                      "fs.create_private or adapters/cache.py):\n"
                      + "\n".join(f"slurm_gpu/{rel}:{line}: {what}" for line, what in hits))


def test_every_exception_is_current() -> None:
    for (rel, what), why in EXCEPTIONS.items():
        assert why and (PKG / rel).exists(), rel
        assert what in {w for _, w in writes_by_name((PKG / rel).read_text(encoding="utf-8"), rel)}, \
            f"stale exception {rel}: {what}"


def test_the_adapter_itself_is_where_the_writes_are() -> None:
    whats = {w for _, w in writes_by_name((PKG / ADAPTER).read_text(encoding="utf-8"), ADAPTER)}
    assert {"os.makedirs"} <= whats  # fs.CALLER makes the caller's own directories
    source = (PKG / ADAPTER).read_text(encoding="utf-8")
    for needle in ("O_EXCL", "O_NOFOLLOW", "os.fchmod", "src_dir_fd=", "dst_dir_fd=", "os.fsync", "O_NONBLOCK"):
        assert needle in source, needle


@pytest.mark.parametrize("snippet,expected", [
    ("import os\nos.rename('a', 'b')\n", "os.rename"),
    ("import os as o\no.replace('a', 'b')\n", "os.replace"),
    ("from os import chmod\nchmod('a', 0o644)\n", "os.chmod"),
    ("import shutil\nshutil.move('a', 'b')\n", "shutil.move"),
    ("import tempfile\n", "tempfile."),
    ("from tempfile import NamedTemporaryFile\n", "tempfile."),
    ("def f():\n    import tempfile\n", "tempfile."),
    ("open('x', 'w')\n", "open for writing"),
    ("open('x', mode='a')\n", "open for writing"),
    ("open('x', 'r+')\n", "open for writing"),
    ("import io\nio.open('x', 'wb')\n", "open for writing"),
    ("from pathlib import Path\nPath('x').write_text('y')\n", "write_text"),
    ("def f(p):\n    p.write_bytes(b'')\n", "write_bytes"),
    ("def f(p):\n    p.open('x')\n", "open for writing"),
    ("def f(p):\n    p.mkdir(parents=True)\n", "mkdir"),
    ("import os\nos.makedirs('d')\n", "os.makedirs"),
    ("import os\nos.mkdir('d')\n", "os.mkdir"),
    ("import os\nos.open('f', os.O_WRONLY | os.O_CREAT)\n", "os.open O_CREAT"),
], ids=lambda v: v if "\n" not in v else None)
def test_checker_catches(snippet: str, expected: str) -> None:
    assert any(expected in what for _, what in writes_by_name(snippet)), writes_by_name(snippet)


@pytest.mark.parametrize("snippet", [
    "open('x')\n",
    "open('x', 'rb')\n",
    "import os\nos.mkdir('d', 0o700, dir_fd=3)\n",
    "import os\nos.open('f', os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=3)\n",
    "import os\nos.rename if False else None\n",
    "'a.b'.replace('.', '_')\n",
    "import os\nos.fchmod(3, 0o644)\n",
    "def open(p, m):\n    return p\nopen('x', 'w')\n",
], ids=lambda v: v)
def test_checker_passes(snippet: str) -> None:
    assert writes_by_name(snippet) == []
