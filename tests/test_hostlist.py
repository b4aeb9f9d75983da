# SPDX-License-Identifier: Apache-2.0
"""slurm_gpu.hostlist (an adapter over python-hostlist): cases checked against Slurm 22.05's own
``scontrol show hostnames``, bounds, and the same cases compared with the live lab's scontrol."""

from __future__ import annotations

import subprocess

import pytest

from slurm_gpu.hostlist import MAX_NAMES, HostlistError, compress_hostlist, expand_hostlist

# hostlist -> names, as `scontrol show hostnames` (Slurm 22.05.8) prints them
SLURM_ACCEPTS = {
    "rack[1-2]-n[01-03]": ["rack1-n01", "rack1-n02", "rack1-n03", "rack2-n01", "rack2-n02", "rack2-n03"],
    "n[1-3,5]": ["n1", "n2", "n3", "n5"],
    "a, b": ["a", "b"],
    "a b": ["a", "b"],
    "n[01-03]": ["n01", "n02", "n03"],
    "n[8-11]": ["n8", "n9", "n10", "n11"],
    "n[098-101]": ["n098", "n099", "n100", "n101"],
    "n[9-10]": ["n9", "n10"],
    "n[1-2][3-4]": ["n13", "n14", "n23", "n24"],
    "n1,n1": ["n1", "n1"],
    "n[1-2],x[3]": ["n1", "n2", "x3"],
    "n[5]": ["n5"],
    "h100n[1-2],a100n1": ["h100n1", "h100n2", "a100n1"],
}
# hostlists `scontrol show hostnames` calls invalid (we refuse them on every release)
SLURM_REJECTS = ["n[3-1]", "n[a-b]", "n[]", "n[1-2]]"]
# ... except these, which a later release takes (measured: 24.11.5 expands "n[1-2]]" to "n1]", "n2]");
# a stray "]" in a node name is a typo on any cluster, so we keep refusing it
LATER_SLURM_ACCEPTS = {"n[1-2]]": (24, 11, 0)}


@pytest.mark.parametrize("text", sorted(SLURM_ACCEPTS))
def test_expand_like_slurm(text: str) -> None:
    assert expand_hostlist(text) == SLURM_ACCEPTS[text]


@pytest.mark.parametrize("text", SLURM_REJECTS + ["n[1-", "n[1-2", "x[0-999999999]", "a[0-99999]," * 11 + "b",
                                                  "n[1-1000][1-1000][1-2]"])
def test_rejects_with_one_line(text: str) -> None:
    with pytest.raises(HostlistError, match=r"^bad hostlist ") as info:
        expand_hostlist(text)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_expansion_cap() -> None:
    ten = ",".join(f"r{i}n[1-100000]" for i in range(10))  # the library caps one range at 100,000
    assert len(expand_hostlist(ten)) == MAX_NAMES
    with pytest.raises(HostlistError, match=f"more than {MAX_NAMES} hosts"):
        expand_hostlist(ten + ",x")
    with pytest.raises(HostlistError, match="longer than"):
        expand_hostlist("n1," * 30000)


def test_compress() -> None:
    # as `scontrol show hostlist` (22.05) writes them; sorted, like the library
    assert compress_hostlist(["n1", "n2", "n3", "n4", "n5"]) == "n[1-5]"
    assert compress_hostlist(["h100n1", "h100n2", "a100n1"]) == "a100n1,h100n[1-2]"
    for text in SLURM_ACCEPTS:
        names = expand_hostlist(text)
        assert sorted(set(expand_hostlist(compress_hostlist(names)))) == sorted(set(names))


@pytest.mark.slurm
def test_same_as_live_scontrol(slurm_lab) -> None:
    for text, names in SLURM_ACCEPTS.items():
        out = subprocess.run(["scontrol", "show", "hostnames", text], env=slurm_lab.env(), capture_output=True,
                             text=True, timeout=30)
        assert out.stdout.split() == names == expand_hostlist(text), text
    for text in SLURM_REJECTS:
        if tuple(slurm_lab.version) >= LATER_SLURM_ACCEPTS.get(text, (99,)):
            continue
        out = subprocess.run(["scontrol", "show", "hostnames", text], env=slurm_lab.env(), capture_output=True,
                             text=True, timeout=30)
        assert "Invalid hostlist" in out.stdout + out.stderr, text
