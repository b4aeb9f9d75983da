# SPDX-License-Identifier: Apache-2.0
"""`slurm-gpu topo` through click's CliRunner, the 80-column picture and the `show --json` contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.topology import load_topology_file
from slurm_gpu.topology.draw import render
from slurm_gpu.topology.hwloc import topology_from_hwloc
from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

HERE = Path(__file__).parent
DATA = HERE / "data"
EXAMPLES = HERE.parents[1] / "examples" / "topology"


def run(*args: str):
    return CliRunner().invoke(cli, ["topo", *args])


def all_fixture_topologies():
    for p in sorted(DATA.iterdir()):
        if p.name.endswith(".hwloc.xml"):
            yield p.name, topology_from_hwloc(p.read_text())
        elif p.suffix in (".txt", ".md") and "lscpu" not in p.name:
            yield p.name, topology_from_nvidia_smi(p.read_text())
    for p in sorted(EXAMPLES.glob("*.yaml")):
        yield p.name, load_topology_file(p)


@pytest.mark.parametrize(
    ("name", "topo"), list(all_fixture_topologies()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_render_fits_80_columns(name, topo):
    text = render(topo)
    assert max(len(line) for line in text.splitlines()) <= 80
    for g in topo.gpus:
        assert f"GPU{g.index} " in text or f"GPU{g.index}\n" in text


def test_render_h100x8_places_gpus_under_numa():
    lines = render(load_topology_file(EXAMPLES / "h100x8.yaml")).splitlines()
    socket1 = next(i for i, ln in enumerate(lines) if ln.startswith("+- Socket 1"))
    assert all(any(f"GPU{i}  " in ln for ln in lines[:socket1]) for i in range(4))
    assert all(any(f"GPU{i}  " in ln for ln in lines[socket1:]) for i in range(4, 8))
    assert "NVLink group: GPU 0-7" in lines


def test_show_json_contract_h100x8():
    out = run("show", "--json", "--from-file", str(EXAMPLES / "h100x8.yaml"))
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["sockets"] == 2
    assert data["numa_nodes"] == [{"id": 0, "cpus": "0-15"}, {"id": 1, "cpus": "16-31"}]
    assert data["gpus"][0] == {
        "index": 0,
        "numa_node": 0,
        "cpus": "0-15",
        "pci_bus_id": None,
        "links": {str(i): "NV18" for i in range(1, 8)},
    }
    assert [g["numa_node"] for g in data["gpus"]] == [0] * 4 + [1] * 4


def test_show_json_p4_nulls_and_a100_ranges():
    p4 = json.loads(
        run("show", "--json", "--from-nvidia-smi", str(DATA / "single-tesla-p4-no-numa.nvidia-smi-topo.txt")).stdout
    )
    assert p4["gpus"] == [{"index": 0, "numa_node": None, "cpus": "0-7", "pci_bus_id": None, "links": {}}]
    a100 = json.loads(
        run(
            "show",
            "--json",
            "--from-nvidia-smi",
            str(DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt"),
            "--lscpu",
            str(DATA / "dgx-a100-epyc7742.lscpu.txt"),
        ).stdout
    )
    assert a100["numa_nodes"][3] == {"id": 3, "cpus": "48-63,176-191"}
    assert a100["gpus"][0]["cpus"] == "48-63,176-191" and a100["gpus"][0]["links"]["7"] == "NV12"


def test_show_json_full_round_trips(tmp_path):
    out = run("show", "--json", "--full", "--from-hwloc", str(DATA / "nvidia-dgx2h-16xV100-nvswitch.hwloc.xml"))
    f = tmp_path / "dgx2.json"
    f.write_text(out.stdout)
    assert load_topology_file(f) == topology_from_hwloc((DATA / "nvidia-dgx2h-16xV100-nvswitch.hwloc.xml").read_text())


def test_gres_conf_and_node_conf_commands():
    out = run("gres-conf", "--from-file", str(EXAMPLES / "a100x4.yaml"), "--node-name", "a100n1", "--type", "a100")
    assert out.exit_code == 0
    assert out.stdout.splitlines() == [
        "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=16-31",
        "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=0-15",
    ]
    out = run(
        "node-conf",
        "--from-file",
        str(EXAMPLES / "a100x4.yaml"),
        "--node-name",
        "a100n1",
        "--type",
        "a100",
        "--set",
        "Features=mig",
    )
    assert out.stdout.strip().endswith("Gres=gpu:a100:4 Features=mig")
    out = run("fake-gpus-conf", "--from-file", str(EXAMPLES / "h100x8.yaml"), "--type", "h100")
    # NV18 to all 7 peers is more lanes than an H100 has (18): NVSwitch-ended, no link in Slurm's count
    assert out.stdout.splitlines()[7] == "h100|32|16-31|0,0,0,0,0,0,0,-1|/dev/nvidia7"


def test_gres_conf_numa_advice_for_nps4():
    out = run(
        "gres-conf",
        "--from-nvidia-smi",
        str(DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt"),
        "--lscpu",
        str(DATA / "dgx-a100-epyc7742.lscpu.txt"),
    )
    assert "numa_node_as_socket" in out.stdout


def test_binding_table_command():
    data = json.loads(run("binding-table", "--from-file", str(EXAMPLES / "a100x4.yaml")).stdout)
    assert data["gpus"][0]["cores"] == list(range(16, 32)) and data["gpus"][0]["socket"] == 1
    assert {"level": "NVLINK", "gpus": [0, 1, 2, 3]} in data["groups"]
    assert {"level": "NUMA", "gpus": [2, 3]} in data["groups"]


@pytest.mark.parametrize(
    "args",
    [[], ["--live", "--from-file", "x.yaml"], ["--lscpu", "x", "--from-hwloc", "y.xml"]],
    ids=["none", "two", "lscpu-without-smi"],
)
def test_usage_errors_exit_2(args):
    out = run("show", *args)
    assert out.exit_code == 2
    assert "exactly one input" in out.stderr or "--lscpu only goes" in out.stderr


def test_bad_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text((DATA / "hgx-h200-8gpu.nvidia-smi-topo.txt").read_text().replace("NV18", "NVX", 1))
    out = run("show", "--from-nvidia-smi", str(bad))
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr.startswith("Error: ") and "unknown relation 'NVX'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = run("show", "--from-file", str(tmp_path / "missing.yaml"))
    assert out.exit_code == 2 and "cannot read topology descriptor" in out.stderr


def test_descriptor_errors(tmp_path):
    d = tmp_path / "n.yaml"
    d.write_text("nvidia_smi: x.txt\nlscpu: y.txt\ncolour: red\n")
    out = run("show", "--from-file", str(d))
    assert out.exit_code == 2 and "unknown key(s) colour" in out.stderr
