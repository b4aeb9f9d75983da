# SPDX-License-Identifier: Apache-2.0
"""Hostile policy files: each gets exit code 1 (2 for usage), one line of error, no traceback, within a
few seconds and 1 GiB of address space (a real subprocess of ``slurm-gpu policy check``)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from slurm_gpu.adapters.policy_cache import load_policy_cached
from slurm_gpu.errors import PolicyError
from slurm_gpu.policy import load_policy

LIMIT_AS = 1024 ** 3
TIMEOUT_S = 20  # generous for a loaded CI machine; each case takes well under a second here
VALID = """\
version: 1
gpu_types: [{name: h100, memory_gb: 80}]
node_types: [{name: n8, topology: t.yaml, gpu_type: h100, gpus: 8, nodes: "n[1-2]"}]
partitions: [{name: batch, node_types: [n8], default: true}]
classes: [{name: all, partition: batch}]
"""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def check(path: str) -> tuple[int, str, str]:
    """Run ``slurm-gpu policy check --no-live PATH`` bounded in time and memory."""
    code = "from slurm_gpu.cli.main import main; main()"
    r = subprocess.run([sys.executable, "-c", code, "policy", "check", "--no-live", path], capture_output=True,
                       text=True, timeout=TIMEOUT_S, preexec_fn=_limits,
                       env={**os.environ, "SLURM_CONF": "/nonexistent"})
    return r.returncode, r.stdout, r.stderr


def one_error(path: str, *, rc: int = 1) -> str:
    code, out, err = check(path)
    assert code == rc, (code, out, err)
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def write(tmp_path, name: str, text: str | bytes) -> str:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return str(p)


def test_alias_bomb_is_cut_short(tmp_path) -> None:
    levels = "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
    bomb = 'version: 1\na: &a ["x","x","x","x","x","x","x","x","x"]\n' + levels  # 9**9 strings
    assert len(bomb) < 400
    line = one_error(write(tmp_path, "bomb.yaml", bomb))
    assert "yaml: found aliases that expand to more than 100000 nodes" in line


def test_big_file_is_refused_before_reading(tmp_path) -> None:
    path = tmp_path / "big.yaml"
    with open(path, "wb") as fh:
        fh.write(b"version: 1\n")
        fh.truncate(50 * 1024 * 1024)
    line = one_error(str(path))
    assert "cannot read policy file: is 52428800 bytes, over the limit of 1048576 bytes" in line


def test_fifo_device_and_directory(tmp_path) -> None:
    fifo = str(tmp_path / "fifo.yaml")
    os.mkfifo(fifo)
    assert "is a FIFO, not a regular file" in one_error(fifo)  # no writer: must not block
    assert "is a character device" in one_error("/dev/zero")
    inc = write(tmp_path, "inc.yaml", VALID + "include: [fifo.yaml]\n")
    assert "include: found" in one_error(inc) and "is a FIFO" in one_error(inc)
    dev = write(tmp_path, "dev.yaml", VALID + "include_dirs: [/dev]\ninclude: [/dev/urandom]\n")
    assert "(is a character device, not a regular file)" in one_error(dev)
    (tmp_path / "sub").mkdir()
    assert "(is a directory)" in one_error(write(tmp_path, "d.yaml", VALID + "include: [sub]\n"))
    with pytest.raises(PolicyError, match="is a directory"):
        load_policy(str(tmp_path))  # gpusub --policy=/etc: "is a directory", not "no such file"
    code, _, err = check(str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_includes_stay_under_the_policy_dir(tmp_path) -> None:
    other = tmp_path / "elsewhere"
    write(other, "hw.yaml", "version: 1\ngpu_types: [{name: a100, memory_gb: 40}]\n")
    top = write(tmp_path / "site", "p.yaml", VALID + "include: [../elsewhere/hw.yaml]\n")
    line = one_error(top)
    assert "include: found '../elsewhere/hw.yaml', outside" in line
    allowed = write(tmp_path / "site", "q.yaml", VALID + f"include_dirs: [{other}]\ninclude: [../elsewhere/hw.yaml]\n")
    assert [g.name for g in load_policy(allowed).gpu_types] == ["a100", "h100"]
    nested = write(tmp_path / "site", "r.yaml", "version: 1\ninclude_dirs: [/]\n")
    top2 = write(tmp_path / "site", "s.yaml", VALID + "include: [r.yaml]\n")
    assert "include_dirs: found include_dirs in an included file" in one_error(top2)
    assert nested


@pytest.mark.parametrize("content", [
    "root:$6$SECRETHASH:19000:0:99999:7:::\n",  # /etc/shadow: YAML reads it as a mapping key
    "SECRETHASH\n", "- SECRETHASH\n", "a: b: SECRETHASH\n", "SECRETHASH: [\n", "\x00SECRETHASH",
    "user: SECRETHASH\npassword: hunter2\n",
])
def test_a_file_that_is_not_a_policy_is_never_quoted(tmp_path, content: str) -> None:
    secret_dir = tmp_path / "secrets"
    write(secret_dir, "shadow", content)
    top = write(tmp_path, "p.yaml", VALID + f"include_dirs: [{secret_dir}]\ninclude: [{secret_dir}/shadow]\n")
    code, out, err = check(top)
    assert code == 1 and "Traceback" not in err
    assert "SECRETHASH" not in out + err and "hunter2" not in out + err
    assert len(err.splitlines()) == 1


def test_huge_numbers_deep_nesting_and_nan(tmp_path) -> None:
    big = write(tmp_path, "int.yaml", VALID.replace("gpus: 8", "gpus: " + "9" * 5000))
    assert "yaml: found a number of 5000 characters, allowed a number of at most 100 characters" in one_error(big)
    flow = write(tmp_path, "flow.yaml", "version: 1\nx: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "yaml: found invalid YAML: exceeded maximum nesting depth" in one_error(flow)
    block = "version: 1\n" + "".join(" " * i + f"k{i}:\n" for i in range(150)) + " " * 150 + "v: 1\n"
    assert "nested more than 100 deep" in one_error(write(tmp_path, "block.yaml", block))
    nan = write(tmp_path, "nan.yaml", VALID.replace("memory_gb: 80", "memory_gb: .nan"))
    assert "gpu_types.h100.memory_gb: found nan, allowed a number > 0" in one_error(nan)
    inf = write(tmp_path, "inf.yaml", VALID.replace("memory_gb: 80", "memory_gb: .inf"))
    assert "found inf, allowed a number > 0" in one_error(inf)


def test_messages_read_well(tmp_path) -> None:
    two = one_error(write(tmp_path, "two.yaml", "version: 1\n---\nversion: 1\n"))
    assert two.endswith("two.yaml:2:1: yaml: found another document (expected a single document in the stream), "
                        "allowed valid YAML")
    tab = one_error(write(tmp_path, "tab.yaml", "version: 1\nname: x\n\tother: 1\n"))
    assert "found found" not in tab and "yaml: found " in tab
    utf = one_error(write(tmp_path, "latin1.yaml", b"version: 1\nname: caf\xe9\n"))
    assert utf.endswith("latin1.yaml:2:10: encoding: found a byte 0xe9 at byte offset 20 that is not UTF-8, "
                        "allowed UTF-8 text")
    key = one_error(write(tmp_path, "key.yaml", VALID + '"bad\\nkey": 1\n'))
    assert "unknown key 'bad\\\\nkey'" in key


def test_cache_is_json_ours_and_optional(tmp_path, monkeypatch) -> None:
    path = write(tmp_path, "p.yaml", VALID)
    cache = tmp_path / "cache"
    first = load_policy_cached(path, str(cache))
    (entry,) = cache.iterdir()
    header, _, body = entry.read_bytes().partition(b"\n")  # the one cache's key line, then the data
    data = json.loads(body)  # JSON, not pickle
    assert header.startswith(b"slurm-gpu-cache ") and data["policy"]["name"] == "p"
    assert oct(entry.stat().st_mode & 0o777) == "0o600" and oct(cache.stat().st_mode & 0o777) == "0o700"
    data["policy"]["description"] = "planted"
    entry.write_bytes(header + b"\n" + json.dumps(data).encode())
    assert load_policy_cached(path, str(cache)).description == "planted"  # our own entry is trusted...
    entry.chmod(0o666)
    assert load_policy_cached(path, str(cache)) == first  # ...one that others can write is not
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/x")
    assert load_policy_cached(path) == first  # no cache, no failure
