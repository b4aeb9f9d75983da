# SPDX-License-Identifier: Apache-2.0
"""The pure core does no I/O: one test over every module of slurm_gpu/.

The source of each module is parsed (nothing is imported) and every name it uses is resolved through
its imports (``import os as o; o.environ`` is ``os.environ``). A module fails when it imports a
process, network, native-code or temp-file module, or uses a file, process, environment or terminal
function. Only the edges below may do I/O: they join the core to the world (docs/architecture.md).
Anything else that needs the disk belongs in an adapter that hands the core data.
"""

from __future__ import annotations

import ast
import pkgutil
from collections.abc import Iterable
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "slurm_gpu"

# Packages (a trailing "/") and modules that may do I/O, each with its reason.
EDGES = {
    "adapters/": "one module per external system (Slurm CLI, NVML, sysfs, affinity)",
    "submit/gpusub.py": "gpusub's flow: reads the script, the policy and the cluster, submits, follows",
    "submit/follow.py": "follows a job to its end (squeue/sacct through the Slurm port, a live line)",
    "node/entry.py": "one node-hook run in this process: alarm, stdio, the runner",
    "node/runner.py": "the Prolog/Epilog/TaskProlog runner: settings, state files, drain through scontrol",
    "node/steps.py": "the hooks' steps: leftover kill, health, job map, NVML accounting",
    "node/share_steps.py": "the MIG and MPS steps: NVML changes and the per-job MPS daemon",
    "node/summary.py": "the job summary stored in AdminComment (sacct/sacctmgr, a detached helper)",
    "node/agent.py": "the per-node hook agent (a Unix socket, fork per run)",
    "node/epilog_ctld.py": "the EpilogSlurmctld run: scontrol, the markers, the log",
    "node/install.py": "slurm-gpu admin install/check: writes the shims, hooks.conf and units",
    "emit/install_lua.py": "compiles the policy to job_submit.lua and installs it beside slurm.conf",
    "cluster/jobstats_io.py": "jobstats' Slurm calls (sacct) and the policy it reads",
    "cluster/report_io.py": "report's and exporter's Slurm calls and the files they write",
    "sim/run_files.py": "simulate's trace and policy files in, its output directory out",
    "sim/replay.py": "the lab replay: submits a trace to a lab and reads sacct back",
    "placement/pin_main.py": "slurm-gpu-pin: reads the allocation and the topology, sets affinity, execs",
    "cli/": "Click verbs: parse, call the core, print",
    "lab/": "runs the local Slurm lab (daemons, config files, clients)",
    "policy/reader.py": "the one bounded reader of policy files (no FIFO hang, size limit)",
    "policy/schema.py": "the `python -m slurm_gpu.policy.schema --write/--check` generator of the shipped schema",
    "topology/loader.py": "the one bounded reader of topology files and descriptors",
    "api/__init__.py": "the Python API's names: re-exports the executors (edges) below",
    "api/folder.py": "the executor's private folder: pickled tasks, results, logs (through adapters/fs.py)",
    "api/poller.py": "one squeue per interval for every job handle, sacct for those that left the queue",
    "api/executor.py": "the Executor: gpusub's prepare/render and the Slurm adapter, job handles",
    "api/local.py": "LocalExecutor/DebugExecutor: subprocesses, signals, the checkpoint protocol's restarts",
    "api/__main__.py": "python -m slurm_gpu.api: the job side's entry point",
    "api/worker.py": "the job side: loads the task, runs it, writes the result, checkpoints on the signal",
    "api/command.py": "Command: a command line run in the job (subprocess)",
    "checkpoint/job.py": "the job's side of the checkpoint protocol: environment, stop signal, marker store",
}

# Single names a core module may use, each with its reason (the rest of the module stays checked).
ALLOWED = {
    ("emit/job_submit.py", "jinja2.FileSystemLoader"): "loads job_submit/'s template and engine, as the renderer does",
}

# Whole modules the core may not import.
FORBIDDEN_MODULES = {
    "subprocess", "socket", "ctypes", "shutil", "tempfile", "pynvml", "click", "psutil", "urllib", "http",
    "glob", "fcntl", "select", "signal", "multiprocessing", "pty", "termios",
}
# Qualified names the core may not use ("os.exec" also covers os.execv, os.execvpe, ...).
FORBIDDEN_NAMES = {
    "open", "input", "print", "breakpoint", "io.open", "io.FileIO",
    "os.open", "os.fdopen", "os.listdir", "os.scandir", "os.walk", "os.stat", "os.lstat", "os.fstat",
    "os.mkdir", "os.makedirs", "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames",
    "os.replace", "os.link", "os.symlink", "os.readlink", "os.truncate", "os.chmod", "os.chown", "os.utime",
    "os.access", "os.system", "os.popen", "os.environ", "os.environb", "os.get", "os.putenv", "os.unsetenv",
    "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.kill", "os.killpg", "os.wait", "os.chdir",
    "os.read", "os.write", "os.close", "os.dup", "os.pipe", "os.sched_", "os.cpu_count", "os.umask",
    "os.path.exists", "os.path.lexists", "os.path.isfile", "os.path.isdir", "os.path.islink",
    "os.path.ismount", "os.path.realpath", "os.path.abspath", "os.path.samefile", "os.path.getsize",
    "os.path.getmtime", "os.path.getatime", "os.path.getctime", "os.path.expanduser", "os.path.expandvars",
    "sys.stdin", "sys.stdout", "sys.stderr", "sys.argv", "sys.exit", "sys.prefix",
    "jinja2.FileSystemLoader", "jinja2.PackageLoader",
}
BUILTINS = {"open", "input", "print", "breakpoint"}
# Methods that touch the disk whatever they are called on (pathlib.Path, zipfile, tarfile, ...).
FORBIDDEN_METHODS = {
    "read_text", "read_bytes", "write_text", "write_bytes", "open", "exists", "is_file", "is_dir", "iterdir",
    "glob", "rglob", "mkdir", "touch", "unlink", "rmdir", "samefile", "resolve", "expanduser", "lstat", "cwd", "home",
}


def _forbidden(qualname: str) -> bool:
    root = qualname.split(".")[0]
    if root in FORBIDDEN_MODULES:
        return True
    return any(qualname == n or (qualname.startswith(n) and (n.endswith(("_", "get", "exec", "spawn", "wait"))
                                                             or qualname[len(n)] == "."))
               for n in FORBIDDEN_NAMES)


def io_uses(source: str, filename: str = "<string>", allowed: Iterable[str] = ()) -> list[str]:
    """Every I/O use in a module's source, as "file:line: what" (empty: the module is pure).
    ``allowed``: qualified names (as reported, e.g. "jinja2.FileSystemLoader") that are not reported."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}  # local name -> qualified name, from the module's imports (any depth)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                if _forbidden(a.name):
                    found.append((node.lineno, f"imports {a.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _forbidden(node.module):
                found.append((node.lineno, f"imports {node.module}"))
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                if _forbidden(f"{node.module}.{a.name}"):
                    found.append((node.lineno, f"imports {node.module}.{a.name}"))
    # Builtins count unless the module binds the name itself (a function, class, argument or variable).
    bound = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FORBIDDEN_METHODS
                and not (node.func.attr == "resolve" and node.args)):  # yaml's Resolver.resolve(...), not Path's
            found.append((node.lineno, f"calls .{node.func.attr}()"))
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        parts: list[str] = []
        inner: ast.expr = node
        while isinstance(inner, ast.Attribute):
            parts.insert(0, inner.attr)
            inner = inner.value
        if not isinstance(inner, ast.Name):
            continue
        if inner.id in aliases:
            base = aliases[inner.id]
        elif inner.id in BUILTINS and inner.id not in bound:
            base = inner.id
        else:
            continue
        qualname = ".".join([base, *parts])
        # Report the shortest forbidden name only (os.environ, not also os.environ.get).
        if _forbidden(qualname) and not (parts and _forbidden(qualname.rsplit(".", 1)[0])):
            found.append((node.lineno, f"uses {qualname}"))
    skip = {f"uses {name}" for name in allowed}
    return [f"{filename}:{line}: {what}" for line, what in sorted(set(found)) if what not in skip]


def _modules(directory: Path = PKG) -> list[str]:
    """Every module of the package, as a path under slurm_gpu/ (pkgutil, without importing anything)."""
    out = [str((directory / "__init__.py").relative_to(PKG))]
    for info in pkgutil.iter_modules([str(directory)]):
        if info.ispkg:
            out += _modules(directory / info.name)
        else:
            out.append(str((directory / f"{info.name}.py").relative_to(PKG)))
    return sorted(out)


def _is_edge(rel: str) -> bool:
    return any(rel == e or (e.endswith("/") and rel.startswith(e)) for e in EDGES)


MODULES = _modules()


def test_walk_sees_the_whole_package() -> None:
    on_disk = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py"))
    assert MODULES == on_disk
    assert {"placement/plan.py", "render/script.py", "policy/validate.py", "policy/classifier/steps.py"} <= set(MODULES)


def test_every_allowance_is_current() -> None:
    for edge in EDGES:
        assert (PKG / edge).exists(), f"stale allow-list entry {edge}"
    for module, name in ALLOWED:  # an allowance nobody needs any more goes
        assert not _is_edge(module)
        assert f"uses {name}" in " ".join(io_uses((PKG / module).read_text(encoding="utf-8"))), (module, name)


@pytest.mark.parametrize("rel", [m for m in MODULES if not _is_edge(m)])
def test_core_module_does_no_io(rel: str) -> None:
    allowed = [name for (module, name) in ALLOWED if module == rel]
    uses = io_uses((PKG / rel).read_text(encoding="utf-8"), f"slurm_gpu/{rel}", allowed)
    assert not uses, "I/O in the pure core (move it to an adapter or the feature's edge module):\n" + "\n".join(uses)


EDGE_PACKAGES = ("slurm_gpu.adapters", "slurm_gpu.cli", "slurm_gpu.lab")
# the feature packages' own edge modules (EDGES entries that are files), as dotted names
# The bounded readers inside core packages (policy files, topology files, the checkpoint store) are
# called by the core on purpose; every other edge file is a feature's own I/O, which no core module imports.
CORE_READERS = ("policy/reader.py", "policy/schema.py", "topology/loader.py", "checkpoint/job.py")
EDGE_MODULES = tuple("slurm_gpu." + e[:-3].replace("/", ".") for e in EDGES
                     if e.endswith(".py") and e not in CORE_READERS)


@pytest.mark.parametrize("rel", [m for m in MODULES if not _is_edge(m)])
def test_core_module_does_not_import_the_edges(rel: str) -> None:
    """Dependencies point one way: the edges use the core, never the reverse (lazy imports included)."""
    for node in ast.walk(ast.parse((PKG / rel).read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        for name in names:
            assert not name.startswith(EDGE_PACKAGES), f"slurm_gpu/{rel}:{node.lineno}: imports {name}"
            assert not name.startswith(EDGE_MODULES), f"slurm_gpu/{rel}:{node.lineno}: imports the edge {name}"


@pytest.mark.parametrize("rel", MODULES)
def test_module_has_the_spdx_header(rel: str) -> None:
    assert (PKG / rel).read_text(encoding="utf-8").startswith("# SPDX-License-Identifier: Apache-2.0\n")


PLAN = "slurm_gpu/placement/plan.py"


@pytest.mark.parametrize("snippet,expected", [
    ("def f(p):\n    return open(p).read()\n", "uses open"),
    ("import io\nio.open('x')\n", "uses io.open"),
    ("import os\nos.environ.get('HOME')\n", "uses os.environ"),
    ("import os as o\nx = o.environ['X']\n", "uses os.environ"),
    ("from os import environ\n", "imports os.environ"),
    ("import os\nos.getenv('X')\n", "uses os.getenv"),
    ("import os\nos.execvp('x', [])\n", "uses os.execvp"),
    ("import os\nos.path.isfile('x')\n", "uses os.path.isfile"),
    ("from os import path\npath.exists('x')\n", "uses os.path.exists"),
    ("from os.path import realpath\n", "imports os.path.realpath"),
    ("import subprocess\n", "imports subprocess"),
    ("def f():\n    from subprocess import run\n", "imports subprocess"),
    ("import socket\n", "imports socket"),
    ("import ctypes\n", "imports ctypes"),
    ("import shutil\n", "imports shutil"),
    ("import tempfile\n", "imports tempfile"),
    ("import pynvml\n", "imports pynvml"),
    ("import sys\nsys.stderr.write('x')\n", "uses sys.stderr"),
    ("import jinja2\njinja2.FileSystemLoader('t')\n", "uses jinja2.FileSystemLoader"),
    ("from jinja2 import FileSystemLoader\n", "imports jinja2.FileSystemLoader"),
    ("from pathlib import Path\nPath('x').read_text()\n", "calls .read_text()"),
    ("def f(p):\n    return p.exists()\n", "calls .exists()"),
    ("def f(p):\n    return list(p.iterdir())\n", "calls .iterdir()"),
], ids=lambda v: v if "\n" not in v else None)
def test_checker_catches(snippet: str, expected: str) -> None:
    """The checker run on synthetic sources: adding any of these to placement/plan.py fails the test."""
    assert any(u.endswith(f": {expected}") for u in io_uses(snippet, PLAN)), io_uses(snippet, PLAN)
    assert not _is_edge(PLAN.removeprefix("slurm_gpu/"))


def test_open_added_to_plan_fails() -> None:
    source = (PKG / "placement" / "plan.py").read_text(encoding="utf-8")
    assert io_uses(source, PLAN) == []
    broken = source + "\n\ndef _sneaky(path: str) -> str:\n    with open(path) as fh:\n        return fh.read()\n"
    assert io_uses(broken, PLAN) == [f"{PLAN}:{len(source.splitlines()) + 4}: uses open"]


@pytest.mark.parametrize("snippet", [
    "import os\nos.path.join('a', 'b')\nos.path.basename('x')\nos.sep\n",
    "import io\nio.StringIO('x')\n",
    "from pathlib import PurePath\nPurePath('a') / 'b'\n",
    "def open(x):\n    return x\nopen(1)\n",
    "s = 'a'.replace('a', 'b')\n",
    "import shlex\nshlex.quote('x')\n",
], ids=["os.path.join", "StringIO", "PurePath", "own open", "str.replace", "shlex"])
def test_checker_passes_pure_code(snippet: str) -> None:
    assert io_uses(snippet, PLAN) == []


def public_any(source: str) -> list[str]:
    """Public functions and methods (module level and in module-level classes; names without a leading
    underscore) whose annotations mention ``Any``: "line name: parameter: annotation"."""
    tree = ast.parse(source)
    funcs: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.append(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            funcs += [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    out = []
    for f in funcs:
        if f.name.startswith("_") and not (f.name.startswith("__") and f.name.endswith("__")):
            continue
        if f in tree.body and f.name == "__getattr__":
            continue  # a module's lazy attributes (PEP 562): whatever the attribute is
        a = f.args
        items = [(x.arg, x.annotation) for x in a.posonlyargs + a.args + a.kwonlyargs]
        items += [("*" + x.arg, x.annotation) for x in (a.vararg, a.kwarg) if x is not None]
        items.append(("->", f.returns))
        for name, ann in items:
            if ann is not None and any(isinstance(n, ast.Name) and n.id == "Any" or
                                       isinstance(n, ast.Attribute) and n.attr == "Any" for n in ast.walk(ann)):
                out.append(f"{f.lineno} {f.name}: {name}: {ast.unparse(ann)}")
    return out


# Pure modules whose public signatures still say Any, with what is left to type. Empty is the goal.
ANY_ALLOWED: dict[str, str] = {}


@pytest.mark.parametrize("rel", [m for m in MODULES if not _is_edge(m)])
def test_public_signatures_of_the_core_are_typed(rel: str) -> None:
    """House style: the core's seams take and return typed records (JSON-shaped data is
    ``slurm_gpu.jsontypes.JsonValue``), never ``Any``."""
    found = public_any((PKG / rel).read_text(encoding="utf-8"))
    if rel in ANY_ALLOWED:  # still to type; an entry whose module is typed goes
        assert found, f"slurm_gpu/{rel} is typed now: remove its ANY_ALLOWED entry"
        return
    assert not found, f"Any in public signatures of slurm_gpu/{rel}:\n" + "\n".join(found)


def test_public_any_finds_it() -> None:
    src = ("from typing import Any\nimport typing\ndef f(x: Any) -> int: ...\ndef _g(x: Any): ...\n"
           "class C:\n    def m(self, y: dict[str, typing.Any]) -> None: ...\n    def _p(self, z: Any): ...\n"
           "def h(x: 'Many') -> list[int]: ...\n")
    assert public_any(src) == ["3 f: x: Any", "6 m: y: dict[str, typing.Any]"]
