# SPDX-License-Identifier: Apache-2.0
"""Issue 22's "root writes through a symlink": ``exporter --textfile DIR`` and ``report --html FILE`` run
as root, with symlinks planted at the target and at the names the old writers used for their temporary
files (``DIR/slurm_gpu.prom.<pid>``, beside FILE). A directory that another user (``nobody``) owns or can
write is refused with exit 2 and one line, nothing written; in root's own directory the planted symlink
is replaced, never followed. Either way the symlink's target keeps its content and its mode."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.cluster.report import report
from slurm_gpu.cluster.report_io import write_html

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hole is root's: these run as root")
CLI = str(Path(sys.executable).parent / "slurm-gpu")
NOBODY = pwd.getpwnam("nobody").pw_uid
DATA = Path(__file__).resolve().parent / "data" / "lab-22.05"  # a recorded lab: no Slurm needed


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, check=False,
                       env={**os.environ, "SLURM_CONF": "/nonexistent/slurm.conf"})  # no Slurm: none is needed
    assert "Traceback" not in r.stderr, r.stderr
    return r


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    os.chmod(tmp_path, 0o755)
    v = tmp_path / "shadow"  # stands for /etc/shadow: root's, 0600
    v.write_text("root:secret\n")
    os.chmod(v, 0o600)
    return v


def untouched(victim: Path) -> bool:
    st = victim.stat()
    return victim.read_text() == "root:secret\n" and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0


def plant(d: Path, name: str, victim: Path) -> list[str]:
    """Symlinks to the victim at ``name`` and at the temporary names of the old writers, for the pids
    that the next commands will likely get."""
    names = [name] + [f"{name}.{pid}" for pid in range(os.getpid(), os.getpid() + 400)]
    for n in names:
        (d / n).symlink_to(victim)
    return sorted(names)


def user_dir(tmp_path: Path, how: str) -> Path:
    d = tmp_path / "textfile"
    d.mkdir()
    if how == "owned by nobody":
        os.chown(d, NOBODY, NOBODY)
    elif how == "world-writable":
        os.chmod(d, 0o777)
    else:  # like /tmp
        os.chmod(d, 0o1777)
    return d


HOW = ["owned by nobody", "world-writable", "sticky world-writable"]
WHY = {"owned by nobody": f"owned by uid {NOBODY}, not root", "world-writable": "writable by other users",
       "sticky world-writable": "writable by other users"}


@pytest.mark.parametrize("how", HOW)
def test_exporter_refuses_a_directory_a_user_can_write(tmp_path: Path, victim: Path, how: str) -> None:
    d = user_dir(tmp_path, how)
    planted = plant(d, "slurm_gpu.prom", victim)
    r = cli("exporter", "--textfile", str(d), "--no-cluster")
    assert r.returncode == 2 and WHY[how] in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(os.listdir(d)) == planted and all((d / n).is_symlink() for n in planted)
    assert untouched(victim)


def test_exporter_in_roots_directory_replaces_a_planted_symlink(tmp_path: Path, victim: Path) -> None:
    d = tmp_path / "textfile"
    d.mkdir(mode=0o755)
    planted = plant(d, "slurm_gpu.prom", victim)
    r = cli("exporter", "--textfile", str(d), "--records", str(DATA))
    assert r.returncode == 0, r.stderr
    out = d / "slurm_gpu.prom"
    st = os.lstat(out)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644 and st.st_uid == 0
    assert "# TYPE " in out.read_text() and untouched(victim)
    assert sorted(os.listdir(d)) == planted  # the other planted names left alone: no temporary file stays


@pytest.mark.parametrize("how", HOW)
def test_report_html_refuses_a_directory_a_user_can_write(tmp_path: Path, victim: Path, how: str) -> None:
    d = user_dir(tmp_path, how)
    planted = plant(d, "report.html", victim) + plant(d, ".report.html", victim)
    r = cli("report", "--html", str(d / "report.html"))  # refused before sacct is asked
    assert r.returncode == 2 and WHY[how] in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(os.listdir(d)) == sorted(planted) and untouched(victim)


def test_report_html_in_roots_directory_replaces_a_planted_symlink(tmp_path: Path, victim: Path) -> None:
    d = tmp_path / "www"
    d.mkdir(mode=0o755)
    plant(d, "report.html", victim)
    write_html(str(d / "report.html"), report([], None, None, "2026-11-01T00:00:00", "2026-12-01T00:00:00"),
               report([], None, "account"))
    st = os.lstat(d / "report.html")
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
    assert (d / "report.html").read_text().lstrip().lower().startswith("<!doctype html") and untouched(victim)


def test_the_refusal_names_the_directory_above_too(tmp_path: Path, victim: Path) -> None:
    above = tmp_path / "above"
    (above / "textfile").mkdir(parents=True)
    os.chown(above, NOBODY, NOBODY)  # nobody can swap textfile/ for a symlink at any time
    r = cli("exporter", "--textfile", str(above / "textfile"), "--no-cluster")
    assert r.returncode == 2 and f"{above} is owned by uid {NOBODY}" in r.stderr
    assert os.listdir(above / "textfile") == [] and untouched(victim)
