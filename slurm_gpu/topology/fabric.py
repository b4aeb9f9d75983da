# SPDX-License-Identifier: Apache-2.0
"""The network between nodes from captures, for the policy's ``fabric`` section. Pure.

* ``ibnetdiscover`` (infiniband-diags) output -> the switch tree: a switch with hosts (channel adapters) is a
  leaf, a switch linked to leaves a spine above them. Names come from the node descriptions: a switch's
  ``"MF0;sw-leaf01:MSB7700/U1"`` -> ``sw-leaf01``, a host's ``"gpu001 mlx5_0"`` -> ``gpu001``. A host with
  several HCAs (rails) is placed by one HCA name (``hca``; default: each host's lowest-named HCA, mlx5_0).
* NVML's GPU fabric information (``nvmlDeviceGetGpuFabricInfo``: clusterUuid, cliqueId, state per GPU;
  the capture is one JSON record per node) -> NVLink blocks: the nodes whose GPUs share one (clusterUuid,
  cliqueId), i.e. one NVLink/IMEX domain (a GB200 NVL72 rack).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from slurm_gpu.errors import TopologyError
from slurm_gpu.plain import NamedTuple

_NODE = re.compile(r'^(Switch|Ca)\s+[0-9]+\s+"([SH]-[0-9a-fA-F]+)"(?:\s+#\s+"([^"]*)")?')
_PORT = re.compile(r'^\[([0-9]+)\](?:\([0-9a-fA-F]+\))?\s+"([SH]-[0-9a-fA-F]+)"\[[0-9]+\](?:\([0-9a-fA-F]+\))?'
                   r'\s*(?:#\s*(?:lid [0-9]+ lmc [0-9]+ )?"([^"]*)")?')
FABRIC_STATE_COMPLETED = 3  # nvml.h NVML_GPU_FABRIC_STATE_COMPLETED
MAX_LINES = 2_000_000


class SwitchUnit(NamedTuple):
    """A switch of the captured tree: a leaf (``nodes``) or a spine (``switches``)."""

    name: str
    nodes: tuple[str, ...]
    switches: tuple[str, ...]


class BlockUnit(NamedTuple):
    """One NVLink domain: its nodes and the (clusterUuid, cliqueId) they share."""

    name: str
    nodes: tuple[str, ...]
    cluster_uuid: str
    clique_id: int


def _switch_name(desc: str | None, guid: str) -> str:
    if desc and ";" in desc:
        name = desc.split(";", 1)[1].split(":", 1)[0].strip()
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            return name
    return guid.lower()


def _host(desc: str | None) -> tuple[str, str] | None:
    words = (desc or "").split()
    if not words or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", words[0]):
        return None
    return words[0], words[1] if len(words) > 1 else ""


def parse_ibnetdiscover(text: str, hca: str | None = None) -> tuple[SwitchUnit, ...]:
    """ibnetdiscover's text -> the switch tree (leaves first, in file order; then spines above them).
    TopologyError when no switch links a host."""
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise TopologyError(f"ibnetdiscover output of {len(lines)} lines exceeds {MAX_LINES}")
    names: dict[str, str] = {}  # "S-guid" -> switch name
    links: dict[str, list[tuple[str, str | None]]] = {}  # switch id -> (peer id, peer description)
    order: list[str] = []
    at: str | None = None
    for raw in lines:
        line = raw.strip()
        m = _NODE.match(line)
        if m:
            kind, ident, desc = m.groups()
            at = ident if kind == "Switch" else None
            if at is not None:
                names[at] = _switch_name(desc, ident[2:])
                links.setdefault(at, [])
                order.append(at)
            continue
        p = _PORT.match(line)
        if p and at is not None:
            links[at].append((p.group(2), p.group(3)))
    seen: list[tuple[str, str, str]] = []  # (switch id, host, HCA)
    for sw in order:
        for peer, desc in links[sw]:
            host = _host(desc) if peer.startswith("H-") else None
            if host is not None:
                seen.append((sw, *host))
    cards: dict[str, str] = {}
    for _sw, name, card in seen:  # each host's HCA: ``hca``, else its lowest-named one (mlx5_0 before mlx5_1)
        cards[name] = min(card, cards.get(name, card))
    leaves: dict[str, list[str]] = {sw: [] for sw in order}
    for sw, name, card in seen:
        if card == (hca or cards[name]) and name not in leaves[sw]:
            leaves[sw].append(name)
    if not any(leaves.values()):
        raise TopologyError("ibnetdiscover output names no switch with a host (channel adapter) on it")
    out = [SwitchUnit(names[sw], tuple(hosts), ()) for sw, hosts in leaves.items() if hosts]
    leaf_ids = {sw for sw, hosts in leaves.items() if hosts}
    for sw in order:  # spines: switches without hosts, with the leaves (or lower spines) they link
        if sw in leaf_ids:
            continue
        below = [names[p] for p, _ in links[sw] if p in leaf_ids]
        if below:
            out.append(SwitchUnit(names[sw], (), tuple(dict.fromkeys(below))))
    return tuple(out)


def blocks_from_fabric_info(records: Sequence[Mapping[str, object]]) -> tuple[tuple[BlockUnit, ...],
                                                                             tuple[str, ...]]:
    """Per-node NVML fabric records ``{"node", "gpus": [{"cluster_uuid", "clique_id", "state"}]}`` ->
    (the blocks, in the order their first node appears; warnings). A node whose GPUs are in two domains
    is an error; a GPU whose fabric registration has not completed, or a node without fabric
    information, is left out with a warning."""
    by_key: dict[tuple[str, int], list[str]] = {}
    warnings: list[str] = []
    for rec in records:
        node = rec.get("node")
        gpus = rec.get("gpus")
        if not isinstance(node, str) or not isinstance(gpus, list):
            raise TopologyError(f"fabric record {str(rec)[:60]!r}: expected {{'node': NAME, 'gpus': [...]}}")
        keys = set()
        for g in gpus:
            if not isinstance(g, dict):
                raise TopologyError(f"{node}: a GPU record is not a mapping")
            if g.get("state") != FABRIC_STATE_COMPLETED:
                warnings.append(f"{node}: GPU {g.get('index')} fabric state {g.get('state')} (not completed): "
                                "not counted")
                continue
            uuid, clique = g.get("cluster_uuid"), g.get("clique_id")
            if not isinstance(uuid, str) or not isinstance(clique, int) or isinstance(clique, bool):
                raise TopologyError(f"{node}: GPU {g.get('index')}: cluster_uuid/clique_id missing")
            keys.add((uuid.lower(), clique))
        if len(keys) > 1:
            raise TopologyError(f"{node}: its GPUs are in {len(keys)} NVLink domains "
                                f"({', '.join(f'{u[:8]}/{c}' for u, c in sorted(keys))}); expected one")
        if not keys:
            warnings.append(f"{node}: no GPU with completed fabric registration: in no block")
            continue
        by_key.setdefault(keys.pop(), []).append(node)
    blocks = tuple(BlockUnit(f"nvl-{u[:8]}-{c}", tuple(nodes), u, c) for (u, c), nodes in by_key.items())
    return blocks, tuple(warnings)


def fabric_section(switches: Iterable[SwitchUnit], blocks: Iterable[BlockUnit], plugin: str | None = None) -> str:
    """The policy's ``fabric:`` section (YAML) for the captured units; node lists as Slurm hostlists."""
    from slurm_gpu.hostlist import compress_hostlist

    out = ["fabric:"]
    sw, bl = list(switches), list(blocks)
    if sw:
        out.append("  switches:")
        for s in sw:
            out.append(f"    - name: {s.name}")
            out.append(f"      nodes: \"{compress_hostlist(list(s.nodes))}\"" if s.nodes else
                       f"      switches: [{', '.join(s.switches)}]")
    if bl:
        out.append("  blocks:")
        for b in bl:
            out += [f"    - name: {b.name}  # clusterUuid {b.cluster_uuid}, cliqueId {b.clique_id}",
                    f"      nodes: \"{compress_hostlist(list(b.nodes))}\""]
    if plugin:
        out.append(f"  plugin: {plugin}")
    return "\n".join(out) + "\n"


__all__ = ["SwitchUnit", "BlockUnit", "parse_ibnetdiscover", "blocks_from_fabric_info", "fabric_section",
           "FABRIC_STATE_COMPLETED"]
