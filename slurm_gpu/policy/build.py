# SPDX-License-Identifier: Apache-2.0
"""Cross-field checks and assembly of the Policy from validated entries.

References the classifier follows (a class's partition and QOS, a partition's node types and
default QOS, a node type's GPU type, defaults.gpu_type, isolation partitions) are errors when they
dangle; references in filter lists (allowed_qos, gpu_types, preempts, match.gpu_types) are warnings.
"""

from __future__ import annotations

import os
from typing import Any

from slurm_gpu.policy.model import (
    Autoscale,
    Block,
    Defaults,
    Fabric,
    GpuType,
    Isolation,
    JobClass,
    Match,
    NodeType,
    Partition,
    Policy,
    Price,
    Qos,
    Switch,
)
from slurm_gpu.policy.reader import absolute_path, real_path
from slurm_gpu.policy.validate import Context, Entry, did_you_mean
from slurm_gpu.units import parse_mig_profile


def _ref(ctx: Context, e: Entry, key: str, value: str | None, names: list[str], what: str,
         error: bool = True) -> bool:
    if value is None or value in names:
        return True
    msg = (f"{e.where(key)}: {e.path}.{key}: found {what} {value!r} which is not defined, "
           f"allowed one of {', '.join(names) or '(none defined)'}{did_you_mean(value, names)}")
    (ctx.problems if error else ctx.warnings).append(msg)
    return False


def _unique(ctx: Context, section: str) -> list[Entry]:
    seen: dict[str, Entry] = {}
    out = []
    for e in ctx.entries[section]:
        nm = e.values.get("name")
        if nm is None:
            continue
        if nm in seen:
            ctx.problems.append(f"{e.where('name')}: {section}.{nm}.name: found duplicate name {nm!r} "
                                f"(first defined at {seen[nm].where('name')}), allowed unique names")
            continue
        seen[nm] = e
        out.append(e)
    return out


def _check_mig_mode(ctx: Context, e: Entry, gt: Entry | None) -> None:
    """A node type's mig_mode/mig_layout: MIG only on a MIG-capable GPU type, layouts from its profiles
    within the 7 compute slices of a GPU, and a static mode declares its layout."""
    mode, layout = e.values.get("mig_mode", "none"), e.values.get("mig_layout", ())
    if mode == "none":
        if layout:
            ctx.problems.append(f"{e.where('mig_layout')}: {e.path}.mig_layout: found a layout with mig_mode none, "
                                "allowed mig_layout only with mig_mode static or dynamic")
        return
    if gt is None or not gt.values["mig_capable"]:
        ctx.problems.append(f"{e.where('mig_mode')}: {e.path}.mig_mode: found {mode!r} on a node type whose GPU "
                            "type is not mig_capable, allowed none")
        return
    if mode == "static" and not layout:
        ctx.problems.append(f"{e.where('mig_mode')}: {e.path}.mig_mode: found static without a mig_layout, "
                            "allowed static with the declared mig_layout")
    offered = gt.values["mig_profiles"]
    for p in layout:
        if p not in offered:
            ctx.problems.append(f"{e.where('mig_layout')}: {e.path}.mig_layout: found {p!r}, allowed a profile of "
                                f"GPU type {gt.values['name']} ({', '.join(offered) or 'none'})")
            return
    slices = sum(parse_mig_profile(p).slices for p in layout)
    if slices > 7:
        ctx.problems.append(f"{e.where('mig_layout')}: {e.path}.mig_layout: found {slices} compute slices, "
                            "allowed at most 7 per GPU")


def _names_of(value: Any) -> tuple[str, ...]:
    """The expanded nodes of a Hostlist field: (text, names) as converted, () when unset or bad."""
    return tuple(value[1]) if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], tuple) else ()


def _fabric_unique(ctx: Context, entries: tuple[Entry, ...], what: str) -> list[Entry]:
    seen: dict[str, Entry] = {}
    out = []
    for e in entries:
        nm = e.values.get("name")
        if nm is None:
            continue
        if nm in seen:
            ctx.problems.append(f"{e.where('name')}: {e.path}.name: found duplicate {what} name {nm!r} "
                                f"(first defined at {seen[nm].where('name')}), allowed unique names")
            continue
        seen[nm] = e
        out.append(e)
    return out


def _check_fabric(ctx: Context, policy_nodes: list[str]) -> None:
    """The fabric's cross checks: every switch or block node is one of the policy's nodes; a node sits under
    one leaf switch and in one block (in none: a warning, Slurm then never places it with the others); a
    spine's switches exist and the switches form no cycle (a leaf may sit below several spines, as in a fat
    tree); a switch has nodes or switches, not both."""
    fab = ctx.maps.get("fabric")
    if fab is None:
        return
    known = set(policy_nodes)
    switches = _fabric_unique(ctx, fab.values.get("switches") or (), "switch")
    blocks = _fabric_unique(ctx, fab.values.get("blocks") or (), "block")
    for group, what, section in ((switches, "leaf switch", "switches"), (blocks, "block", "blocks")):
        key = "nodes"
        where: dict[str, Entry] = {}
        for e in group:
            nodes = _names_of(e.values.get(key))
            unknown = [n for n in nodes if n not in known]
            if unknown:
                ctx.problems.append(f"{e.where(key)}: {e.path}.{key}: found node {unknown[0]!r} which is in no "
                                    "node_types entry, allowed the policy's nodes")
            twice = [n for n in nodes if n in where]
            if twice:
                first = where[twice[0]]
                ctx.problems.append(f"{e.where(key)}: {e.path}.{key}: found node {twice[0]!r} already in "
                                    f"{what} {first.values['name']} ({first.where(key)}), "
                                    f"allowed each node in one {what}")
            for node in nodes:
                where.setdefault(node, e)
        if any(_names_of(e.values.get(key)) for e in group):
            missing = [n for n in policy_nodes if n not in where]
            if missing:
                from slurm_gpu.hostlist import compress_hostlist

                ctx.warnings.append(f"{fab.where(section)}: "
                                    f"fabric: nodes {compress_hostlist(missing)} are in no {what}; Slurm never "
                                    "places them in one job with other nodes")
    names = [e.values["name"] for e in switches]
    children: dict[str, tuple[str, ...]] = {}
    for e in switches:
        kids = e.values.get("switches") or ()
        if kids and _names_of(e.values.get("nodes")):
            ctx.problems.append(f"{e.where('switches')}: {e.path}: found both nodes and switches, allowed nodes (a "
                                "leaf switch) or switches (a spine)")
        if not kids and not _names_of(e.values.get("nodes")):
            ctx.problems.append(f"{e.where()}: {e.path}: found neither nodes nor switches, allowed nodes (a leaf "
                                "switch) or switches (a spine)")
        children[e.values["name"]] = tuple(k for k in kids if _ref(ctx, e, "switches", k, names, "switch"))
    # a fat tree's leaf sits below every spine (several parents, as slurmibtopology writes it); no cycle
    state: dict[str, int] = {}

    def cyclic(at: str) -> bool:
        state[at] = 1
        for kid in children.get(at, ()):
            if state.get(kid) == 1 or (kid not in state and cyclic(kid)):
                return True
        state[at] = 2
        return False

    for e in switches:
        if e.values["name"] not in state and cyclic(e.values["name"]):
            ctx.problems.append(f"{e.where('switches')}: {e.path}: found a cycle of switches through "
                                f"{e.values['name']!r}, allowed a tree (each switch below its parents only)")
            break
    plugin = fab.values.get("plugin_given")
    if (plugin == "block" and not blocks) or (plugin == "tree" and not switches):
        ctx.problems.append(f"{fab.where('plugin')}: fabric.plugin: found {plugin} without fabric."
                            f"{'blocks' if plugin == 'block' else 'switches'}, allowed a plugin the fabric describes")
    sizes = fab.values.get("block_sizes") or ()
    if sizes and blocks:
        smallest = min(len(_names_of(e.values.get("nodes"))) or 1 for e in blocks)
        bad = next((s for s in sizes[1:] if s % sizes[0] or (s // sizes[0]) & (s // sizes[0] - 1)), None)
        if bad is not None or list(sizes) != sorted(set(sizes)):
            ctx.problems.append(f"{fab.where('block_sizes')}: fabric.block_sizes: found {list(sizes)}, allowed "
                                "increasing sizes, each the first times a power of two (topology.conf BlockSizes)")
        elif sizes[0] > smallest:
            ctx.warnings.append(f"{fab.where('block_sizes')}: fabric.block_sizes: the base size {sizes[0]} exceeds "
                                f"the smallest block ({smallest} nodes); Slurm before 25.05 refuses such a block")


def check_and_build(ctx: Context, source: str) -> Policy | None:
    gts = _unique(ctx, "gpu_types")
    nts = _unique(ctx, "node_types")
    parts = _unique(ctx, "partitions")
    qoss = _unique(ctx, "qos")
    classes = _unique(ctx, "classes")
    gt_names = [e.values["name"] for e in gts]
    nt_names = [e.values["name"] for e in nts]
    part_names = [e.values["name"] for e in parts]
    qos_names = [e.values["name"] for e in qoss]

    for e in gts:
        v = e.values
        if v["mig_profiles"] and not v["mig_capable"]:
            ctx.problems.append(f"{e.where('mig_profiles')}: {e.path}.mig_profiles: found MIG profiles on a GPU "
                                "type with mig_capable false, allowed mig_profiles only with mig_capable: true")
    owner: dict[str, Entry] = {}
    for e in nts:
        v = e.values
        _ref(ctx, e, "gpu_type", v["gpu_type"], gt_names, "GPU type")
        _check_mig_mode(ctx, e, next((g for g in gts if g.values["name"] == v["gpu_type"]), None))
        if v["gpu_type"] and not v["gpus"]:
            ctx.problems.append(f"{e.where('gpus')}: {e.path}.gpus: found {v['gpus']!r} with gpu_type "
                                f"{v['gpu_type']!r}, allowed an integer >= 1")
        if v["shards_per_gpu"] and (not v["gpus"] or v["mig_mode"] == "static"):
            ctx.problems.append(f"{e.where('shards_per_gpu')}: {e.path}.shards_per_gpu: found {v['shards_per_gpu']} "
                                "on a node type without whole GPUs (no gpus, or mig_mode static), allowed 0")
        if v["gpus"] and not v["gpu_type"]:
            ctx.problems.append(f"{e.where('gpus')}: {e.path}.gpus: found {v['gpus']} GPUs without a gpu_type, "
                                "allowed a gpu_type naming one of gpu_types")
        for node in (v["nodes"] or ("", ()))[1]:
            if node in owner:
                ctx.problems.append(f"{e.where('nodes')}: {e.path}.nodes: found node {node!r} already in "
                                    f"{owner[node].path} ({owner[node].where('nodes')}), "
                                    "allowed each node in one node type")
                break
            owner[node] = e
    defaults_seen = []
    for e in parts:
        v = e.values
        for nt in v["node_types"] or ():
            _ref(ctx, e, "node_types", nt, nt_names, "node type")
        nt_types = {ne.values["gpu_type"] for ne in nts if ne.values["name"] in (v["node_types"] or ())}
        for gt in v["gpu_types"]:
            if _ref(ctx, e, "gpu_types", gt, gt_names, "GPU type", error=False) and gt not in nt_types:
                ctx.warnings.append(f"{e.where('gpu_types')}: {e.path}.gpu_types: GPU type {gt!r} is listed but "
                                    "no node type of this partition carries it")
        for q in v["allowed_qos"]:
            _ref(ctx, e, "allowed_qos", q, qos_names, "QOS", error=False)
        if _ref(ctx, e, "default_qos", v["default_qos"], qos_names, "QOS") and v["default_qos"] \
                and v["allowed_qos"] and v["default_qos"] not in v["allowed_qos"]:
            ctx.problems.append(f"{e.where('default_qos')}: {e.path}.default_qos: found {v['default_qos']!r}, "
                                f"allowed one of allowed_qos ({', '.join(v['allowed_qos'])})")
        if _ref(ctx, e, "default_gpu_type", v["default_gpu_type"], gt_names, "GPU type") and v["default_gpu_type"]:
            allowed = v["gpu_types"] or tuple(sorted(t for t in nt_types if t))
            if v["default_gpu_type"] not in allowed:
                ctx.problems.append(f"{e.where('default_gpu_type')}: {e.path}.default_gpu_type: found "
                                    f"{v['default_gpu_type']!r}, allowed a GPU type of this partition "
                                    f"({', '.join(allowed) or 'none'})")
        mx, df = v["max_time_min"], v["default_time_min"]
        if mx is not None and df is not None and df > mx:
            ctx.problems.append(f"{e.where('default_time')}: {e.path}.default_time: found {df} min, "
                                f"allowed at most max_time ({mx} min)")
        if v["default"]:
            defaults_seen.append(e)
    for e in defaults_seen[1:]:
        ctx.problems.append(f"{e.where('default')}: {e.path}.default: found a second default partition "
                            f"(first: {defaults_seen[0].path}), allowed one default partition")
    for e in qoss:
        for q in e.values["preempts"]:
            _ref(ctx, e, "preempts", q, qos_names, "QOS", error=False)
    for e in classes:
        v = e.values
        part_ok = _ref(ctx, e, "partition", v["partition"], part_names, "partition")
        if _ref(ctx, e, "qos", v["qos"], qos_names, "QOS") and part_ok and v["qos"]:
            pe = next(p for p in parts if p.values["name"] == v["partition"])
            if pe.values["allowed_qos"] and v["qos"] not in pe.values["allowed_qos"]:
                ctx.problems.append(f"{e.where('qos')}: {e.path}.qos: found {v['qos']!r}, allowed a QOS of partition "
                                    f"{v['partition']} ({', '.join(pe.values['allowed_qos'])})")
        for gt in v["match"].get("gpu_types", ()):
            _ref(ctx, e, "match.gpu_types", gt, gt_names, "GPU type", error=False)
        if v.get("switches") is not None:
            from slurm_gpu.policy.classifier.limits import parse_switches

            try:
                parse_switches(v["switches"])
            except ValueError:
                ctx.problems.append(f"{e.where('switches')}: {e.path}.switches: found {v['switches']!r}, allowed "
                                    "COUNT[@MAX-WAIT] as sbatch --switches takes it, e.g. 1@30:00")
    d = ctx.maps.get("defaults")
    if d is not None:
        _ref(ctx, d, "gpu_type", d.values.get("gpu_type"), gt_names, "GPU type")
    iso = ctx.maps.get("isolation")
    if iso is not None:
        _ref(ctx, iso, "mig_partition", iso.values.get("mig_partition"), part_names, "partition")
        _ref(ctx, iso, "mps_partition", iso.values.get("mps_partition"), part_names, "partition")
        known = {p for g in gts for p in g.values["mig_profiles"]}
        for p in iso.values["mig_profiles"]:
            if p not in known:
                ctx.problems.append(f"{iso.where('mig_profiles')}: isolation.mig_profiles: found {p!r}, allowed a "
                                    f"profile of some gpu_types entry ({', '.join(sorted(known)) or 'none'})")
        lo, hi = iso.values["mps_min_share_pct"], iso.values["mps_max_share_pct"]
        if lo is not None and hi is not None and lo > hi:
            ctx.problems.append(f"{iso.where('mps_min_share_pct')}: isolation.mps_min_share_pct: found {lo}, "
                                f"allowed at most mps_max_share_pct ({hi})")
    prices = _unique(ctx, "prices")
    for e in prices:
        _ref(ctx, e, "name", e.values["name"], gt_names, "GPU type")
    _check_fabric(ctx, list(owner))
    if ctx.problems:
        return None
    return _assemble(ctx, source, gts, nts, parts, qoss, classes, prices)


def _assemble(ctx: Context, source: str, gts: list[Entry], nts: list[Entry], parts: list[Entry],
              qoss: list[Entry], classes: list[Entry], prices: list[Entry]) -> Policy:
    def node_type(e: Entry) -> NodeType:
        v = dict(e.values)
        topo = v.pop("topology")
        if not os.path.isabs(topo):
            topo = os.path.normpath(os.path.join(os.path.dirname(absolute_path(e.file)), topo))
        hostlist, nodes = v.pop("nodes")
        return NodeType(topology=topo, nodes=nodes, hostlist=hostlist, **v)

    def qos(e: Entry) -> Qos:
        return Qos(**e.values)

    def job_class(e: Entry) -> JobClass:
        v = dict(e.values)
        return JobClass(**{**v, "match": Match(**v["match"])})

    def mapped(section: str, cls: Any) -> Any:
        e = ctx.maps.get(section)
        return cls(**e.values) if e is not None else cls()

    def fabric() -> Fabric:
        e = ctx.maps.get("fabric")
        if e is None:
            return Fabric()
        v = e.values

        def hl(x: Entry) -> tuple[str, tuple[str, ...]]:
            return (x.values["nodes"][0], x.values["nodes"][1]) if x.values.get("nodes") else ("", ())

        return Fabric(
            switches=tuple(Switch(name=x.values["name"], nodes=hl(x)[1], switches=tuple(x.values["switches"]),
                                  hostlist=hl(x)[0]) for x in v.get("switches") or ()),
            blocks=tuple(Block(name=x.values["name"], nodes=hl(x)[1], hostlist=hl(x)[0])
                         for x in v.get("blocks") or ()),
            block_sizes=tuple(v.get("block_sizes") or ()), plugin_given=v.get("plugin_given"))

    name = ctx.top.get("name") or os.path.splitext(os.path.basename(source))[0]
    return Policy(
        version=1, name=name, description=ctx.top.get("description", ""),
        gpu_types=tuple(GpuType(**e.values) for e in gts),
        node_types=tuple(node_type(e) for e in nts),
        partitions=tuple(Partition(**e.values) for e in parts),
        qos=tuple(qos(e) for e in qoss),
        classes=tuple(job_class(e) for e in classes),
        defaults=mapped("defaults", Defaults), isolation=mapped("isolation", Isolation),
        messages=tuple(sorted((k, t) for k, (t, _, _) in ctx.messages.items())),
        source=real_path(source), includes=tuple(ctx.files[1:]),
        include_dirs=tuple(ctx.top.get("include_dirs", ())),
        prices=tuple(Price(**e.values) for e in prices), autoscale=mapped("autoscale", Autoscale),
        fabric=fabric(),
    )
