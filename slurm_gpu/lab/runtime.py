# SPDX-License-Identifier: Apache-2.0
"""What the lab user needs from a checkout, copied where it can read it.

- :func:`copy_policy`: the lab policy, its includes and the topology files they name, copied into the
  lab dir with their relative layout, so ``lab env``'s ``GPUSUB_POLICY`` does not dangle once the
  checkout it came from is gone (or is unreadable: a clone in ``/root``, mode 700).
- :func:`lab_gpusub`: a ``gpusub`` the lab user can run. The checkout's own when the lab user can
  run it; otherwise a world-readable copy of the package and the virtualenv's
  site-packages under ``$LAB_DIR/runtime/<checkout id>/``, started by the same interpreter.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from slurm_gpu.errors import SlurmGpuError

ENTRY_POINTS = {"gpusub": "slurm_gpu.cli.gpusub", "slurm-gpu": "slurm_gpu.cli.main",
                "slurm-gpu-pin": "slurm_gpu.placement.pin_main"}


def policy_files(policy_path: str) -> list[str]:
    """The policy file, the files it includes and the topology files its node types name (absolute)."""
    from slurm_gpu.policy import load_policy

    policy = load_policy(policy_path)
    files = [os.path.abspath(policy_path), *policy.includes]
    for nt in policy.node_types:
        files += [nt.topology, *_descriptor_inputs(nt.topology)]
    return [f for f in dict.fromkeys(files) if os.path.isfile(f)]


def _descriptor_inputs(topology: str) -> list[str]:
    """The captures a YAML topology descriptor names (``nvidia_smi:``, ``lscpu:``, ``hwloc:``), absolute."""
    if not topology.endswith((".yaml", ".yml")) or not os.path.isfile(topology):
        return []
    import yaml

    from slurm_gpu.topology.loader import DESCRIPTOR_KEYS

    try:
        with open(topology, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError):
        return []
    base = os.path.dirname(topology)
    return [os.path.join(base, v) for k, v in (doc.items() if isinstance(doc, dict) else ())
            if k in DESCRIPTOR_KEYS and isinstance(v, str) and os.path.isfile(os.path.join(base, v))]


def copy_policy(policy_path: str, dest_dir: str) -> str:
    """Copy the policy and the files it references into ``dest_dir`` (replaced), keeping their layout
    relative to their common directory; returns the copied policy's path. World-readable."""
    files = policy_files(policy_path)
    root = os.path.commonpath([os.path.dirname(f) for f in files])
    tmp = f"{dest_dir}.new.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    for f in files:
        dst = os.path.join(tmp, os.path.relpath(f, root))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(f, dst)
    _world_readable(tmp)
    shutil.rmtree(dest_dir, ignore_errors=True)
    os.replace(tmp, dest_dir)
    return os.path.join(dest_dir, os.path.relpath(os.path.abspath(policy_path), root))


def _world_readable(top: str) -> None:
    for d, _dirs, files in os.walk(top):
        os.chmod(d, 0o755)
        for f in files:
            p = os.path.join(d, f)
            os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)


def user_can_run(python: str, user: str, code: str = "import slurm_gpu.cli.gpusub") -> bool:
    """Can ``user`` start ``python`` and run ``code`` with it (by default: import this checkout)?"""
    try:
        r = subprocess.run(["runuser", "-u", user, "--", python, "-c", code],
                           capture_output=True, timeout=60, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def _sync_tree(src: Path, dst: Path) -> None:
    tmp = dst.with_name(dst.name + f".new.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "__editable__*"), symlinks=True)
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(tmp, dst)


def install_runtime(lab_dir: str, repo: Path) -> Path:
    """Copy this checkout's package, and (when changed) the virtualenv's site-packages, into
    ``$LAB_DIR/runtime/<id>``; write ``bin/<entry point>`` wrappers. Returns the bin directory."""
    python = os.path.realpath(sys.executable)
    dest = Path(lab_dir, "runtime", hashlib.sha1(str(repo).encode()).hexdigest()[:12])
    site = Path(sysconfig.get_paths()["purelib"])
    stamp = dest / "site-packages.stamp"
    key = f"{site}:{site.stat().st_mtime_ns}\n"
    dest.mkdir(parents=True, exist_ok=True)
    if not stamp.exists() or stamp.read_text() != key:
        _sync_tree(site, dest / "site-packages")
        stamp.write_text(key)
    (dest / "src").mkdir(exist_ok=True)
    _sync_tree(repo / "slurm_gpu", dest / "src" / "slurm_gpu")
    bindir = dest / "bin"
    bindir.mkdir(exist_ok=True)
    for name, module in ENTRY_POINTS.items():
        (bindir / name).write_text(
            f"#!{python} -s\n# generated by slurm-gpu lab: this checkout ({repo}) for users who cannot read it\n"
            f"import site, sys\nsite.addsitedir({str(dest / 'site-packages')!r})\n"
            f"sys.path.insert(0, {str(dest / 'src')!r})\n"
            f"from {module} import main\nsys.exit(main())\n")
        (bindir / name).chmod(0o755)
    _world_readable(str(dest))
    os.chmod(Path(lab_dir, "runtime"), 0o755)
    return bindir


_CHOSEN: dict[tuple[str, str], str] = {}


def lab_gpusub(lab_dir: str, user: str, repo: Path) -> str:
    """Path of a gpusub ``user`` can run: this environment's, else the lab's copy (made here; needs root)."""
    key = (lab_dir, user)
    if key not in _CHOSEN or not os.path.exists(_CHOSEN[key]):  # `lab down` removes the copy
        own = os.path.join(sys.prefix, "bin", "gpusub")
        if os.path.exists(own) and user_can_run(sys.executable, user):
            _CHOSEN[key] = own
        else:
            if os.geteuid() != 0:
                raise SlurmGpuError(f"the lab user {user} cannot run {own}, and only root can install the lab's copy")
            python = os.path.realpath(sys.executable)
            if not user_can_run(python, user, ""):
                raise SlurmGpuError(f"the lab user {user} cannot run the interpreter {python}; recreate the venv "
                                    "with a system python (`make clean-venv venv` uses /usr/bin/python3)")
            _CHOSEN[key] = str(install_runtime(lab_dir, repo) / "gpusub")
    return _CHOSEN[key]
