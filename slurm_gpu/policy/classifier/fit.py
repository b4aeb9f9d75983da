# SPDX-License-Identifier: Apache-2.0
"""What the nodes can serve: the candidate nodes of a request (partition, ``-w``, ``-x``, ``-C``), the GPU
types that fit them (type resolution), and step ``check_nodes`` (the one verdict: the request against
what the nodes really offer, as ``sbatch --test-only`` checks it).

The nodes come from the state's :class:`~slurm_gpu.policy.nodes.Inventory` (the policy's nodes as admin
emit renders them, or the live cluster's records). The Lua mirror is ``check_nodes`` / ``type_fits`` in
job_submit/engine.lua, over the policy's nodes.
"""

from __future__ import annotations

from slurm_gpu.digits import is_digits
from slurm_gpu.policy.classifier.state import State
from slurm_gpu.policy.constraint import Term, features_of, fits, has_count, holds, parse_constraint
from slurm_gpu.policy.model import Partition
from slurm_gpu.policy.nodes import NodeOffer, describe
from slurm_gpu.request import JobRequest


def constraint_term(st: State) -> Term | None:
    """The request's ``--constraint``, parsed; None without one or when it cannot be read (then Slurm,
    not the classifier, judges it)."""
    text = st.request.constraint
    if not text:
        return None
    try:
        return parse_constraint(text)
    except ValueError:
        return None


def candidates(st: State, part: Partition) -> tuple[NodeOffer, ...]:
    """The partition's nodes the job may use: without the ``-x`` hosts; with ``-w``, only those hosts."""
    r = st.request
    nodes = [n for n in st.inventory.in_partition(part.name) if n.name not in r.exclude]
    if r.nodelist:
        nodes = [n for n in nodes if n.name in r.nodelist]
    return tuple(nodes)


def _constraint_ok(term: Term | None, nodes: tuple[NodeOffer, ...], every: bool) -> bool:
    if term is None:
        return bool(nodes)
    if every:  # -w: each named node is in the allocation, so each must meet it
        return bool(nodes) and all(holds(term, n.features) for n in nodes)
    return fits(term, [n.features for n in nodes])


def type_fits(st: State, part: Partition, gpu_type: str) -> bool:
    """Whether GPUs of ``gpu_type`` can be had on nodes that meet the request's -C, -w, -x and partition, on
    as many nodes as the job needs (``-N``, ``-w``'s hosts), each with the job's GPUs per node: a 2-node job
    is not typed to a type that one node of the partition holds (issue 19's rule: the choice the cluster
    can serve)."""
    r = st.request
    per_node = max(r.gpus_per_node or 1, 1)
    nodes = tuple(n for n in candidates(st, part) if n.count("gpu", gpu_type) >= per_node)
    if len(nodes) < max(len(set(r.nodelist)), r.node_min or 1):
        return False
    c = r.cpus_per_task or 1
    if r.ntasks and c > 1 and nodes and all(n.cpus for n in nodes):  # the cluster's CPU totals: -n 3 -c 16
        if sum((n.cpus or 0) // c for n in nodes) < r.ntasks:  # on 32-CPU nodes needs 2 of them
            return False
    return _constraint_ok(constraint_term(st), nodes, bool(r.nodelist))


def _needs(st: State) -> list[tuple[str, str | None, int]]:
    """What each node of the job must hold: (gres, type or None, count)."""
    r = st.request
    out: list[tuple[str, str | None, int]] = []
    for item in (st.gres or "").split(","):
        bits = item.split(":")
        if len(bits) == 3 and is_digits(bits[2]):
            out.append((bits[0], bits[1], int(bits[2])))
        elif len(bits) == 2 and is_digits(bits[1]):
            out.append((bits[0], None, int(bits[1])))
    if r.shards and not any(g == "shard" for g, _t, _c in out):
        out.append(("shard", None, r.shards))
    if r.mps and not any(g == "mps" for g, _t, _c in out):
        out.append(("mps", None, r.mps))
    return out


def _serves(node: NodeOffer, needs: list[tuple[str, str | None, int]], cpus: int | None, mem_mb: int | None) -> bool:
    if any(node.count(g, t) < c for g, t, c in needs):
        return False
    if cpus and node.cpus is not None and cpus > node.cpus:
        return False
    return not (mem_mb and node.memory_mb is not None and mem_mb > node.memory_mb)


def _need_text(needs: list[tuple[str, str | None, int]]) -> str:
    return ",".join(f"{g}:{t}:{c}" if t else f"{g}:{c}" for g, t, c in needs)


def _per_node_totals(r: JobRequest) -> tuple[int | None, int | None]:
    """The least CPUs and memory (MB) some node of the job must hold, from the user's options (None: not
    known): --ntasks-per-node tasks, else at least one task, of -c CPUs each (a task's CPUs are on one
    node: -c 33 fits no 32-CPU node); --cpus-per-gpu for the GPUs per node (at least one); --mem, else
    --mem-per-cpu for those CPUs, else --mem-per-gpu for those GPUs. What sbatch --test-only refuses
    ("Requested node configuration is not available"), measured in the lab."""
    gpus_on_node = r.gpus_per_node or (1 if (r.gpus or r.gpus_per_task) else 0)
    tasks = r.ntasks_per_node or (1 if r.cpus_per_task else 0)
    by_tasks = tasks * (r.cpus_per_task or 1)
    by_gpus = (r.cpus_per_gpu or 0) * gpus_on_node
    cpus = max(by_tasks, by_gpus) or None
    if r.mem_mb:
        mem: int | None = r.mem_mb
    elif r.mem_per_cpu_mb:
        mem = r.mem_per_cpu_mb * (cpus or 1)
    elif r.mem_per_gpu_mb and gpus_on_node:
        mem = r.mem_per_gpu_mb * gpus_on_node
    else:
        mem = None
    return cpus, mem


def check_nodes(st: State) -> None:
    """The request against what the nodes offer: enough nodes of the partition (with -w, each named one;
    without the -x ones) that hold, each, the gres the job asks per node (GPU types and counts, several
    types on one node, MIG slices, shards, MPS), the CPUs and memory per node where the nodes' totals are
    known, and that meet the constraint. Refuses what ``sbatch --test-only`` refuses, with the reason."""
    r, part = st.request, st.partition
    assert part is not None  # place ran
    accounts = st.inventory.accounts
    if r.account and accounts and r.account not in accounts:
        raise st.reject("unknown_account", f"use --account={'|'.join(sorted(accounts))}", account=r.account,
                        user=r.user or "the user")
    if not st.inventory.nodes:
        return  # nothing known about the nodes: Slurm judges
    needs = _needs(st)
    totals = any(n.cpus is not None or n.memory_mb is not None for n in st.inventory.nodes)  # the cluster's
    cpus, mem = _per_node_totals(r) if totals else (None, None)
    term = constraint_term(st)
    if r.constraint and term is not None:
        known = {f for n in st.inventory.nodes for f in n.features}
        missing = [f for f in features_of(term) if f not in known]
        if missing and not fits(term, [n.features for n in st.inventory.in_partition(part.name)]):
            raise st.reject("unservable", f"drop --constraint={r.constraint} or use features the nodes have: "
                            f"{', '.join(sorted(known)) or '(none)'}", partition=part.name,
                            why=f"no node has the feature(s) {', '.join(missing)}")
    if not needs and not r.nodelist and not r.exclude and term is None and not cpus and not mem:
        return
    cands = candidates(st, part)
    if r.nodelist:
        absent = [h for h in r.nodelist if h not in {n.name for n in cands}]
        if absent:
            raise st.reject("unservable", f"name nodes of partition {part.name} with -w", partition=part.name,
                            why=f"-w names {', '.join(absent[:4])}, not in partition {part.name}"
                            + (" (or excluded)" if r.exclude else ""))
    serving = tuple(n for n in cands if _serves(n, needs, cpus, mem))
    if term is not None:
        if r.nodelist or not has_count(term):  # each node of the job meets it
            serving = tuple(n for n in serving if holds(term, n.features))
        elif not fits(term, [n.features for n in serving]):
            serving = ()
    want = max(len(set(r.nodelist)), st.nodes_needed, r.node_min or 1)
    if len(serving) >= want:
        st.reasons.append(f"nodes: {len(serving)} node(s) of {part.name} can run it"
                          + (f" ({_need_text(needs)} per node)" if needs else "")
                          + (" (the cluster's node records)" if st.inventory.source == "cluster" else ""))
        return
    what = []
    if needs:
        what.append(f"{_need_text(needs)} per node")
    if r.constraint:
        what.append(f"--constraint={r.constraint}")
    if cpus:
        what.append(f"{cpus} CPUs per node")
    if mem:
        what.append(f"{mem} MB per node")
    why = (f"{want} node(s) with {' and '.join(what) or 'the request'} needed, {len(serving)} found; "
           f"its nodes offer {describe(cands)}")
    fix = "ask for what these nodes offer"
    if st.mig_profile or any(t and "_" in t for _g, t, _c in needs):
        fix = "ask for a MIG slice the nodes offer, or a whole GPU (--gpus=<type>:1)"
    elif len([g for g, _t, _c in needs if g == "gpu"]) > 1:
        fix = "ask for one GPU type per node, or one type per hetjob component"
    elif any(g in ("shard", "mps") for g, _t, _c in needs):
        fix = "ask for whole GPUs: this partition's nodes have no " + "/".join(
            sorted({g for g, _t, _c in needs if g in ("shard", "mps")}))
    raise st.reject("unservable", fix, partition=part.name, why=why)


__all__ = ["candidates", "type_fits", "check_nodes", "constraint_term"]
