# SPDX-License-Identifier: Apache-2.0
"""Numbers read from the environment, files, arguments and Slurm's records are ASCII digits only.

``str.isdigit()`` is true for ``"٣"`` and ``"³"``, ``re``'s ``\\d`` matches ``"٣"``, and ``int("٣") == 3``:
``LOCAL_RANK=٣`` was rank 3 in slurm-gpu-pin. Two source rules keep it fixed over the whole package
(parsed, nothing imported): no ``.isdigit()``/``.isdecimal()``/``.isnumeric()`` except through
:func:`slurm_gpu.digits.is_digits` or right after the same value's ``.isascii()``; no ``\\d`` in a
pattern (``[0-9]``). Then the sites that were wrong, each with a non-ASCII digit."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "slurm_gpu"
ARABIC_3, SUPERSCRIPT_3, FULLWIDTH_3 = "\u0663", "\u00b3", "\uff13"


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if p.name != "digits.py")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_no_unicode_digit_checks_in_the_package():
    bad = []
    for path in _modules():
        src = path.read_text(encoding="utf-8")
        tree = ast.parse(src)
        guarded: set[int] = set()  # X.isdigit() calls right after X.isascii() in one `and`
        for node in ast.walk(tree):
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                for a, b in zip(node.values, node.values[1:], strict=False):
                    if (isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "isascii"
                            and isinstance(b, ast.Call) and isinstance(b.func, ast.Attribute)
                            and ast.dump(a.func.value) == ast.dump(b.func.value)):
                        guarded.add(id(b))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("isdigit", "isdecimal", "isnumeric") and id(node) not in guarded):
                bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {ast.get_source_segment(src, node)}")
    assert not bad, "use slurm_gpu.digits.is_digits (ASCII 0-9):\n" + "\n".join(bad)


def test_no_unicode_digit_class_in_patterns():
    bad = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\\d" in node.value \
                    and id(node) not in docs:
                bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {node.value[:60]!r}")
    assert not bad, "write [0-9]: re's \\d matches every Unicode decimal digit\n" + "\n".join(bad)


def test_the_helper():
    from slurm_gpu.digits import ascii_int, is_digits

    assert is_digits("0123") and is_digits(b"42")
    for t in ("", " 1", "1 ", "+1", "-1", "1_0", "1.0", ARABIC_3, SUPERSCRIPT_3, FULLWIDTH_3, f"1{ARABIC_3}", None, 3):
        assert not is_digits(t), t
        assert ascii_int(t) is None, t
    assert ascii_int("42") == 42 and ascii_int("42", hi=41) is None and ascii_int("1" * 21) is None


@pytest.mark.parametrize("digit", [ARABIC_3, SUPERSCRIPT_3, FULLWIDTH_3])
def test_pin_refuses_a_rank_in_other_digits(digit):
    from slurm_gpu.placement.pinning import PinError, rank_from_env

    assert rank_from_env({"LOCAL_RANK": "3"})[0] == 3
    with pytest.raises(PinError, match="LOCAL_RANK"):
        rank_from_env({"LOCAL_RANK": digit})  # before: rank 3 ("٣", "３") or a ValueError traceback ("³")
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_LOCALID")}
    pin = os.path.join(os.path.dirname(sys.executable), "slurm-gpu-pin")
    r = subprocess.run([pin, "--local-world-size", digit, "true"], capture_output=True, text=True,
                       env=env | {"LOCAL_RANK": digit}, timeout=30, check=False)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr  # never fails the worker: one warning
    assert "--local-world-size" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_other_sites_refuse_other_digits():
    from slurm_gpu.cpulist import parse_cpulist
    from slurm_gpu.hostlist import expand_hostlist
    from slurm_gpu.node.health import job_of_environ, parse_kmsg
    from slurm_gpu.node.model import gpu_tokens, job_from_env
    from slurm_gpu.slurm.records import parse_parsable
    from slurm_gpu.slurm.sacct import sacct_bytes
    from slurm_gpu.slurm.sbatch.values import parse_gpu_fraction
    from slurm_gpu.units import UnitError, parse_mem_mb, parse_time_minutes

    d = ARABIC_3
    with pytest.raises(ValueError):
        parse_cpulist(f"0-{d}")
    assert gpu_tokens(f"0-{d}")[0] == () and gpu_tokens(f"{d}")[0] == ()
    assert job_from_env({"SLURM_JOB_ID": f"4{d}", "SLURM_JOB_GPUS": "0"}) is None
    assert job_of_environ(f"SLURM_JOB_ID={d}".encode()) is None
    assert parse_kmsg(f"3,1,{d},-;NVRM: Xid (PCI:0000:53:00): 79, GPU has fallen off the bus") is None
    assert parse_parsable(f"{d}2") is None
    assert sacct_bytes(f"{d}G") is None
    with pytest.raises(ValueError):
        expand_hostlist(f"n[1-{d}]")
    for parse in (parse_mem_mb, parse_time_minutes):
        with pytest.raises(UnitError):
            parse(f"{d}0")
    with pytest.raises(ValueError):
        parse_gpu_fraction(f"0.{d}")
