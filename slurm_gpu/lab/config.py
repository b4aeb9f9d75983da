# SPDX-License-Identifier: Apache-2.0
"""Pure config generation for the lab: LabSpec + LabRuntime -> slurm.conf, gres.conf, slurmdbd.conf
text and the sacctmgr commands that create the account, users and QOS. No I/O here. The policy's
part (partitions, QOS) comes from :mod:`slurm_gpu.emit`, as for ``slurm-gpu admin emit``.

Version differences live in :data:`VERSION_TABLE` (one row per behaviour, tested per spelling).
"""

from __future__ import annotations

import os
from dataclasses import field

from slurm_gpu.emit.gres_conf import gres_names
from slurm_gpu.emit.sacctmgr import qos_add_commands, qos_limit_commands
from slurm_gpu.emit.slurm_conf import partition_line
from slurm_gpu.hostlist import compress_hostlist, expand_hostlist
from slurm_gpu.lab.spec import LabHooks, LabSpec
from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.release import PREEMPT_SIGNAL_LINE
from slurm_gpu.slurm.release import SUPPORTED as SUPPORTED_RELEASES
from slurm_gpu.slurm.scheduler_params import lab_scheduler_line

# (first version with the behaviour, key) -> value; looked up by version_value()
VERSION_TABLE: dict[str, tuple[tuple[tuple[int, int], str], ...]] = {
    # preempt_send_user_signal moved from SlurmctldParameters to PreemptParameters in 23.02;
    # 22.05 dies on the unknown key PreemptParameters (the fact: slurm_gpu.slurm.release.PREEMPT_SIGNAL_LINE).
    "preempt_signal_line": tuple((v[:2], line) for v, line in PREEMPT_SIGNAL_LINE),
    # The lab's nodes claim more CPUs (2 x 16 cores) than the machine has (2). task/affinity lays a
    # step's tasks out on the real CPUs and fails for any step that binds more cores than exist:
    # 22.05 with --cpu-bind=cores and 4 or 8 tasks ("failed to distribute tasks (bind_type:cores,...)"
    # / "Unable to layout tasks on given cpus", exit 193); 24.11 already with one 4-core task ("only 2
    # bits in avail_map"). With task/none every step size runs on both; srun warns "cluster
    # configuration lacks support for cpu binding" and SLURM_CPU_BIND carries the request unchanged.
    # Measured on 22.05.8 (this VM) and 24.11.5 (docs/lab.md "Few real CPUs").
    "task_plugin": (((0, 0), "task/none"),),
}

SUPPORTED = tuple(v[:2] for v in SUPPORTED_RELEASES)  # slurm.release.SUPPORTED: 22.05, 24.11, 26.05


def version_text(version: tuple[int, ...]) -> str:
    """(22, 5, 8) -> "22.05.8" (Slurm's own spelling)."""
    return f"{version[0]}.{version[1]:02d}" + "".join(f".{v}" for v in version[2:])


def version_value(key: str, version: tuple[int, ...]) -> str:
    """The VERSION_TABLE entry of ``key`` valid for ``version`` (the last row not newer than it)."""
    chosen = None
    for since, value in VERSION_TABLE[key]:
        if tuple(version[:2]) >= since:
            chosen = value
    assert chosen is not None
    return chosen


@record
class LabPaths(Record):
    """Where the lab keeps everything; all under one directory, never /etc/slurm."""

    lab_dir: str

    def _j(self, *p: str) -> str:
        return os.path.join(self.lab_dir, *p)

    @property
    def conf_dir(self) -> str:
        return self._j("etc")

    @property
    def slurm_conf(self) -> str:
        return self._j("etc", "slurm.conf")

    @property
    def state_dir(self) -> str:
        return self._j("state")

    @property
    def log_dir(self) -> str:
        return self._j("log")

    @property
    def pid_dir(self) -> str:
        return self._j("pids")

    @property
    def db_dir(self) -> str:
        return self._j("mysql")

    @property
    def db_socket(self) -> str:
        return self._j("mysql", "mysqld.sock")

    @property
    def jobs_dir(self) -> str:
        return self._j("jobs")

    @property
    def fake_dev_dir(self) -> str:
        return self._j("dev")

    @property
    def env_file(self) -> str:
        return self._j("env.sh")


@record
class LabRuntime(Record):
    """Facts about this machine and run that the config depends on."""

    version: tuple[int, int, int]
    hostname: str
    paths: LabPaths
    ctld_port: int = 16817
    dbd_port: int = 16819
    slurmd_port0: int = 17001
    def_mem_per_cpu_mb: int = 4000
    db_password: str = "labpass"
    hooks: LabHooks = field(default_factory=LabHooks)
    task_plugin: str | None = None  # None: the version's default from VERSION_TABLE
    # only loopback addresses (a bare container): see loopback_lines()
    loopback_only: bool = False
    plugin_dirs: tuple[str, ...] = ()  # PluginDir= (the distribution's, then the lab's gpu_nvml.so); () unset
    # the static-MIG nodes whose slurmd detects its GPUs with Slurm's gpu/nvml over the stand-in NVML
    # (gres.conf ``NodeName=<node> AutoDetect=nvml``; slurm_gpu/lab/nvmlnode.py); the others read the lines
    nvml_nodes: tuple[str, ...] = ()


def loopback_lines(rt: LabRuntime) -> list[str]:
    """With only 127.0.0.1 and ::1, glibc's getaddrinfo(NULL, port, AF_INET, AI_PASSIVE|AI_ADDRCONFIG),
    which Slurm's daemons use to listen, answers EAI_NONAME (loopback addresses do not count for
    AI_ADDRCONFIG), and slurmdbd dies ("Address family not supported by protocol"). With IPv6 enabled
    beside IPv4, Slurm asks for AF_UNSPEC, which glibc answers then (0.0.0.0, ::). Both slurm.conf and
    slurmdbd.conf need it (slurmdbd.conf(5)); clients then name 127.0.0.1, never ``localhost`` (::1 first)."""
    return ["CommunicationParameters=EnableIPv6"] if rt.loopback_only else []


def node_port(spec: LabSpec, rt: LabRuntime, node: str) -> int:
    return rt.slurmd_port0 + spec.node_names.index(node)


def _hook_lines(h: LabHooks, conf_dir: str) -> list[str]:
    lines = []
    if h.job_submit:  # the comment names the source, so that a change of source counts as a config change
        source = "compiled from the lab policy" if h.job_submit == "policy" else f"copied from {h.job_submit}"
        lines.append(f"# job_submit.lua is read from {conf_dir}/job_submit.lua ({source})")
        lines.append("JobSubmitPlugins=lua")
    for key, path in (("Prolog", h.prolog), ("Epilog", h.epilog), ("TaskProlog", h.task_prolog),
                      ("EpilogSlurmctld", h.epilog_slurmctld)):
        if path:
            lines.append(f"{key}={path}")
    if (h.prolog or h.epilog) and h.prolog_alloc:
        lines.append("PrologFlags=Alloc")
    return lines


def slurm_conf(spec: LabSpec, rt: LabRuntime) -> str:
    """The slurm.conf text for ``rt.version`` (22.05 and 24.11 are supported)."""
    p = rt.paths
    gres_tres = ",".join(["gres/gpu"] + [f"gres/gpu:{t}" for t in spec.gpu_types])
    lines = [
        f"# generated by slurm-gpu lab for Slurm {version_text(rt.version)}; do not edit",
        f"ClusterName={spec.cluster}",
        f"SlurmctldHost={rt.hostname}(127.0.0.1)",
        f"SlurmctldPort={rt.ctld_port}",
        "SlurmUser=slurm",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "# short credential lifetime: requeued jobs are eligible again after ~11 s instead of ~121 s",
        "AuthInfo=cred_expire=10",
        f"StateSaveLocation={p.state_dir}/ctld",
        f"SlurmdSpoolDir={p.state_dir}/slurmd.%n",
        f"SlurmctldPidFile={p.state_dir}/slurmctld.pid",
        f"SlurmdPidFile={p.state_dir}/slurmd.%n.pid",
        f"SlurmctldLogFile={p.log_dir}/slurmctld.log",
        f"SlurmdLogFile={p.log_dir}/slurmd.%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "MailProg=/bin/true",
        "MpiDefault=none",
        "ProctrackType=proctrack/linuxproc",
        f"TaskPlugin={rt.task_plugin or version_value('task_plugin', rt.version)}",
        "JobAcctGatherType=jobacct_gather/linux",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        f"DefMemPerCPU={rt.def_mem_per_cpu_mb}",
        "GresTypes=" + ",".join(gres_names(spec.gres_lines)),
        *([f"PluginDir={':'.join(rt.plugin_dirs)}"] if rt.plugin_dirs else []),
        "# slurmd reports the configured (emulated) topology, not this machine's real CPUs",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "SchedulerType=sched/backfill",
        lab_scheduler_line(),  # the one table (slurm/scheduler_params.py) the simulator reads back
        version_value("preempt_signal_line", rt.version),
        "PreemptType=preempt/partition_prio",
        "PreemptMode=REQUEUE",
        "JobRequeue=1",
        "KillWait=5",
        "MinJobAge=600",
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={'127.0.0.1' if rt.loopback_only else 'localhost'}",
        f"AccountingStoragePort={rt.dbd_port}",
        f"AccountingStorageTRES={gres_tres}",
        "AccountingStorageEnforce=associations,limits,qos",
    ]
    lines += _hook_lines(rt.hooks, p.conf_dir)
    lines += loopback_lines(rt)
    lines += topology_slurm_lines(spec, rt)
    for n in spec.nodes:
        lines.append(
            f"{n.conf_line} NodeHostname={rt.hostname} NodeAddr=127.0.0.1 Port={node_port(spec, rt, n.name)}"
            " State=UNKNOWN"
        )
    lines += list(spec.partition_lines) or [partition_line(part, spec.partition_nodes(part))
                                            for part in spec.partitions]
    return "\n".join(lines) + "\n"


def _has_fabric(spec: LabSpec) -> bool:
    return spec.fabric is not None and not spec.fabric.empty


def topology_slurm_lines(spec: LabSpec, rt: LabRuntime) -> list[str]:
    """TopologyPlugin= for a policy with a fabric (topology.conf releases; topology.yaml names its own)."""
    if not _has_fabric(spec):
        return []
    from slurm_gpu.emit.topology import choose_plugin, slurm_conf_lines
    from slurm_gpu.slurm.release import TOPOLOGY, since

    facts = since(TOPOLOGY, rt.version)
    return slurm_conf_lines(choose_plugin(spec.fabric, facts, spec.topology_plugin or spec.fabric.plugin), facts)


def topology_files(spec: LabSpec, rt: LabRuntime) -> dict[str, str]:
    """topology.conf or topology.yaml from the policy's fabric (slurm-gpu admin emit --what topology)."""
    if not _has_fabric(spec):
        return {}
    from slurm_gpu.emit import topology
    from slurm_gpu.slurm.release import TOPOLOGY, since

    return topology.topology_files(spec.fabric, since(TOPOLOGY, rt.version), spec.topology_plugin or spec.fabric.plugin,
                                   "the lab policy")


def gres_conf(spec: LabSpec, nvml_nodes: tuple[str, ...] = ()) -> str:
    """AutoDetect=off and the emitted lines, and ``NodeName=<node> AutoDetect=nvml`` for each node of
    ``nvml_nodes`` (per-node AutoDetect, gres.conf(5); measured with slurmd on 22.05.8 and 24.11.5): Slurm's
    gpu/nvml then detects the node's GPUs and MIG slices. A whole-GPU node keeps its emitted lines beside it:
    gres.conf(5) then double-checks each detected GPU against the line of the same Type and File (Cores=,
    Links=) and omits a GPU that differs, with an error, so the lines are checked by Slurm's detection and
    stay what slurm-gpu's readers of gres.conf (locality, the cluster view) take the GPUs' sockets from. A
    static-MIG node's own lines are left out: its slices are what the plugin detects."""
    static = {n.name for n in spec.nodes if n.mig_layout} & set(nvml_nodes)
    lines = []
    for ln in spec.gres_lines:
        head, sep, rest = ln.partition(" ")
        if not head.startswith("NodeName="):
            lines.append(ln)
            continue
        names = expand_hostlist(head.removeprefix("NodeName="))
        kept = [n for n in names if n not in static]
        if kept:
            lines.append(ln if len(kept) == len(names) else f"NodeName={compress_hostlist(kept)}{sep}{rest}")
    lines += [f"NodeName={n} AutoDetect=nvml" for n in nvml_nodes]
    header = "# generated by slurm-gpu lab from the topology files; do not edit"
    return "\n".join([header, "AutoDetect=off", *lines]) + "\n"


def slurmdbd_conf(rt: LabRuntime) -> str:
    p = rt.paths
    return (
        "\n".join(
            [
                "# generated by slurm-gpu lab; do not edit",
                "AuthType=auth/munge",
                "DbdHost=localhost",
                f"DbdPort={rt.dbd_port}",
                "SlurmUser=slurm",
                "DebugLevel=info",
                f"LogFile={p.log_dir}/slurmdbd.log",
                f"PidFile={p.state_dir}/slurmdbd.pid",
                "StorageType=accounting_storage/mysql",
                "StorageHost=localhost",
                "StorageUser=slurm",
                f"StoragePass={rt.db_password}",
                "StorageLoc=slurm_acct_db",
                *loopback_lines(rt),
            ]
        )
        + "\n"
    )


def db_bootstrap_sql(rt: LabRuntime) -> str:
    """SQL run once on the private MariaDB. The database is created up front: slurmdbd 24.11 cannot
    create it itself on MariaDB 11.8 (it reuses a failed connection handle)."""
    return (
        "CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
        f"CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '{rt.db_password}'; "
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
    )


def sacctmgr_commands(spec: LabSpec) -> list[list[str]]:
    """argv lists for ``sacctmgr -i`` that need only slurmdbd: cluster, account, QOS names, users."""
    cmds: list[list[str]] = [
        ["add", "cluster", spec.cluster],
        [
            "add",
            "account",
            ",".join((spec.account, *spec.extra_accounts)),
            "Description=slurm-gpu lab",
            "Organization=lab",
        ],
    ]
    cmds += qos_add_commands(spec.qos)
    users = ",".join(spec.users)
    cmds.append(
        [
            "add",
            "user",
            users,
            "account=" + ",".join((spec.account, *spec.extra_accounts)),
            f"DefaultAccount={spec.account}",
        ]
    )
    qos_names = list(dict.fromkeys(["normal"] + [q.name for q in spec.qos]))
    cmds.append(
        [
            "modify",
            "user",
            "where",
            f"name={users}",
            "set",
            "qos=" + ",".join(qos_names),
            f"defaultqos={spec.default_qos}",
        ]
    )
    return cmds


def sacctmgr_qos_limit_commands(spec: LabSpec) -> list[list[str]]:
    """QOS limits and preemption. They name the gres/gpu TRES, which slurmdbd only knows once
    slurmctld (AccountingStorageTRES=gres/gpu,...) has registered: run after slurmctld is up."""
    return qos_limit_commands(spec.qos)


def render_all(spec: LabSpec, rt: LabRuntime) -> dict[str, str]:
    """file name (inside conf_dir) -> text. ``accounting.txt`` records the sacctmgr commands, so that a
    change of accounts or QOS also counts as a config change."""
    acct = "\n".join("sacctmgr -i " + " ".join(c) for c in sacctmgr_commands(spec) + sacctmgr_qos_limit_commands(spec))
    return {
        "slurm.conf": slurm_conf(spec, rt),
        "gres.conf": gres_conf(spec, rt.nvml_nodes),
        "slurmdbd.conf": slurmdbd_conf(rt),
        "accounting.txt": acct + "\n",
        **topology_files(spec, rt),
    }
