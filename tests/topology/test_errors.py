# SPDX-License-Identifier: Apache-2.0
"""Malformed input: a TopologyError naming the line and the problem; mangled real files never raise
anything else (hypothesis)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.hwloc import topology_from_hwloc
from slurm_gpu.topology.lscpu import parse_lscpu
from slurm_gpu.topology.nvidia_smi import parse_topo_matrix, topology_from_nvidia_smi

DATA = Path(__file__).parent / "data"
A100 = (DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt").read_text()
A100_LSCPU = (DATA / "dgx-a100-epyc7742.lscpu.txt").read_text()
H200 = (DATA / "hgx-h200-8gpu.nvidia-smi-topo.txt").read_text()
WS5 = (DATA / "workstation-5gpu-2numa.nvidia-smi-topo.txt").read_text()


def lines_without(text: str, prefix: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith(prefix))


def test_truncated_table():
    text = "\n".join(H200.splitlines()[:6])  # comment, header, GPU0-GPU3 only
    with pytest.raises(TopologyError, match=r":2: table truncated: .*GPU4, GPU5, GPU6, GPU7"):
        parse_topo_matrix(text, "h200.txt")


def test_row_shorter_than_header():
    text = A100.replace("GPU3\tNV12\tNV12\tNV12\t X \tNV12", "GPU3\tNV12\tNV12\tNV12\t X ")
    with pytest.raises(
        TopologyError,
        match=r"a100.txt:6: row GPU3 has 19 values, the header has 18 device columns and 2 affinity columns",
    ):
        parse_topo_matrix(text, "a100.txt")


def test_row_count_missing_gpu_row():
    with pytest.raises(TopologyError, match=r"rows for GPU2 are missing"):
        parse_topo_matrix(lines_without(WS5, "GPU2 "), "ws5")


def test_asymmetric_matrix():
    lines = WS5.splitlines()
    lines[3] = lines[3].replace("PHB", "NODE", 1)  # GPU1->GPU2 becomes NODE, GPU2->GPU1 stays PHB
    with pytest.raises(
        TopologyError, match=r"ws5:5: asymmetric matrix: GPU2->GPU1 is PHB but GPU1->GPU2 is NODE \(line 4\)"
    ):
        parse_topo_matrix("\n".join(lines), "ws5")


def test_affinity_outside_cpu_range():
    text = A100.replace("48-63,176-191\t3", "48-63,176-300\t3", 1)
    with pytest.raises(
        TopologyError, match=r"a100:3: GPU0 CPU Affinity 48-63,176-300 is outside the node's cpus 0-255"
    ):
        topology_from_nvidia_smi(text, parse_lscpu(A100_LSCPU), source="a100")


def test_numa_affinity_not_a_node():
    text = A100.replace("48-63,176-191\t3", "48-63,176-191\t9", 1)
    with pytest.raises(TopologyError, match=r"a100:3: GPU0 NUMA Affinity 9 is not a NUMA node"):
        topology_from_nvidia_smi(text, parse_lscpu(A100_LSCPU), source="a100")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("NV18", "NV1x", r"unknown relation 'NV1x'; expected X, NV<n>, PIX"),
        ("\t0-55,112-167\t", "\t0-55;112\t", r"bad CPU Affinity '0-55;112'"),
        ("\t0\t\tN/A", "\tzero\t\tN/A", r"bad NUMA Affinity 'zero'"),
    ],
)
def test_bad_cells(old, new, message):
    with pytest.raises(TopologyError, match=message):
        parse_topo_matrix(H200.replace(old, new, 1), "h200")


def test_no_header():
    with pytest.raises(TopologyError, match=r"no `nvidia-smi topo -m` header found"):
        parse_topo_matrix(A100_LSCPU, "lscpu.txt")


def test_x_off_diagonal():
    with pytest.raises(TopologyError, match=r"'X' must appear exactly on the diagonal"):
        parse_topo_matrix(WS5.replace("GPU1    SYS      X      PHB", "GPU1    SYS      X      X"), "ws5")


def test_lscpu_errors():
    with pytest.raises(TopologyError, match=r"lacks an integer 'Thread\(s\) per core'"):
        parse_lscpu("Architecture: x86_64\n")
    with pytest.raises(TopologyError, match=r"x:2: bad lscpu -p row '0,a,0,0'"):
        parse_lscpu("# CPU,Core,Socket,Node\n0,a,0,0\n", source="x")


def test_hwloc_errors():
    with pytest.raises(TopologyError, match=r"not well-formed XML"):
        topology_from_hwloc("<topology version='2.0'><object", "x.xml")
    with pytest.raises(TopologyError, match=r"version '3.0'; expected 2.x"):
        topology_from_hwloc("<topology version='3.0'><object type='Machine'/></topology>")


# --- hypothesis: mangled real files raise TopologyError or parse, nothing else ------------------

TEXT_FIXTURES = sorted(p for p in DATA.iterdir() if p.suffix in (".txt", ".md") and "lscpu" not in p.name)
TOKENS = ["\t", " ", "\n", "X", "NV", "SYS", "N/A", "-", ",", "GPU", "NIC", "9", "0", "|", "99999999", ""]


@st.composite
def mangled(draw, texts):
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "dropline", "dupline"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.text(max_size=6)) + text[j:]
        else:
            lines = text.splitlines()
            k = draw(st.integers(0, max(0, len(lines) - 1)))
            if lines:
                lines[k : k + 1] = [] if kind == "dropline" else [lines[k], lines[k]]
            text = "\n".join(lines)
    return text


SMI_TEXTS = [p.read_text() for p in TEXT_FIXTURES]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled(SMI_TEXTS), st.booleans())
def test_mangled_nvidia_smi_only_topology_error(text, with_lscpu):
    try:
        topology_from_nvidia_smi(text, parse_lscpu(A100_LSCPU) if with_lscpu else None)
    except TopologyError as e:
        assert str(e) and "\n" not in str(e)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled([A100_LSCPU, (Path(__file__).parents[2] / "examples/topology/2s16c.lscpu-p.txt").read_text()]))
def test_mangled_lscpu_only_topology_error(text):
    try:
        parse_lscpu(text)
    except TopologyError:
        pass


XML_TEXTS = [p.read_text() for p in sorted(DATA.glob("*.hwloc.xml"))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled(XML_TEXTS))
def test_mangled_hwloc_only_topology_error(text):
    try:
        topology_from_hwloc(text)
    except TopologyError:
        pass


def test_error_messages_name_a_line():
    text = H200.replace("NV18", "??", 1)
    with pytest.raises(TopologyError) as e:
        parse_topo_matrix(text, "h200.txt")
    assert re.match(r"h200\.txt:\d+: ", str(e.value))
