# SPDX-License-Identifier: Apache-2.0
"""The pure parts of the Slurm-detection judge (slurm_gpu/lab/nvmlnode.py), the MIG facts the stand-in and
the emitter share (slurm_gpu/sharing/mig.py) and the NVML plugin installer's choices (lab/install.py).
Expected values are written from the sources named in docs/mig_mps.md "MIG facts", not from the code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_gpu.emit.gres_conf import mig_cap_minors
from slurm_gpu.lab import install, nvmlnode
from slurm_gpu.sharing.mig import gpu_instance_id, nominal_geometry

FIXTURES = Path(__file__).resolve().parents[1] / "nvml_standin" / "fixtures"
RECORDED = json.loads((FIXTURES / "mig-profiles.json").read_text())["profiles"]


def test_gpu_instance_ids_follow_the_placement_not_the_creation_order() -> None:
    # H100 walkthrough: seven 1g.10gb at placements 0..6 have ids 7..13
    assert [gpu_instance_id(1, s) for s in range(7)] == [7, 8, 9, 10, 11, 12, 13]
    # MIG user guide: two 3g.20gb on an A100: id 1 at 4:4, id 2 at 0:4; the whole GPU is 0
    assert (gpu_instance_id(4, 4), gpu_instance_id(4, 0), gpu_instance_id(8, 0)) == (1, 2, 0)
    assert [gpu_instance_id(2, s) for s in (0, 2, 4, 6)] == [3, 4, 5, 6]
    assert nvmlnode.gi_id(4, 4) == 1


def test_mig_minors_table_is_the_drivers_and_matches_the_emitters_formula() -> None:
    text = nvmlnode.mig_minors_text(2)
    lines = text.splitlines()
    assert lines[:4] == ["config 1", "monitor 2", "gpu0/gi0/access 3", "gpu0/gi0/ci0/access 4"]
    table = {k: int(v) for k, v in (ln.split() for ln in lines)}
    assert table["gpu0/gi2/access"] == 21 and table["gpu0/gi2/ci0/access"] == 22  # Slurm's gres.conf MIG example
    for g in (0, 1):
        for gi in range(15):
            for ci in range(8):
                want = (table[f"gpu{g}/gi{gi}/access"], table[f"gpu{g}/gi{gi}/ci{ci}/access"])
                assert mig_cap_minors(g, gi, ci) == nvmlnode.cap_minors(g, gi, ci) == want
    assert len(lines) == 2 + 2 * 15 * 9


@pytest.mark.parametrize("gpu,memory_gb", [("NVIDIA A100-SXM4-80GB", 80), ("NVIDIA A100-SXM4-40GB", 40),
                                           ("NVIDIA H100 80GB HBM3", 80)])
def test_nominal_geometry_is_the_recorded_placement_table(gpu: str, memory_gb: int) -> None:
    recorded = {p["name"]: p for p in RECORDED[gpu].values()}
    geo = nominal_geometry(recorded, memory_gb)
    for name, p in recorded.items():
        g = geo[name]
        assert (g.slices, g.memory_slices, g.instances, list(g.placements)) == \
            (p["slices"], p["memory_slices"], p["count"], p["placements"]), name


def test_slurm_22_05_names_mig_profiles_from_the_attributes() -> None:
    # gpu_nvml.c 22.05 _handle_mig: "_%ug.%lugb" of gpuInstanceSliceCount and roundl(memorySizeMB / 1024)
    a100 = {p["name"]: p for p in RECORDED["NVIDIA A100-SXM4-80GB"].values()}
    names = {n: nvmlnode.mig_profile_22_05(p["slices"], p["memory_mb"]) for n, p in a100.items()}
    assert names["3g.40gb"] == "3g.39gb" and names["4g.40gb"] == "4g.39gb" and names["7g.80gb"] == "7g.79gb"
    assert names["1g.10gb"] == "1g.10gb" and names["2g.20gb"] == "2g.20gb"  # 9.5 and 19.5 GiB round up
    assert nvmlnode.detected_type_name("NVIDIA A100-SXM4-80GB", names["3g.40gb"]) == "nvidia_a100_3g.39gb"
    assert nvmlnode.detected_type_name("NVIDIA A100-SXM4-80GB") == "nvidia_a100-sxm4-80gb"
    assert nvmlnode.detected_type_name("NVIDIA H100 80GB HBM3", "1g.10gb") == "nvidia_h100_80gb_hbm3_1g.10gb"


def test_place_layout_uses_the_hooks_placement() -> None:
    profiles = RECORDED["NVIDIA A100-SXM4-80GB"]
    by_index = {idx: p["name"] for idx, p in profiles.items()}
    placed = [(by_index[i], s) for i, s in nvmlnode.place_layout(profiles, ["3g.40gb", "2g.20gb", "2g.20gb"])]
    assert sorted(placed, key=lambda x: x[1]) == [("2g.20gb", 0), ("2g.20gb", 2), ("3g.40gb", 4)]
    with pytest.raises(ValueError):
        nvmlnode.place_layout(profiles, ["4g.40gb", "4g.40gb"])


def test_parse_gres_reads_slurmd_records() -> None:
    text = ("slurmd-n: Gres Name=gpu Type=(null) Count=1 Index=13 ID=7696487 File=/dev/nvidia0,/dev/nvidia-caps/"
            "nvidia-cap12,/dev/nvidia-caps/nvidia-cap13 Cores=16-31 CoreCnt=32 Links=-1,0,0\n"
            "slurmd-n: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-15 "
            "CoreCnt=32 Links=4,-1\n")
    a, b = nvmlnode.parse_gres(text)
    assert (a.type, a.files.split(",")[2], a.cores, a.links) == (None, "/dev/nvidia-caps/nvidia-cap13", "16-31",
                                                                 "-1,0,0")
    assert (b.type, b.index, b.files, b.links) == ("a100", 1, "/dev/nvidia1", "4,-1")


def test_namespace_argv_never_names_a_host_path_to_change() -> None:
    argv = nvmlnode.namespace_argv(["/usr/sbin/slurmd", "-D"], "/tmp/x/mig-minors")
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[-2:] == ["/usr/sbin/slurmd", "-D"] and "/proc/driver" in argv and "/tmp/x/mig-minors" in argv


def test_plugin_version_choice() -> None:
    assert install.upstream("22.05.8-4+deb12u3") == "22.05.8" and install.upstream("1:24.11.5-2") == "24.11.5"
    # Debian 12: contrib trails main by one security revision; same upstream -> take it
    assert install.choose_version(["22.05.8-4+deb12u2"], "22.05.8-4+deb12u3") == "22.05.8-4+deb12u2"
    assert install.choose_version(["24.11.5-2", "24.11.5-4"], "24.11.5-4") == "24.11.5-4"
    assert install.choose_version(["22.05.7-1"], "22.05.8-4+deb12u3") is None  # never another Slurm version
    assert install.contrib_sources([("http://deb.debian.org/debian", "bookworm")]) == \
        "deb http://deb.debian.org/debian bookworm contrib\n"
