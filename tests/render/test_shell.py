# SPDX-License-Identifier: Apache-2.0
"""render.shell: the one-pass placeholder fill, and the script's fixed blocks are what bash accepts."""

import re
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_gpu.render import shell


def test_fill_replaces_each_placeholder_once_and_never_rereads():
    assert shell.fill("a=@A@ b=@B@", {"A": "@B@", "B": 2}) == "a=@B@ b=2"


def test_fill_drops_a_line_that_is_only_an_empty_placeholder():
    assert shell.fill("x\n@T@\ny\n", {"T": ""}) == "x\ny\n"
    assert shell.fill("x\n@T@\ny\n", {"T": "trap f TERM"}) == "x\ntrap f TERM\ny\n"
    assert shell.fill("x @T@\n", {"T": ""}) == "x \n"  # only a line of its own is dropped


@pytest.mark.parametrize("values", [{}, {"A": 1, "B": 2}, {"a": 1}])
def test_fill_wants_exactly_the_block_placeholders(values):
    with pytest.raises(ValueError, match="placeholders"):
        shell.fill("a=@A@", values)


@pytest.mark.parametrize("block", [shell.CHECKPOINT, shell.CHECKPOINT_WAIT, shell.CHECKPOINT_BATCH_RUN,
                                   shell.BATCH_WAIT, shell.TRES_PER_TASK])
def test_fixed_blocks_are_whole_lines_of_bash(block, tmp_path):
    assert block.endswith("\n")
    names = set(re.findall(r"@([A-Z][A-Z0-9_]*)@", block))
    text = shell.fill(block, dict.fromkeys(names, "X"))
    path = tmp_path / "b.sh"
    path.write_text("f() {\n" + text + "}\n")  # a block may end the script (exit): bash -n in a function
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


@given(st.text(max_size=40))
def test_shquote_round_trips_through_bash(value):
    value = value.replace("\0", "")
    done = subprocess.run(["bash", "-c", f"printf %s {shell.shquote(value)}"], capture_output=True, timeout=30)
    assert done.stdout == value.encode("utf-8", "surrogateescape")
    assert "\r" not in shell.shquote(value) and "\x1b" not in shell.shquote(value)
