# SPDX-License-Identifier: Apache-2.0
"""Value grammars: expected values written from sbatch(1) and Slurm's parse_time.c / proc_args.c."""

import pytest

from slurm_gpu import sbatch_values as sv


@pytest.mark.parametrize(
    "text, minutes",
    [
        ("90", 90),  # MM
        ("0", 0),
        ("1:30", 2),  # MM:SS, seconds round up
        ("2:00", 2),
        ("2:00:00", 120),  # HH:MM:SS
        ("1-0", 1440),  # D-HH
        ("1-2", 1560),
        ("1-2:30", 1590),  # D-HH:MM
        ("2-00:00:01", 2881),  # D-HH:MM:SS, 1 s rounds up
        ("UNLIMITED", sv.INFINITE_MIN),
        ("infinite", sv.INFINITE_MIN),
        ("-1", sv.INFINITE_MIN),
    ],
)
def test_time(text, minutes):
    assert sv.parse_time_min(text) == minutes


@pytest.mark.parametrize("text", ["abc", "", "1:2:3:4", "1-", "-5", "1.5", "1h", "1-2-3"])
def test_time_bad(text):
    with pytest.raises(ValueError, match="accepted: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS"):
        sv.parse_time_min(text)


def test_format_time():
    assert sv.format_time_min(90) == "01:30:00"
    assert sv.format_time_min(1590) == "1-02:30:00"
    assert sv.format_time_min(sv.INFINITE_MIN) == "UNLIMITED"


@pytest.mark.parametrize(
    "text, mb",
    [("4000", 4000), ("16G", 16384), ("16g", 16384), ("16GB", 16384), ("512M", 512), ("1T", 1048576),
     ("1024K", 1), ("1025K", 2), ("0", 0)],
)
def test_mem(text, mb):
    assert sv.parse_mem_mb(text) == mb


@pytest.mark.parametrize("text", ["4X", "", "G", "-1", "1.5G", "16 G", "4B"])
def test_mem_bad(text):
    with pytest.raises(ValueError, match="accepted: N"):
        sv.parse_mem_mb(text)


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
    assert sv.parse_model_params("7B") == 7e9
    assert sv.parse_model_params("70b") == 70e9
    assert sv.parse_model_params("1.5e9") == 1.5e9
    assert sv.parse_model_params("350M") == 350e6
    with pytest.raises(ValueError, match="7B"):
        sv.parse_model_params("seven")
