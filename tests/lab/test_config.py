# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the pure lab config generator, with hand-built specs (no Slurm needed)."""

from __future__ import annotations

import re

import pytest

from slurm_gpu.emit.slurm_conf import slurm_time
from slurm_gpu.lab.config import (
    LabPaths,
    LabRuntime,
    gres_conf,
    render_all,
    sacctmgr_commands,
    sacctmgr_qos_limit_commands,
    slurm_conf,
    slurmdbd_conf,
    version_text,
)
from slurm_gpu.lab.spec import LabHooks, LabNode, LabQos, LabSpec
from slurm_gpu.policy.model import Partition

V2205 = (22, 5, 8)
V2411 = (24, 11, 5)

SPEC = LabSpec(
    nodes=(
        LabNode(
            "g1",
            "big",
            "h100",
            8,
            ("h100", "mig"),
            "NodeName=g1 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:h100:8",
        ),
        LabNode(
            "g2",
            "big",
            "h100",
            8,
            ("h100",),
            "NodeName=g2 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:h100:8",
        ),
        LabNode(
            "s1",
            "small",
            "a100",
            4,
            ("a100",),
            "NodeName=s1 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:a100:4",
        ),
    ),
    gres_lines=(
        "NodeName=g[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15",
        "NodeName=g[1-2] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=16-31",
        "NodeName=s1 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31",
    ),
    partitions=(
        Partition(
            "fast",
            ("big", "small"),
            priority_tier=10,
            max_time_min=240,
            default_time_min=60,
            allowed_qos=("debug", "normal"),
        ),
        Partition("batch", ("big",), priority_tier=5, max_time_min=2 * 24 * 60, default=True),
        Partition(
            "spot", ("big", "small"), priority_tier=1, max_time_min=None, preemptible=True, grace_time_s=120
        ),
    ),
    qos=(
        LabQos("debug", priority=100, max_gpus_per_job=2, max_gpus_per_user=2, max_wall_min=30),
        LabQos("normal", priority=50),
        LabQos("high", priority=200, max_gpus_per_job=16, preempts=("spot",)),
        LabQos("spot", priority=10, max_gpus_per_user=24, preempt_mode="requeue"),
    ),
    gpu_types=("h100", "a100"),
)


def rt(version=V2205, hooks=None):
    return LabRuntime(version=version, hostname="vm", paths=LabPaths("/x/lab"), hooks=hooks or LabHooks())


def keys(text: str) -> dict[str, str]:
    """Top-level Key=Value lines of slurm.conf (NodeName/PartitionName lines excluded)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line or line.startswith(("NodeName=", "PartitionName=")):
            continue
        k, _, v = line.partition("=")
        assert k not in out, f"duplicate key {k}"
        out[k] = v
    return out


def test_2205_puts_preempt_signal_in_slurmctld_parameters():
    k = keys(slurm_conf(SPEC, rt(V2205)))
    assert k["SlurmctldParameters"] == "preempt_send_user_signal"
    assert "PreemptParameters" not in k  # 22.05 dies on this key


@pytest.mark.parametrize("version", [(23, 2, 0), V2411])
def test_2302_and_later_use_preempt_parameters(version):
    k = keys(slurm_conf(SPEC, rt(version)))
    assert k["PreemptParameters"] == "send_user_signal"
    assert "SlurmctldParameters" not in k


@pytest.mark.parametrize("version", [V2205, V2411])
def test_core_settings(version):
    k = keys(slurm_conf(SPEC, rt(version)))
    assert k["SlurmctldHost"] == "vm(127.0.0.1)"
    assert k["SlurmdParameters"] == "config_overrides"
    assert k["AuthInfo"] == "cred_expire=10"
    assert k["MailProg"] == "/bin/true"
    assert k["SelectType"] == "select/cons_tres"  # cons_res is gone in 24.11
    assert k["SelectTypeParameters"] == "CR_Core_Memory"
    assert k["ProctrackType"] == "proctrack/linuxproc"
    assert k["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert k["AccountingStorageTRES"] == "gres/gpu,gres/gpu:h100,gres/gpu:a100"
    assert k["AccountingStorageEnforce"] == "associations,limits,qos"
    assert (k["PreemptType"], k["PreemptMode"], k["JobRequeue"], k["KillWait"]) == (
        "preempt/partition_prio",
        "REQUEUE",
        "1",
        "5",
    )
    assert int(k["DefMemPerCPU"]) > 0
    assert k["GresTypes"] == "gpu"
    assert k["SlurmdSpoolDir"].endswith("%n") and k["SlurmctldLogFile"].startswith("/x/lab/")
    # most *_none plugins are gone in 24.11 (accounting_storage/none, ...): none may be named, except
    # task/none, which 24.11.5 accepts (scontrol show config: TaskPlugin = (null))
    assert not any(v.endswith("/none") for key, v in k.items() if key != "TaskPlugin")


def test_task_plugin_is_none_on_every_version():
    """task/affinity cannot lay out steps of more cores than the machine's real CPUs (docs/lab.md)."""
    assert keys(slurm_conf(SPEC, rt(V2205)))["TaskPlugin"] == "task/none"
    assert keys(slurm_conf(SPEC, rt(V2411)))["TaskPlugin"] == "task/none"
    forced = LabRuntime(version=V2411, hostname="vm", paths=LabPaths("/x/lab"), task_plugin="task/affinity")
    assert keys(slurm_conf(SPEC, forced))["TaskPlugin"] == "task/affinity"


def test_no_hooks_unless_given():
    text = slurm_conf(SPEC, rt())
    for key in ("JobSubmitPlugins", "Prolog", "Epilog", "TaskProlog", "PrologFlags"):
        assert not re.search(rf"^{key}=", text, re.M), key


def test_hooks_are_wired_when_given():
    k = keys(
        slurm_conf(
            SPEC,
            rt(
                hooks=LabHooks(
                    job_submit_lua="/p/job_submit.lua",
                    prolog="/p/prolog",
                    epilog="/p/epilog",
                    task_prolog="/p/task_prolog",
                )
            ),
        )
    )
    assert k["JobSubmitPlugins"] == "lua"
    assert (k["Prolog"], k["Epilog"], k["TaskProlog"]) == ("/p/prolog", "/p/epilog", "/p/task_prolog")


def test_one_node_line_per_node_with_own_port():
    lines = [ln for ln in slurm_conf(SPEC, rt()).splitlines() if ln.startswith("NodeName=")]
    assert [ln.split()[0] for ln in lines] == ["NodeName=g1", "NodeName=g2", "NodeName=s1"]
    ports = [re.search(r" Port=(\d+)", ln).group(1) for ln in lines]
    assert len(set(ports)) == 3
    assert all("NodeAddr=127.0.0.1" in ln and "NodeHostname=vm" in ln for ln in lines)


def test_partitions():
    lines = {ln.split()[0]: ln.split() for ln in slurm_conf(SPEC, rt()).splitlines() if ln.startswith("PartitionName=")}
    assert set(lines) == {"PartitionName=fast", "PartitionName=batch", "PartitionName=spot"}
    fast, batch, spot = lines["PartitionName=fast"], lines["PartitionName=batch"], lines["PartitionName=spot"]
    assert "Nodes=g[1-2],s1" in fast and "PriorityTier=10" in fast and "MaxTime=04:00:00" in fast
    assert "DefaultTime=01:00:00" in fast and "AllowQos=debug,normal" in fast and "PreemptMode=OFF" in fast
    assert "Default=YES" in batch and "MaxTime=2-00:00:00" in batch and "Default=YES" not in fast
    assert "PreemptMode=REQUEUE" in spot and "GraceTime=120" in spot and "MaxTime=INFINITE" in spot


def test_gres_conf_autodetect_off_and_lines_verbatim():
    text = gres_conf(SPEC)
    body = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert body[0] == "AutoDetect=off"
    assert body[1:] == list(SPEC.gres_lines)


def test_gres_conf_detecting_nodes():
    """A detecting whole-GPU node keeps its emitted lines beside ``AutoDetect=nvml`` (gres.conf(5): Slurm then
    double-checks each detected GPU against them); a detecting static-MIG node loses its part of a line,
    also of one shared with other nodes (NodeName=g[1-2]), and the others keep theirs."""
    from dataclasses import replace

    body = [ln for ln in gres_conf(SPEC, ("g2", "s1")).splitlines() if ln and not ln.startswith("#")]
    assert body == ["AutoDetect=off", *SPEC.gres_lines, "NodeName=g2 AutoDetect=nvml", "NodeName=s1 AutoDetect=nvml"]
    mig = replace(SPEC, nodes=tuple(replace(n, mig_layout=("1g.10gb",) * 7) if n.name == "g2" else n
                                    for n in SPEC.nodes))
    body = [ln for ln in gres_conf(mig, ("g2", "s1")).splitlines() if ln and not ln.startswith("#")]
    assert body == [
        "AutoDetect=off",
        "NodeName=g1 Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15",
        "NodeName=g1 Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=16-31",
        "NodeName=s1 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31",
        "NodeName=g2 AutoDetect=nvml",
        "NodeName=s1 AutoDetect=nvml",
    ]


def test_slurmdbd_conf():
    text = slurmdbd_conf(rt())
    assert "StorageType=accounting_storage/mysql" in text and "StorageLoc=slurm_acct_db" in text
    assert "DbdPort=16819" in text and "AccountingStoragePort=16819" in slurm_conf(SPEC, rt())


def test_sacctmgr_commands():
    cmds = [" ".join(c) for c in sacctmgr_commands(SPEC)]
    assert "add qos debug" in cmds and "add qos normal" not in cmds  # normal exists already
    assert "add user root,labuser account=lab DefaultAccount=lab" in cmds
    assert cmds[-1] == "modify user where name=root,labuser set qos=normal,debug,high,spot defaultqos=normal"
    limits = {c[3]: c[5:] for c in sacctmgr_qos_limit_commands(SPEC)}
    assert limits["name=debug"] == [
        "Priority=100",
        "MaxTRESPerJob=gres/gpu=2",
        "MaxTRESPerUser=gres/gpu=2",
        "MaxWall=00:30:00",
    ]
    assert limits["name=high"] == ["Priority=200", "MaxTRESPerJob=gres/gpu=16", "Preempt=spot"]
    assert limits["name=spot"] == ["Priority=10", "MaxTRESPerUser=gres/gpu=24", "PreemptMode=requeue"]


def test_extra_accounts_are_created_and_joined():
    from dataclasses import replace

    cmds = [" ".join(c) for c in sacctmgr_commands(replace(SPEC, extra_accounts=("grant-a", "grant-b")))]
    assert cmds[1].startswith("add account lab,grant-a,grant-b ")
    assert "add user root,labuser account=lab,grant-a,grant-b DefaultAccount=lab" in cmds


@pytest.mark.parametrize(
    "minutes,text",
    [(30, "00:30:00"), (240, "04:00:00"), (1440, "1-00:00:00"), (2 * 1440 + 90, "2-01:30:00"), (None, "INFINITE")],
)
def test_slurm_time(minutes, text):
    assert slurm_time(minutes) == text


def test_version_text():
    assert version_text(V2205) == "22.05.8" and version_text(V2411) == "24.11.5"


def test_render_all_names_files():
    files = render_all(SPEC, rt())
    assert set(files) == {"slurm.conf", "gres.conf", "slurmdbd.conf", "accounting.txt"}
    assert "sacctmgr -i modify qos where name=debug set Priority=100" in files["accounting.txt"]
