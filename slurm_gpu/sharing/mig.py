# SPDX-License-Identifier: Apache-2.0
"""MIG layouts as data: validate a job's request, plan a declarative layout, diff it against a GPU's
current state into ordered actions, and simulate those actions. Pure (no NVML, no I/O); the adapter
:mod:`slurm_gpu.adapters.gpu_config` reads the state and executes the actions.

A *layout* is what NVIDIA's mig-parted calls a config: per GPU, MIG on or off and how many GPU
instances of each profile, each with one compute instance spanning it (one MIG device per GPU
instance, which is also what Slurm's NVML autodetection and gres.conf expect). Two node modes
(policy ``node_types[].mig_mode``):

- ``static``: ``mig_layout`` is declared; the epilog compares the GPU with it and restores it
  (:func:`plan`) if a job changed it, so slurmd's inventory (gres.conf) stays true.
- ``dynamic``: the job holds whole GPUs and asks for a layout (``--mig 3g.40gb:2``, applied to each
  of its GPUs); the epilog restores the node type's default (``mig_layout``, empty: MIG off).

Instances are placed with the GPU's own placement table (memory slices, as NVML reports them) by a
small exhaustive search, so a layout that fits is always found and one that does not is refused
before anything is changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from slurm_gpu.plain import Record, record
from slurm_gpu.sharing.token import MigSpec
from slurm_gpu.units import UnitError, parse_mig_profile

if TYPE_CHECKING:
    from slurm_gpu.policy.model import GpuType, NodeType, Policy

COMPUTE_SLICES = 7


class MigError(ValueError):
    """A layout that cannot be served (one line): unknown profile, no capacity, wrong node mode."""


@record
class Profile(Record):
    """A GPU-instance profile of one GPU, as NVML reports it (placements in memory slices)."""

    name: str  # "3g.40gb"
    slices: int  # compute slices
    memory_slices: int  # size of one placement
    instances: int  # at most this many at once
    placements: tuple[int, ...]  # allowed start memory slices


Geometry = Mapping[str, Profile]  # a GPU's profiles by name


@record
class GpuInstance(Record):
    profile: str
    start: int  # placement start (memory slice): unique on its GPU
    cis: tuple[int, ...] = ()  # compute instances, by their compute slices


@record
class MigState(Record):
    """A GPU's current MIG state (``enabled`` = current mode, not pending)."""

    enabled: bool = False
    instances: tuple[GpuInstance, ...] = ()

    def sorted(self) -> MigState:
        return MigState(self.enabled, tuple(sorted(self.instances, key=lambda g: (g.start, g.profile))))


@record
class Layout(Record):
    """Desired per-GPU layout: MIG on/off and {profile: count} (sorted pairs)."""

    enabled: bool
    devices: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, enabled: bool, devices: Mapping[str, int] | Iterable[tuple[str, int]]) -> Layout:
        items = devices.items() if isinstance(devices, Mapping) else devices
        merged: Counter[str] = Counter()
        for p, n in items:
            merged[p] += n
        return cls(enabled, tuple(sorted((p, n) for p, n in merged.items() if n > 0)))

    def describe(self) -> str:
        if not self.enabled:
            return "MIG disabled"
        return "MIG enabled: " + (", ".join(f"{p}:{n}" for p, n in self.devices) or "no instances")


@record
class Action(Record):
    """One step: ``destroy_ci``/``destroy_gi``/``set_mig_mode``/``create_gi``/``create_ci`` on ``gpu``.
    GPU instances are named by their placement ``start``; compute instances by their ``slices``."""

    op: str
    gpu: int
    profile: str = ""
    start: int = -1
    slices: int = 0
    enable: bool = False


MEMORY_SLICES = 8  # a MIG-capable GPU's memory is cut in 8 slices (NVML placements count them)


def nominal_geometry(profiles: Iterable[str], memory_gb: int) -> dict[str, Profile]:
    """The placement table of ``profiles`` on a GPU of ``memory_gb``, without asking NVML: a profile's
    size is its memory in eighths of the GPU (rounded to 1, 2, 4 or 8), its starts are the multiples of
    that size where its compute slices still fit in 7, one instance with media extensions (+me). This is
    ``nvidia-smi mig -lgipp`` of the A100 40/80GB and H100 80GB (docs/mig_mps.md "MIG facts"); the
    node's own table (adapters.gpu_config) wins wherever NVML is there."""
    out: dict[str, Profile] = {}
    for name in profiles:
        p = parse_mig_profile(name)
        eighths = max(1.0, p.memory_gb * MEMORY_SLICES / memory_gb) if memory_gb > 0 else 1.0
        size = min((s for s in (1, 2, 4, 8) if s >= round(eighths)), default=8)
        starts = tuple(s for s in range(0, MEMORY_SLICES, size) if s + p.slices <= COMPUTE_SLICES)
        out[p.name] = Profile(p.name, p.slices, size, 1 if p.media_extensions else len(starts), starts)
    return out


def gpu_instance_id(memory_slices: int, start: int) -> int:
    """The GPU-instance id the driver gives a placement: fixed by the block of memory slices it covers,
    not by creation order: the whole GPU 0; the half at slice 4 is 1, at 0 is 2; quarters 3 + start/2;
    eighths 7 + start. Seen in public captures: seven 1g.10gb on an H100 got ids 7..13 at placements 0..6
    (created in the order 13, 11, 12, 7, 8, 9, 10), two 3g.20gb on an A100 got 1 at 4:4 and 2 at 0:4
    (NVIDIA MIG user guide); the quarter ids follow the same tree (docs/mig_mps.md "MIG facts")."""
    if memory_slices >= 8:
        return 0
    if memory_slices >= 4:
        return 1 if start >= 4 else 2
    if memory_slices >= 2:
        return 3 + start // 2
    return 7 + start


# ---- policy side ------------------------------------------------------------------------------

def layout_counts(profiles: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """The policy's ``mig_layout`` list (one entry per instance) as sorted (profile, count) pairs."""
    return Layout.of(True, ((p, 1) for p in profiles)).devices


def compute_slices(devices: Iterable[tuple[str, int]]) -> int:
    total = 0
    for p, n in devices:
        try:
            total += parse_mig_profile(p).slices * n
        except UnitError as e:
            raise MigError(str(e)) from None
    return total


def default_layout(node_type: NodeType) -> Layout | None:
    """The layout the node type's GPUs return to after each job; ``None``: slurm-gpu leaves MIG alone."""
    if node_type.mig_mode == "none":
        return None
    return Layout.of(bool(node_type.mig_layout), ((p, 1) for p in node_type.mig_layout))


def node_type_of(policy: Policy, node: str) -> NodeType | None:
    return next((nt for nt in policy.node_types if node in nt.nodes), None)


def check_request(spec: MigSpec, policy: Policy, node_type: NodeType) -> Layout:
    """The job layout for ``spec`` on ``node_type``'s GPUs, or :class:`MigError`: the node type must be
    in dynamic MIG mode, each profile offered by its GPU type (and allowed by ``isolation``), and the
    layout must fit the 7 compute slices of a GPU."""
    if node_type.mig_mode != "dynamic":
        raise MigError(f"node type {node_type.name} does not serve per-job MIG layouts (mig_mode "
                       f"{node_type.mig_mode}); ask for a MIG slice as a gres type instead")
    gt: GpuType | None = policy.gpu_type(node_type.gpu_type)
    offered = gt.mig_profiles if gt is not None and gt.mig_capable else ()
    allowed = policy.isolation.mig_profiles
    for p, n in spec:
        if p not in offered or (allowed and p not in allowed):
            ok = [q for q in offered if not allowed or q in allowed]
            raise MigError(f"MIG profile {p} is not offered on {node_type.gpu_type} GPUs; allowed: "
                           f"{', '.join(ok) or 'none'}")
        if not 1 <= n <= COMPUTE_SLICES:
            raise MigError(f"MIG profile {p}: count {n} is not 1-{COMPUTE_SLICES}")
    used = compute_slices(spec)
    if used > COMPUTE_SLICES:
        raise MigError(f"MIG layout {','.join(f'{p}:{n}' for p, n in spec)} needs {used} compute slices; "
                       f"a GPU has {COMPUTE_SLICES}")
    return Layout.of(True, spec)


# ---- placement --------------------------------------------------------------------------------

def place(layout: Layout, geometry: Geometry) -> tuple[tuple[str, int], ...]:
    """(profile, start) for every instance of ``layout`` on a GPU of ``geometry``, or :class:`MigError`."""
    want: list[Profile] = []
    for p, n in layout.devices:
        prof = geometry.get(p)
        if prof is None:
            raise MigError(f"MIG profile {p} is not supported by this GPU; it has "
                           f"{', '.join(sorted(geometry)) or 'no MIG profiles'}")
        if n > prof.instances:
            raise MigError(f"MIG profile {p}: {n} instances asked for, the GPU allows {prof.instances}")
        want.extend([prof] * n)
    if compute_slices(layout.devices) > COMPUTE_SLICES:
        raise MigError(f"{layout.describe()} needs more than {COMPUTE_SLICES} compute slices")
    want.sort(key=lambda q: (-q.memory_slices, -q.slices, q.name))
    chosen: list[tuple[str, int]] = []

    def free(used: int, start: int, size: int) -> bool:
        mask = ((1 << size) - 1) << start
        return not used & mask

    def search(k: int, used: int) -> bool:
        if k == len(want):
            return True
        q = want[k]
        for s in q.placements:  # same-profile instances take increasing starts (no symmetric retries)
            if k and want[k - 1] is q and s <= chosen[-1][1]:
                continue
            if free(used, s, q.memory_slices):
                chosen.append((q.name, s))
                if search(k + 1, used | (((1 << q.memory_slices) - 1) << s)):
                    return True
                chosen.pop()
        return False

    if not search(0, 0):
        raise MigError(f"{layout.describe()} does not fit the GPU's placements")
    return tuple(sorted(chosen, key=lambda c: c[1]))


# ---- diff -------------------------------------------------------------------------------------

def satisfies(state: MigState, layout: Layout, geometry: Geometry) -> bool:
    """True when ``state`` is ``layout``: same mode, same instances, each with one full compute instance."""
    if state.enabled != layout.enabled:
        return False
    if not layout.enabled:
        return not state.instances
    got = Layout.of(True, ((g.profile, 1) for g in state.instances))
    return got == layout and all(_full(g, geometry) for g in state.instances)


def _full(g: GpuInstance, geometry: Geometry) -> bool:
    prof = geometry.get(g.profile)
    return prof is not None and g.cis == (prof.slices,)


def plan_gpu(gpu: int, current: MigState, desired: Layout, geometry: Geometry) -> tuple[Action, ...]:
    """Ordered actions that take one GPU from ``current`` to ``desired`` (empty when it is there).
    Matching instances are kept (only their compute instances are repaired); otherwise everything is
    torn down and rebuilt, as mig-parted does. Raises :class:`MigError` before any action if
    ``desired`` cannot be placed."""
    if satisfies(current, desired, geometry):
        return ()
    out: list[Action] = []
    same = (current.enabled and desired.enabled
            and Layout.of(True, ((g.profile, 1) for g in current.instances)) == desired)
    if same:
        for g in current.sorted().instances:
            if not _full(g, geometry):
                out.extend(Action("destroy_ci", gpu, g.profile, g.start, s) for s in g.cis)
                out.append(Action("create_ci", gpu, g.profile, g.start, geometry[g.profile].slices))
        return tuple(out)
    placements = place(desired, geometry) if desired.enabled else ()
    for g in current.sorted().instances:
        out.extend(Action("destroy_ci", gpu, g.profile, g.start, s) for s in g.cis)
        out.append(Action("destroy_gi", gpu, g.profile, g.start))
    if current.enabled != desired.enabled:
        out.append(Action("set_mig_mode", gpu, enable=desired.enabled))
    for p, s in placements:
        out.append(Action("create_gi", gpu, p, s))
        out.append(Action("create_ci", gpu, p, s, geometry[p].slices))
    return tuple(out)


def plan(current: Mapping[int, MigState], desired: Layout, geometry: Mapping[int, Geometry],
         gpus: Iterable[int]) -> tuple[Action, ...]:
    """Actions for the GPUs in ``gpus`` only (the job's); every GPU is planned before any is changed."""
    out: list[Action] = []
    for i in sorted(set(gpus)):
        if i not in current or i not in geometry:
            raise MigError(f"GPU {i} is not on this node")
        out.extend(plan_gpu(i, current[i], desired, geometry[i]))
    return tuple(out)


def drifted(current: Mapping[int, MigState], declared: Layout, geometry: Mapping[int, Geometry],
            gpus: Iterable[int]) -> tuple[int, ...]:
    """GPUs (of ``gpus``) whose state is not the declared static layout."""
    return tuple(i for i in sorted(set(gpus)) if not satisfies(current[i], declared, geometry[i]))


# ---- simulation (the model the executor must follow; used by the tests) ----------------------

def apply(current: Mapping[int, MigState], actions: Iterable[Action], geometry: Mapping[int, Geometry]
          ) -> dict[int, MigState]:
    """The states after ``actions``, with NVML's rules: instances need MIG on, placements must not
    overlap, a GPU instance with compute instances cannot be destroyed, MIG cannot be disabled while
    instances exist. A broken rule is a :class:`MigError`."""
    states = {i: s.sorted() for i, s in current.items()}
    for a in actions:
        st = states[a.gpu]
        geo = geometry[a.gpu]
        gis = {g.start: g for g in st.instances}
        if a.op == "set_mig_mode":
            if not a.enable and st.instances:
                raise MigError(f"GPU {a.gpu}: MIG disabled while instances exist")
            st = replace(st, enabled=a.enable)
        elif a.op == "create_gi":
            prof = geo[a.profile]
            used = {s for g in st.instances for s in range(g.start, g.start + geo[g.profile].memory_slices)}
            if not st.enabled or a.start not in prof.placements \
                    or used & set(range(a.start, a.start + prof.memory_slices)) \
                    or sum(g.profile == a.profile for g in st.instances) >= prof.instances:
                raise MigError(f"GPU {a.gpu}: cannot create {a.profile} at {a.start}")
            gis[a.start] = GpuInstance(a.profile, a.start)
        elif a.op in ("create_ci", "destroy_ci", "destroy_gi"):
            g = gis.get(a.start)
            if g is None:
                raise MigError(f"GPU {a.gpu}: no GPU instance at {a.start}")
            if a.op == "create_ci":
                if sum(g.cis) + a.slices > geo[g.profile].slices:
                    raise MigError(f"GPU {a.gpu}: no room for a {a.slices}-slice compute instance")
                gis[a.start] = replace(g, cis=tuple(sorted((*g.cis, a.slices))))
            elif a.op == "destroy_ci":
                if a.slices not in g.cis:
                    raise MigError(f"GPU {a.gpu}: no {a.slices}-slice compute instance at {a.start}")
                cis = list(g.cis)
                cis.remove(a.slices)
                gis[a.start] = replace(g, cis=tuple(cis))
            else:
                if g.cis:
                    raise MigError(f"GPU {a.gpu}: GPU instance at {a.start} still has compute instances")
                del gis[a.start]
        else:
            raise MigError(f"unknown action {a.op!r}")
        if a.op != "set_mig_mode":
            st = replace(st, instances=tuple(gis.values()))
        states[a.gpu] = st.sorted()
    return states


# The memory NVML reports for each MIG profile (nvmlDeviceGetAttributes memorySizeMB; `nvidia-smi mig -lgip`
# "Memory GiB" x 1024), by GPU family and total memory: public `-lgip` captures (the sources are the stand-in's
# fixture, tests/nvml_standin/fixtures/mig-profiles.json). Slurm 22.05's gpu/nvml names a detected slice from
# these (release.py mig_profile_from_attributes): <slices>g.<MiB/1024 rounded>gb.
MIG_PROFILE_MIB: dict[tuple[str, int], dict[str, int]] = {
    ("a100", 80): {"1g.10gb": 9728, "1g.10gb+me": 9728, "1g.20gb": 19968, "2g.20gb": 19968, "3g.40gb": 40192,
                   "4g.40gb": 40192, "7g.80gb": 80896},
    ("a100", 40): {"1g.5gb": 4864, "1g.5gb+me": 4864, "2g.10gb": 9984, "3g.20gb": 20096, "4g.20gb": 20096,
                   "7g.40gb": 40448},
    ("h100", 80): {"1g.10gb": 9984, "1g.10gb+me": 9984, "1g.20gb": 20091, "2g.20gb": 20091, "3g.40gb": 40448,
                   "4g.40gb": 40448, "7g.80gb": 81152},
}


def profile_from_attributes(slices: int, memory_mb: int) -> str:
    """A MIG profile named as Slurm 22.05's gpu/nvml names it: ``<slices>g.<GiB rounded>gb`` (roundl of
    memorySizeMB / 1024, halves away from zero; the A100 80GB's 3g.40gb, 39.25 GiB, becomes ``3g.39gb``)."""
    q, r = divmod(memory_mb, 1024)
    return f"{slices}g.{q + (1 if 2 * r >= 1024 else 0)}gb"


def detected_profile(gpu_type: str, memory_gb: int, profile: str, from_attributes: bool) -> str | None:
    """The profile name Slurm's gpu/nvml gives ``profile`` of a GPU of this type: the name itself where the
    release reads it from the NVML device name; from the recorded memory where it reads the attributes
    (None: no recorded table for this GPU, cannot tell)."""
    if not from_attributes:
        return profile
    family = next((f for f, mem in MIG_PROFILE_MIB if f in gpu_type.lower() and mem == memory_gb), None)
    mib = MIG_PROFILE_MIB.get((family, memory_gb), {}).get(profile) if family else None
    if mib is None:
        return None
    return profile_from_attributes(parse_mig_profile(profile).slices, mib) + profile[len(profile.split("+")[0]):]


WHOLE = ""  # the inventory key of a whole GPU (MIG off), beside the profiles of the slices


def present_inventory(states: Mapping[int, MigState]) -> Counter[str]:
    """What the node's driver has now, as slurmd counts it: a whole GPU per GPU with MIG off (``WHOLE``),
    else one device per GPU instance, by profile."""
    out: Counter[str] = Counter()
    for st in states.values():
        if st.enabled:
            out.update(g.profile for g in st.instances)
        else:
            out[WHOLE] += 1
    return out


def registered_inventory(gres: Iterable[tuple[str | None, int]], gpu_type: str) -> Counter[str]:
    """What slurmctld registered for the node (its ``Gres=`` gpu items, (type, count)): the slices by profile
    (type ``<gpu_type>_<profile>``, the names slurm.conf and ``admin emit`` give them), whole GPUs (the GPU
    type itself, or untyped) as ``WHOLE``; a type of another GPU is kept under its own name."""
    out: Counter[str] = Counter()
    for gres_type, count in gres:
        if gres_type is None or gres_type == gpu_type:
            out[WHOLE] += count
        else:
            out[gres_type.removeprefix(f"{gpu_type}_")] += count
    return out


def inventory_differences(registered: Mapping[str, int], present: Mapping[str, int]) -> list[str]:
    """``<what>: slurmd registered R, the driver has P`` for each kind of device whose counts differ (sorted;
    ``whole GPUs`` for :data:`WHOLE`). Empty: Slurm schedules what is there."""
    return [f"{k or 'whole GPUs'}: slurmd registered {registered.get(k, 0)}, the driver has {present.get(k, 0)}"
            for k in sorted(set(registered) | set(present)) if registered.get(k, 0) != present.get(k, 0)]


__all__ = ["WHOLE", "present_inventory", "registered_inventory", "inventory_differences",
           "MIG_PROFILE_MIB", "profile_from_attributes", "detected_profile",
           "COMPUTE_SLICES", "MigError", "Profile", "Geometry", "GpuInstance", "MigState", "Layout", "Action",
           "layout_counts", "compute_slices", "default_layout", "node_type_of", "check_request", "place",
           "satisfies", "plan_gpu", "plan", "drifted", "apply"]
