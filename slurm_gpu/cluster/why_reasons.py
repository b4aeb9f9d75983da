# SPDX-License-Identifier: Apache-2.0
"""Slurm's pending reasons in plain words (pure; the one table ``slurm-gpu why`` reads).

Names are those ``scontrol show job`` prints in ``Reason=`` (22.05 to 24.11). The QOS and association
limit reasons are many (``QOSMaxGRESPerUser``, ``AssocGrpCpuLimit``, ...) and built from parts; they are
read from their parts (:func:`reason_info`) instead of listed one by one.
"""

from __future__ import annotations

import re

from slurm_gpu.plain import NamedTuple


class ReasonInfo(NamedTuple):
    kind: str  # resources, priority, qos_gpu_limit, qos_limit, qos_time_limit, assoc_limit, partition_time_limit,
    #            partition_limit, dependency, held, begin_time, nodes_unavailable, invalid, starting, other
    text: str
    per: str = ""  # for a TRES limit: user, job, account, node, group


REASONS: dict[str, tuple[str, str]] = {
    "None": ("starting", "Slurm has not evaluated the job yet (it was just submitted or the scheduler is busy)"),
    "Resources": ("resources", "the GPUs, CPUs or memory it asks for are not free now; it is next in line for them"),
    "Priority": ("priority", "jobs of higher priority are queued ahead of it for the same resources"),
    "Dependency": ("dependency", "it waits for the job(s) it depends on"),
    "DependencyNeverSatisfied": ("dependency", "a job it depends on ended in a way that can never satisfy the "
                                               "dependency: it will never start"),
    "JobHeldUser": ("held", "its owner holds it (submitted with --hold, or scontrol hold)"),
    "JobHeldAdmin": ("held", "an administrator holds it"),
    "launch failed requeued held": ("held", "its launch failed; Slurm requeued and held it"),
    "BeginTime": ("begin_time", "it asked to start later (--begin)"),
    "PartitionTimeLimit": ("partition_time_limit", "its time limit is longer than its partition allows"),
    "PartitionNodeLimit": ("partition_limit", "it asks for more or fewer nodes than its partition allows"),
    "PartitionDown": ("partition_limit", "its partition is down"),
    "PartitionInactive": ("partition_limit", "its partition is inactive"),
    "PartitionConfig": ("partition_limit", "its request does not fit the partition's configuration"),
    "ReqNodeNotAvail": ("nodes_unavailable", "nodes it needs are down, drained or reserved"),
    "NodeDown": ("nodes_unavailable", "a node it needs is down"),
    "BadConstraints": ("invalid", "its constraints (features, GPU types, counts) cannot be met by any node"),
    "Reservation": ("other", "it waits for its advanced reservation to start"),
    "Licenses": ("other", "the licenses it asks for are in use"),
    "InvalidAccount": ("invalid", "its account is not valid"),
    "InvalidQOS": ("invalid", "its QOS is not valid"),
    "QOSNotAllowed": ("invalid", "its QOS is not allowed in its partition or for its account"),
    "AccountNotAllowed": ("invalid", "its account is not allowed in its partition"),
    "QOSJobLimit": ("qos_limit", "its QOS has reached its limit of running jobs"),
    "QOSResourceLimit": ("qos_limit", "its QOS has reached a resource limit"),
    "QOSTimeLimit": ("qos_time_limit", "its QOS has reached a time limit"),
    "QOSUsageThreshold": ("qos_limit", "its QOS's usage is over the threshold"),
    "AssociationJobLimit": ("assoc_limit", "its association (user/account) has reached its job limit"),
    "AssociationResourceLimit": ("assoc_limit", "its association (user/account) has reached a resource limit"),
    "AssociationTimeLimit": ("assoc_limit", "its association (user/account) has reached a time limit"),
    "Cleaning": ("other", "it is being requeued and its previous run is still cleaning up"),
    "Prolog": ("starting", "its prolog is running"),
    "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions":
        ("nodes_unavailable", "nodes it needs are down, drained or reserved for higher-priority partitions"),
    "BurstBufferResources": ("resources", "the burst buffer it asks for is not available"),
    "FrontEndDown": ("nodes_unavailable", "no front end node is available"),
}

# 26.05: a job that a topology plugin (tree, block, ring, torus3d) cannot place pends with the specific
# ESLURM_TOPO_* error (7201-7208) instead of "Resources". Texts from src/common/slurm_errno.c at
# slurm-26-05-3-1 (commit acf2854820; notes/field-notes-2026-12.md 1.7). Not measured: the lab runs no
# topology plugin. Each is a "resources" wait, in topology words.
TOPOLOGY_REASONS: dict[str, str] = {
    "Required nodes lack available resources": "the nodes it names (-w) lack the free resources it asks for",
    "Required nodes do not fit topology": "the nodes it names (-w) are not in one topology unit (switch or block)",
    "No suitable topology unit found": "no switch or block has enough free nodes for it now",
    "No suitable topology unit found for segment": "no block has enough free nodes for one of its --segment parts",
    "Insufficient resources in topology unit": "the topology unit chosen for it lacks the free GPUs, CPUs or memory",
    "Weight-based selection could not satisfy request within topology unit":
        "node weights left too few nodes for it inside one topology unit",
    "Exceeded maximum node limit during topology allocation": "placing it in the topology would exceed its node limit",
    "No available nodes in topology": "no node of the topology is available to it",
}
REASONS.update({text: ("resources", f"{words} (a topology wait, Slurm 26.05)")
                for text, words in TOPOLOGY_REASONS.items()})

_RES = {"GRES": "GPUs (GRES)", "Cpu": "CPUs", "Mem": "memory", "Memory": "memory", "Node": "nodes",
        "Jobs": "running jobs", "Submit": "submitted jobs", "Wall": "time", "Billing": "billing units",
        "Energy": "energy", "License": "licenses", "BB": "burst buffer", "UnkTRES": "a TRES"}
_PER = {"PerUser": ("user", "per user"), "PerJob": ("job", "per job"), "PerAccount": ("account", "per account"),
        "PerNode": ("node", "per node")}
_LIMIT = re.compile(r"^(QOS|Assoc)(Grp|Max|Min)(GRES|Cpu|Memory|Mem|Node|Jobs|Submit|Wall|Billing|Energy|License|BB"
                    r"|UnkTRES)(\w*)$")


def reason_info(reason: str) -> ReasonInfo:
    """Slurm's Reason -> (kind, plain words[, per whom for a limit])."""
    head = reason.split(",")[0].strip()
    if head in REASONS:
        kind, text = REASONS[head]
        return ReasonInfo(kind, text + (f" ({reason.split(',', 1)[1].strip()})" if "," in reason else ""))
    m = _LIMIT.match(head)
    if m is None:
        return ReasonInfo("other", f"Slurm's reason {reason!r} (see `man squeue`, JOB REASON CODES)")
    scope, grp, res, rest = m.groups()
    per, words = next(((v[0], v[1]) for k, v in _PER.items() if rest.startswith(k)), ("", ""))
    if grp == "Grp":
        per, words = "group", "for the whole " + ("QOS" if scope == "QOS" else "association")
    minutes = " (as resource-minutes of running jobs)" if "RunMinutes" in rest else (
        " (as resource-minutes used)" if "Minutes" in rest else "")
    what = _RES[res]
    limit = "minimum" if grp == "Min" else "limit"
    owner = "its QOS" if scope == "QOS" else "its association (user/account)"
    if res == "Wall":
        kind = "qos_time_limit" if scope == "QOS" else "assoc_limit"
        return ReasonInfo(kind, f"its time limit is longer than {owner} allows" if "PerJob" in rest else
                          f"{owner} has reached its {limit} on {what}", "job" if "PerJob" in rest else per)
    kind = ("qos_gpu_limit" if res == "GRES" else "qos_limit") if scope == "QOS" else "assoc_limit"
    verb = "is below" if grp == "Min" else "would go over"
    return ReasonInfo(kind, f"it {verb} {owner}'s {limit} on {what} {words}{minutes}".replace("  ", " ").strip(), per)


__all__ = ["ReasonInfo", "REASONS", "reason_info"]
