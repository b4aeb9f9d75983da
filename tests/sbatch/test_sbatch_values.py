# SPDX-License-Identifier: Apache-2.0
"""Value grammars: expected values written from sbatch(1) and Slurm's parse_time.c / proc_args.c."""

import pytest

from slurm_gpu.slurm.sbatch import values as sv

# Time, memory and parameter counts have one grammar, slurm_gpu.units (tested there); the option
# parser uses it: tests/sbatch/test_spellings.py checks the wiring (-t UNLIMITED is no limit).


def test_gres():
    G = sv.GresItem
    assert sv.parse_gres("gpu:2") == (G("gpu", None, 2),)
    assert sv.parse_gres("gpu") == (G("gpu", None, 1),)
    assert sv.parse_gres("gpu:a100:2") == (G("gpu", "a100", 2),)
    assert sv.parse_gres("gpu:a100") == (G("gpu", "a100", 1),)
    assert sv.parse_gres("gres/gpu:h100:8") == (G("gpu", "h100", 8),)
    assert sv.parse_gres("gres:gpu:1") == (G("gpu", None, 1),)
    assert sv.parse_gres("gpu:a100:1,shard:4") == (G("gpu", "a100", 1), G("shard", None, 4))
    assert sv.parse_gres("gpu:a100_3g.20gb:1") == (G("gpu", "a100_3g.20gb", 1),)
    assert sv.parse_gres("none") == ()
    for bad in ["", "gpu:", ":2", "gpu:a:b:c", "gpu::2", "gp u:1"]:
        with pytest.raises(ValueError, match="NAME\\[:TYPE\\]\\[:COUNT\\]"):
            sv.parse_gres(bad)


def test_gpus():
    C = sv.GpuCount
    assert sv.parse_gpus("4") == (C(None, 4),)
    assert sv.parse_gpus("a100:2") == (C("a100", 2),)
    assert sv.parse_gpus("gpu:a100:2") == (C("a100", 2),)
    assert sv.parse_gpus("a100:1,v100:2") == (C("a100", 1), C("v100", 2))
    for bad in ["", "x", "a100:", ":2", "a:b:c:d", "-1"]:
        with pytest.raises(ValueError, match="TYPE:N"):
            sv.parse_gpus(bad)


def test_tres():
    G = sv.GresItem
    assert sv.parse_tres("gres/gpu:2") == (G("gpu", None, 2),)
    assert sv.parse_tres("gres/gpu=2") == (G("gpu", None, 2),)
    assert sv.parse_tres("gres/gpu:a100:1,cpu:4") == (G("gpu", "a100", 1), G("cpu", None, 4))
    for bad in ["gpu", "gpu:2", "gres/gpu", "gres/gpu:x"]:
        with pytest.raises(ValueError, match="TRES:COUNT"):
            sv.parse_tres(bad)


@pytest.mark.parametrize("text", ["closest", "none", "single:1", "per_task:2", "map_gpu:0,1,2,3", "mask_gpu:0x3,0xc",
                                  "verbose,closest", "map:0*4,1*4"])
def test_gpu_bind(text):
    assert sv.parse_gpu_bind(text) == text


@pytest.mark.parametrize("text", ["", "nearest", "single", "single:x", "verbose", "map_gpu:"])
def test_gpu_bind_bad(text):
    with pytest.raises(ValueError, match="closest"):
        sv.parse_gpu_bind(text)


def test_tres_bind():
    assert sv.parse_tres_bind("gres/gpu:single:1") == "gres/gpu:single:1"
    assert sv.parse_tres_bind("gres/gpu:verbose,map:0,1+gres/nic:closest")
    for bad in ["gpu:closest", "gres/gpu", "gres/gpu:far"]:
        with pytest.raises(ValueError, match="gres/gpu:"):
            sv.parse_tres_bind(bad)


def test_array():
    assert sv.parse_array("0-3") == sv.ArraySpec((0, 1, 2, 3), None)
    assert sv.parse_array("1,3,5%2") == sv.ArraySpec((1, 3, 5), 2)
    assert sv.parse_array("0-10:5") == sv.ArraySpec((0, 5, 10), None)
    for bad in ["", "a", "3-1", "0-4:0", "1%", "1%x", "1,,2"]:
        with pytest.raises(ValueError, match="accepted: N, N-M"):
            sv.parse_array(bad)


def test_counts_nodes_nodelist_params():
    assert sv.parse_count("4", 1) == 4
    with pytest.raises(ValueError, match=">= 1"):
        sv.parse_count("0", 1)
    assert sv.parse_nodes_min("2") == 2
    assert sv.parse_nodes_min("2-4") == 2
    assert sv.parse_nodes_min("4,2,8") == 2
    with pytest.raises(ValueError, match="MIN-MAX"):
        sv.parse_nodes_min("two")
    assert sv.parse_nodelist("h100n[1-2],a100n1") == ("h100n1", "h100n2", "a100n1")
    with pytest.raises(ValueError, match="host list"):
        sv.parse_nodelist("n[1-")
    assert sv.parse_nodes_range("1-3") == (1, 3) and sv.parse_nodes_range("2") == (2, 2)
    assert sv.parse_nodes_range("4,2,8") == (2, 8)
