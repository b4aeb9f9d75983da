# SPDX-License-Identifier: Apache-2.0
"""Properties of the split over random allocations, GPU sets, worker counts and orders on the
lab's node types and a DGX A100 (NPS4, SMT):

- every mask is a non-empty subset of the allocation, and the masks cover it;
- with at least as many cpus as workers the masks are pairwise disjoint; with fewer, each worker
  has exactly one cpu;
- every worker sees the same CUDA_VISIBLE_DEVICES, and worker r drives entry r % n;
- when each GPU pool (GPUs with the same local cpus) holds at least one allocated core per worker
  and every allocated cpu is local to some worker's GPU, each mask lies in its GPU's local cpus and
  the workers of one pool differ by at most one core (the granularity);
- a core's allocated SMT siblings stay together unless there are fewer cores than workers.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.placement.pinning import plan_node_pins


def scenario(draw, loc):
    cpus = sorted(loc.cpu_core)
    alloc = draw(st.sets(st.sampled_from(cpus), min_size=1, max_size=64))
    if draw(st.booleans()):  # whole cores, as Slurm allocates them
        alloc = {c for c in cpus if loc.cpu_core[c] in {loc.cpu_core[a] for a in alloc}}
    gpus = draw(st.permutations(sorted(loc.gpu_cpus)))
    gpus = gpus[:draw(st.integers(1, len(gpus)))]
    workers = draw(st.integers(1, 12))
    order = draw(st.sampled_from(["keep", "socket"]))
    return sorted(alloc), list(gpus), workers, order


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_split_properties(h100, a100, dgx, data):
    loc = data.draw(st.sampled_from([h100, a100, dgx]))
    alloc, gpus, n, order = scenario(data.draw, loc)
    node = plan_node_pins(alloc, loc.gpu_cpus, gpus, n, cpu_core=loc.cpu_core, cpu_numa=loc.cpu_numa,
                          gpu_socket=loc.gpu_socket, order=order)
    masks = [set(w.cpus) for w in node.workers]
    assert len(masks) == n
    assert all(m and m <= set(alloc) for m in masks)
    assert set().union(*masks) == set(alloc)
    if len(alloc) >= n:
        assert sum(len(m) for m in masks) == len(alloc), "masks overlap"
    else:
        assert all(len(m) == 1 for m in masks)
    entries = node.cuda_visible_devices.split(",")
    assert sorted(entries) == sorted(str(g) for g in gpus)
    assert all(w.cuda_visible_devices == node.cuda_visible_devices for w in node.workers)
    assert [w.gpu for w in node.workers] == [entries[r % len(entries)] for r in range(n)]

    cores = lambda m: {loc.cpu_core[c] for c in m}  # noqa: E731
    if len({loc.cpu_core[c] for c in alloc}) >= n:  # siblings stay together
        assert sum(len(cores(m)) for m in masks) == len(cores(alloc))

    local = [frozenset(loc.gpu_cpus[w.gpu_id]) & set(alloc) for w in node.workers]
    pools: dict[frozenset[int], list[int]] = {}
    for r, lc in enumerate(local):
        pools.setdefault(lc, []).append(r)
    everything_local = set(alloc) <= set().union(*local)
    roomy = all(lc and len(cores(lc)) >= len(rs) for lc, rs in pools.items())
    if everything_local and roomy and len(cores(alloc)) >= n:
        for lc, rs in pools.items():
            assert all(masks[r] <= lc for r in rs)
            sizes = [len(cores(masks[r])) for r in rs]
            assert max(sizes) - min(sizes) <= 1, (lc, sizes)
        assert not any(w.warnings for w in node.workers)
