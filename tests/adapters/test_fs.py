# SPDX-License-Identifier: Apache-2.0
"""slurm_gpu/adapters/fs.py and adapters/cache.py against the real file system: each hostile layout
(planted symlinks, directories a user owns or can write, FIFOs, huge files) is built and tried."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from slurm_gpu import __version__
from slurm_gpu.adapters import cache as cache_mod
from slurm_gpu.adapters import fs
from slurm_gpu.checkpoint.markers import is_temp_name, marker_name

USER = 1001  # another user's uid (chown needs no account)
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="building another user's files needs root (chown)")


@pytest.fixture
def top(tmp_path: Path) -> Path:
    os.chmod(tmp_path, 0o755)
    return tmp_path


@pytest.fixture
def victim(top: Path) -> Path:
    v = top / "victim"
    v.write_text("precious\n")
    os.chmod(v, 0o600)
    return v


def untouched(victim: Path) -> bool:
    return victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600


# ---- open_dir ---------------------------------------------------------------------------------

def test_open_dir_creates_with_the_mode_whatever_the_umask(top: Path) -> None:
    old = os.umask(0o077)
    try:
        fd = fs.open_dir(str(top / "a" / "b"), create=True, mode=0o711)
    finally:
        os.umask(old)
    os.close(fd)
    assert stat.S_IMODE((top / "a" / "b").stat().st_mode) == 0o711
    assert stat.S_IMODE((top / "a").stat().st_mode) == 0o755
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fs.open_dir(str(top / "missing"))


@pytest.mark.parametrize("path", ["relative/dir", "/a/../b", "/a/\0b"])
def test_open_dir_refuses_paths_it_cannot_walk(path: str) -> None:
    with pytest.raises(fs.Untrusted):
        fs.open_dir(path)


@as_root
def test_a_users_symlink_is_refused_roots_own_is_followed(top: Path) -> None:
    (top / "real").mkdir()
    (top / "link").symlink_to(top / "real")
    fd = fs.open_dir(str(top / "link" / "sub"), create=True)  # root's link in root's directory
    os.close(fd)
    assert (top / "real" / "sub").is_dir()
    with pytest.raises(fs.Untrusted, match="symlink; refused"):
        fs.open_dir(str(top / "link"), follow_last=False)
    os.lchown(top / "link", USER, USER)
    for trust in (fs.STRICT, fs.LINKS, fs.CALLER):
        with pytest.raises(fs.Untrusted, match="symlink that root does not control") as err:
            fs.open_dir(str(top / "link" / "sub"), trust=trust)
        assert err.value.errno == errno.ELOOP


@as_root
@pytest.mark.parametrize("how, why", [("owned", f"owned by uid {USER}, not root"),
                                      ("group-writable", "writable by other users"),
                                      ("world-writable", "writable by other users")])
def test_strict_refuses_a_component_a_user_controls(top: Path, how: str, why: str) -> None:
    d = top / "d"
    (d / "inner").mkdir(parents=True)
    if how == "owned":
        os.chown(d, USER, USER)
    else:
        os.chmod(d, 0o775 if how == "group-writable" else 0o777)
    for path in (d, d / "inner"):  # the last component or one above it
        with pytest.raises(fs.Untrusted, match=why):
            fs.open_dir(str(path))
    os.close(fs.open_dir(str(d / "inner"), trust=fs.LINKS))  # root reading a user's directory: no owner rule


@as_root
def test_a_sticky_shared_directory_is_passed_through_but_nothing_is_made_in_it(top: Path) -> None:
    shared = top / "shared"
    (shared / "mine").mkdir(parents=True)
    os.chmod(shared, 0o1777)
    os.close(fs.open_dir(str(shared / "mine")))  # passed through (as /tmp)
    with pytest.raises(fs.Untrusted, match="writable by other users"):
        fs.open_dir(str(shared))  # but it is no place to write
    with pytest.raises(fs.Untrusted, match="root creates nothing in"):
        fs.open_dir(str(shared / "new"), create=True)
    assert sorted(os.listdir(shared)) == ["mine"]


@as_root
def test_uid_names_the_owner_of_the_last_component(top: Path) -> None:
    (top / "u").mkdir()
    os.chown(top / "u", USER, USER)
    os.close(fs.open_dir(str(top / "u"), trust=fs.LINKS, uid=USER))
    with pytest.raises(fs.Untrusted, match=f"owned by uid {USER}, not 0"):
        fs.open_dir(str(top / "u"), trust=fs.LINKS, uid=0)


# ---- write_atomic -------------------------------------------------------------------------------

def test_write_atomic_replaces_a_planted_symlink_and_sets_the_mode(top: Path, victim: Path) -> None:
    (top / "out.prom").symlink_to(victim)
    old = os.umask(0o077)
    try:
        path = fs.write_atomic(str(top), "out.prom", b"metrics\n", mode=0o644, sync=True)
    finally:
        os.umask(old)
    assert path == str(top / "out.prom") and untouched(victim)
    st = os.lstat(top / "out.prom")
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644 and (top / "out.prom").read_bytes() == \
        b"metrics\n"
    assert sorted(os.listdir(top)) == ["out.prom", "victim"]  # no temporary file left


def test_write_atomic_never_opens_a_planted_temporary_name(top: Path, victim: Path) -> None:
    # the old writers' names (NAME.PID, .NAME.tmp.PID): planted, they are neither followed nor touched
    for n in range(os.getpid(), os.getpid() + 50):
        (top / f"slurm_gpu.prom.{n}").symlink_to(victim)
        (top / f".slurm_gpu.prom.tmp.{n}").symlink_to(victim)
    fs.write_atomic(str(top), "slurm_gpu.prom", b"x\n")
    assert untouched(victim) and (top / "slurm_gpu.prom").read_bytes() == b"x\n"


def test_write_atomic_removes_its_temporary_file_on_failure(top: Path) -> None:
    (top / "target").mkdir()  # rename of a file onto a directory fails
    with pytest.raises(IsADirectoryError):
        fs.write_atomic(str(top), "target", b"x")
    assert os.listdir(top) == ["target"]


def test_the_temporary_name_is_the_one_the_marker_readers_skip() -> None:
    name = marker_name(3, 1)
    assert is_temp_name(fs.temp_name(name))


@pytest.mark.parametrize("name", ["", ".", "..", "a/b"])
def test_write_atomic_takes_a_name_not_a_path(top: Path, name: str) -> None:
    with pytest.raises(fs.Untrusted):
        fs.write_atomic(str(top), name, b"x")


@as_root
@pytest.mark.parametrize("how", ["owned", "world-writable", "sticky"])
def test_root_writes_nothing_in_a_directory_a_user_controls(top: Path, victim: Path, how: str) -> None:
    d = top / "d"
    d.mkdir()
    (d / "out").symlink_to(victim)
    if how == "owned":
        os.chown(d, USER, USER)
    else:
        os.chmod(d, 0o777 if how == "world-writable" else 0o1777)
    with pytest.raises(fs.Untrusted, match="refused|root writes nothing there"):
        fs.write_file(str(d / "out"), b"x")
    fd = os.open(str(d), os.O_RDONLY | os.O_DIRECTORY)
    try:  # the descriptor form checks the directory too
        with pytest.raises(fs.Untrusted, match="root writes nothing there"):
            fs.write_atomic(fd, "out", b"x", what=str(d))
    finally:
        os.close(fd)
    assert os.listdir(d) == ["out"] and (d / "out").is_symlink() and untouched(victim)


def test_create_private_makes_a_new_file_of_mode_0600(top: Path) -> None:
    path = fs.create_private(str(top), "p.", ".sh", b"#!/bin/sh\n")
    st = os.lstat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and Path(path).read_bytes() == b"#!/bin/sh\n"
    assert os.path.basename(path).startswith("p.") and path.endswith(".sh")


# ---- read_capped --------------------------------------------------------------------------------

def test_read_capped_never_blocks_on_a_fifo_and_caps_the_size(top: Path) -> None:
    os.mkfifo(top / "fifo")
    errors: list[BaseException] = []

    def read_fifo() -> None:
        try:
            fs.read_capped(str(top / "fifo"), limit=10)
        except fs.Untrusted as exc:
            errors.append(exc)

    t = threading.Thread(target=read_fifo, daemon=True)  # no writer: a blocking open would hang here
    t.start()
    t.join(10)
    assert not t.is_alive() and "not a regular file (a FIFO)" in str(errors[0])
    (top / "big").write_bytes(b"x" * 11)
    with pytest.raises(fs.Untrusted, match="larger than 10 bytes") as err:
        fs.read_capped(str(top / "big"), limit=10)
    assert err.value.errno == errno.EFBIG
    assert fs.read_capped(str(top / "big"), limit=11) == b"x" * 11
    assert fs.read_capped(str(top / "none"), limit=1, missing_ok=True) is None
    with pytest.raises(fs.Untrusted, match="a directory"):
        fs.read_capped(str(top), limit=1)


def test_read_capped_from_an_offset_reads_the_tail_and_caps_only_it(top: Path) -> None:
    # a log's tail (the lab replay reads slurmctld's log from where it stood when the replay began)
    (top / "log").write_bytes(b"old\n" * 10 + b"new\n")
    assert fs.read_capped(str(top / "log"), limit=4, offset=40) == b"new\n"
    assert fs.read_capped(str(top / "log"), limit=4, offset=44) == b""
    assert fs.read_capped(str(top / "log"), limit=4, offset=100) == b""
    with pytest.raises(fs.Untrusted, match="larger than 3 bytes"):
        fs.read_capped(str(top / "log"), limit=3, offset=40)


def test_read_capped_relative_to_a_directory_never_follows_a_symlink(top: Path, victim: Path) -> None:
    (top / "link").symlink_to(victim)
    fd = fs.open_dir(str(top))
    try:
        with pytest.raises(fs.Untrusted, match="link is a symlink; refused"):
            fs.read_capped(fd, "link", limit=100)
        assert fs.read_capped(fd, "victim", limit=100, trusted=True, private=True, one_link=True) == b"precious\n"
        os.link(victim, top / "hard")
        with pytest.raises(fs.Untrusted, match="2 hard links"):
            fs.read_capped(fd, "victim", limit=100, one_link=True)
    finally:
        os.close(fd)


@as_root
def test_read_capped_owner_checks(top: Path, victim: Path) -> None:
    os.chown(victim, USER, USER)
    with pytest.raises(fs.Untrusted, match=f"owned by uid {USER}, not root"):
        fs.read_capped(str(victim), limit=100, trusted=True)
    assert fs.read_capped(str(victim), limit=100, uid=USER) == b"precious\n"
    os.chmod(victim, 0o644)
    with pytest.raises(fs.Untrusted, match="not private"):
        fs.read_capped(str(victim), limit=100, private=True)


# ---- Log and append -----------------------------------------------------------------------------

def test_log_is_made_0640_and_never_opened_through_a_symlink(top: Path, victim: Path) -> None:
    log = fs.Log("prog", str(top / "logs" / "x.log"))
    log("hello")
    log.close()
    st = (top / "logs" / "x.log").stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert (top / "logs" / "x.log").read_text().endswith(f" prog[{os.getpid()}]: hello\n")
    (top / "logs" / "y.log").symlink_to(victim)
    log = fs.Log("prog", str(top / "logs" / "y.log"))
    assert log.fd is None and "is a symlink; refused" in log.problem
    log("x")
    log.close()
    assert untouched(victim)
    with pytest.raises(fs.Untrusted):
        fs.append_line(str(top / "logs" / "y.log"), "x\n")
    assert untouched(victim)


# ---- the per-user cache -------------------------------------------------------------------------

def test_cache_round_trip_and_the_key_line(top: Path) -> None:
    c = cache_mod.Cache(str(top / "c"))
    assert c.get("e", "k") is None and c.put("e", "k\nwith a line break", b"data")
    assert c.get("e", "k\nwith a line break") == b"data" and c.get("e", "other") is None
    entry = top / "c" / "e"
    line = entry.read_bytes().split(b"\n", 1)[0]
    assert line == f"slurm-gpu-cache {cache_mod.FORMAT} {__version__} k\\nwith a line break".encode()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600 and stat.S_IMODE((top / "c").stat().st_mode) == 0o700
    os.chmod(top / "c", 0o755)  # a directory of ours made by an older version: narrowed when written
    assert c.get("e", "k\nwith a line break") == b"data" and c.put("e", "k", b"new")
    assert stat.S_IMODE((top / "c").stat().st_mode) == 0o700 and c.get("e", "k") == b"new"
    os.chmod(entry, 0o644)
    assert c.get("e", "k") is None  # an entry others could read or write is no entry
    assert cache_mod.Cache(None).get("e", "k") is None and not cache_mod.Cache(None).put("e", "k", b"")


def test_cache_entry_that_is_a_symlink_or_a_fifo_is_a_miss(top: Path) -> None:
    c = cache_mod.Cache(str(top / "c"))
    assert c.put("real", "k", b"data")
    (top / "c" / "link").symlink_to(top / "c" / "real")
    os.mkfifo(top / "c" / "fifo")
    assert c.get("link", "k") is None and c.get("fifo", "k") is None and c.get("real", "k") == b"data"


@as_root
def test_cache_in_a_directory_of_another_user_is_never_used(top: Path) -> None:
    c = cache_mod.Cache(str(top / "c"))
    assert c.put("e", "k", b"data")
    os.chown(top / "c", USER, USER)
    assert c.get("e", "k") is None and not c.put("e", "k", b"x")
    os.chown(top / "c", 0, 0)
    os.chown(top / "c" / "e", USER, USER)
    assert c.get("e", "k") is None


def test_user_cache_dir_is_resolved_once() -> None:
    assert cache_mod.user_cache_dir({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == "/x/slurm-gpu"
    assert cache_mod.user_cache_dir({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == "/h/.cache/slurm-gpu"
    assert cache_mod.user_cache_dir({}) is None and cache_mod.user_cache_dir({"HOME": "~"}) is None
    assert cache_mod.entry_name("layout-a/b", "x") != cache_mod.entry_name("layout-a/b", "y")
    assert "/" not in cache_mod.entry_name("../../etc", "x") and not cache_mod.entry_name(".x").startswith(".")
