# SPDX-License-Identifier: Apache-2.0
"""build.py: a cached, atomic build of the stand-in keyed by the hash of its sources."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_build_is_cached_by_source_hash(helpers, standin_lib, tmp_path):
    build = helpers.build
    first = build.build(tmp_path)
    lib = first / "libnvidia-ml.so.1"
    stamp = lib.stat().st_mtime_ns
    assert build.build(tmp_path) == first and lib.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert first.name == standin_lib.name  # same sources, same key as the session's build
    assert sorted(p.name for p in first.iterdir()) == ["libnvidia-ml.so", "libnvidia-ml.so.1"]  # no temporary left
    assert os.readlink(first / "libnvidia-ml.so") == "libnvidia-ml.so.1"  # the name Slurm 22.05 dlopen()s
    assert lib.read_bytes()[:4] == b"\x7fELF"


def test_cli_prints_the_library_and_copies_it(helpers, tmp_path):
    r = subprocess.run(
        [sys.executable, str(helpers.build.HERE / "build.py"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "out" / "libnvidia-ml.so.1")
    assert (tmp_path / "out" / "libnvidia-ml.so.1").is_file()


def test_no_compiler_is_a_clear_error(helpers, monkeypatch, tmp_path):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing in it
    assert helpers.build.compiler() is None
    with pytest.raises(helpers.build.BuildError, match="no C compiler"):
        helpers.build.build(tmp_path)
