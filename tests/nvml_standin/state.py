# SPDX-License-Identifier: Apache-2.0
"""Recorded node (JSON fixture or a real ``nvidia-smi -q -x`` capture) -> the stand-in's state file.

The state file is the line-based ``key=value`` format that the C library reads and rewrites
(docs/nvml_standin.md). ``render()`` writes it from a fixture dict; ``read()`` parses one back into
plain dicts so tests can look at what the library wrote without going through NVML.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SWITCHES = ("driver_not_loaded", "no_permission", "gpu_busy")
COMPUTE_MODES = {"Default": 0, "Prohibited": 2, "Exclusive_Process": 3}


def load_fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def fixture_from_smi_xml(xml_text: str, cpus: dict[int, str] | None = None) -> dict[str, Any]:
    """A fixture from a verbatim ``nvidia-smi -q -x`` capture (the values the stand-in then serves)."""
    root = ET.fromstring(xml_text)
    cuda = root.findtext("cuda_version", "0.0").split(".")

    def mib(text: str | None) -> int:
        return int((text or "0").split()[0])

    def flag(text: str | None) -> int:
        return int(text in ("Enabled", "Yes"))

    def number(text: str | None) -> int:
        return int(text) if text and text.isdigit() else 0

    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        f = g.findtext
        power = (f("gpu_power_readings/average_power_draw") or "N/A").split()[0]
        remap = g.find("remapped_rows")
        gpus.append(
            {
                "name": f("product_name"),
                "uuid": f("uuid"),
                "serial": f("serial") if f("serial") not in (None, "N/A") else "",
                "bus_id": f("pci/pci_bus_id"),
                "pci_device_id": "0x" + (f("pci/pci_device_id") or "0"),
                "pci_subsystem_id": "0x" + (f("pci/pci_sub_system_id") or "0"),
                "minor": number(f("minor_number")),
                "memory_total_mib": mib(f("fb_memory_usage/total")),
                "memory_reserved_mib": mib(f("fb_memory_usage/reserved")),
                "memory_used_mib": mib(f("fb_memory_usage/used")),
                "util_gpu": mib(f("utilization/gpu_util")),
                "util_memory": mib(f("utilization/memory_util")),
                "power_mw": round(float(power) * 1000) if power != "N/A" else 0,
                "cpus": (cpus or {}).get(i, ""),
                "compute_mode": COMPUTE_MODES.get(f("compute_mode") or "", 0),
                "persistence": flag(f("persistence_mode")),
                "accounting": flag(f("accounting_mode")),
                "ecc": flag(f("ecc_mode/current_ecc")),
                "ecc_volatile_corrected": number(f("ecc_errors/volatile/dram_correctable")),
                "ecc_volatile_uncorrected": number(f("ecc_errors/volatile/dram_uncorrectable")),
                "ecc_aggregate_corrected": number(f("ecc_errors/aggregate/dram_correctable")),
                "ecc_aggregate_uncorrected": number(f("ecc_errors/aggregate/dram_uncorrectable")),
                "retired_pages": None,  # N/A on Ampere and later (row remapping instead)
                "remapped_rows": None
                if remap is None
                else [
                    number(remap.findtext("remapped_row_corr")),
                    number(remap.findtext("remapped_row_unc")),
                    flag(remap.findtext("remapped_row_pending")),
                    flag(remap.findtext("remapped_row_failure")),
                ],
                "mig_capable": int(f("mig_mode/current_mig") not in (None, "N/A")),
                "mig_current": flag(f("mig_mode/current_mig")),
                "mig_pending": flag(f("mig_mode/pending_mig")),
            }
        )
    return {
        "driver_version": root.findtext("driver_version"),
        "cuda_version": int(cuda[0]) * 1000 + int(cuda[1]) * 10,
        "mig_profiles": {},
        "gpus": gpus,
    }


def _gpu_lines(i: int, g: dict[str, Any], epoch_ms: int) -> list[str]:
    pages = g.get("retired_pages")
    if pages is None:
        pages_text = "na"
    else:
        pages_text = "sbe={};dbe={};pending={}".format(
            ",".join(hex(a) for a in pages.get("sbe", [])),
            ",".join(hex(a) for a in pages.get("dbe", [])),
            int(pages.get("pending", 0)),
        )
    remap = g.get("remapped_rows")
    fields: dict[str, Any] = {
        "name": g["name"],
        "uuid": g["uuid"],
        "serial": g.get("serial", ""),
        # nvmlDeviceGetGpuFabricInfo: {"cluster_uuid", "clique_id", "state"} recorded per GPU; none: NOT_SUPPORTED
        "fabric": "" if not g.get("fabric") else "{cluster_uuid}:{clique_id}:{state}".format(**g["fabric"]),
        "bus_id": g["bus_id"],
        "pci_device_id": g.get("pci_device_id", "0"),
        "pci_subsystem_id": g.get("pci_subsystem_id", "0"),
        "minor": g.get("minor", i),
        "memory_total_mib": g["memory_total_mib"],
        "memory_reserved_mib": g.get("memory_reserved_mib", 0),
        "memory_used_mib": g.get("memory_used_mib", 0),
        "util_gpu": g.get("util_gpu", 0),
        "util_memory": g.get("util_memory", 0),
        "energy_mj": g.get("energy_mj", 0),
        "power_mw": g.get("power_mw", 0),
        "energy_epoch_ms": g.get("energy_epoch_ms", epoch_ms),
        "cpus": g.get("cpus", ""),
        "compute_mode": g.get("compute_mode", 0),
        "persistence": g.get("persistence", 1),
        "accounting": g.get("accounting", 0),
        "ecc": g.get("ecc", 1),
        "lost": g.get("lost", 0),
        "ecc_volatile_corrected": g.get("ecc_volatile_corrected", 0),
        "ecc_volatile_uncorrected": g.get("ecc_volatile_uncorrected", 0),
        "ecc_aggregate_corrected": g.get("ecc_aggregate_corrected", 0),
        "ecc_aggregate_uncorrected": g.get("ecc_aggregate_uncorrected", 0),
        "retired_pages": pages_text,
        "remapped_rows": "na" if remap is None else ":".join(str(int(v)) for v in remap),
        "mig_capable": g.get("mig_capable", 0),
        "mig_current": g.get("mig_current", 0),
        "mig_pending": g.get("mig_pending", 0),
        "processes": " ".join(
            f"{p['pid']}:{p.get('used_mib', 0)}:{p.get('gi', 0)}:{p.get('ci', 0)}" for p in g.get("processes", [])
        ),
        "accounted": " ".join(
            "{pid}:{gpu_util}:{mem_util}:{max_mem_mib}:{time_ms}:{start_us}".format(**a) for a in g.get("accounted", [])
        ),
    }
    links = g.get("nvlinks")  # remote PCI bus id per NVLink lane (None: lane down); absent/None: no NVLink
    fields["nvlinks"] = "na" if not links else " ".join(b or "-" for b in links)
    clocks = g.get("clocks")  # {"<mem MHz>": [gfx MHz, ...]} (nvidia-smi -q -d SUPPORTED_CLOCKS)
    fields["clocks"] = "na" if not clocks else " ".join(
        f"{m}:{'/'.join(str(c) for c in gfx)}" for m, gfx in clocks.items())
    app = g.get("app_clocks") or [0, 0]
    fields["app_clocks"] = f"{app[0]}:{app[1]}"
    default = g.get("default_app_clocks") or app
    fields["default_app_clocks"] = f"{default[0]}:{default[1]}"
    lines = [f"gpu.{i}.{k}={v}" for k, v in fields.items()]
    # MIG instances: {"gi": id, "profile": index, "start": slice, "cis": [{ci, profile, uuid}]}
    for inst in g.get("mig_instances", []):
        lines.append(f"gpu.{i}.gi.{inst['gi']}={inst['profile']}:{inst['start']}")
        lines += [f"gpu.{i}.ci.{inst['gi']}.{c['ci']}={c.get('profile', 0)}:{c['uuid']}" for c in inst.get("cis", [])]
    return lines


def render(fixture: dict[str, Any], *, fail: tuple[str, ...] = (), hang: str = "", root_only: bool = False) -> str:
    """The state file text for ``fixture`` (optionally with failure switches already on)."""
    driver = fixture["driver_version"]
    cuda = int(fixture.get("cuda_version", 0))
    lines = [
        "format=1",
        f"# from: {fixture.get('source', 'a recorded node')[:200]}",
        f"driver_version={driver}",
        f"nvml_version={fixture.get('nvml_version', f'{cuda // 1000}.{driver}')}",
        f"cuda_version={cuda}",
        f"fail={','.join(fail)}",
        f"hang={hang}",
        f"root_only={int(root_only)}",
        "mig_serial=0",
    ]
    for index, p in sorted(fixture.get("mig_profiles", {}).items(), key=lambda kv: int(kv[0])):
        placements = "/".join(str(s) for s in p["placements"])
        lines.append(
            f"profile.{index}={p['id']}:{p['name']}:{p['slices']}:{p['count']}:{p['sm']}:{p['ce']}:{p['dec']}:"
            f"{p['enc']}:{p['jpeg']}:{p['ofa']}:{p['memory_mb']}:{p['memory_slices']}:{placements}"
        )
    lines.append(f"gpus={len(fixture['gpus'])}")
    epoch_ms = int(time.time() * 1000)
    for i, g in enumerate(fixture["gpus"]):
        lines += _gpu_lines(i, g, epoch_ms)
    lines.append("end=1")
    return "\n".join(lines) + "\n"


def write(path: Path, fixture: dict[str, Any], **kw: Any) -> Path:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(render(fixture, **kw))
    tmp.replace(path)
    return path


def read(path: Path) -> dict[str, Any]:
    """Parse a state file into ``{"top": {...}, "gpus": [{field: value}, ...]}`` (values as text)."""
    top: dict[str, str] = {}
    gpus: dict[int, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        if key.startswith("gpu."):
            _, index, field = key.split(".", 2)
            gpus.setdefault(int(index), {})[field] = value
        else:
            top[key] = value
    return {"top": top, "gpus": [gpus[i] for i in sorted(gpus)]}
