# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu-pin``: pin a worker forked by torchrun / deepspeed / mpirun to its share of the
job's CPUs local to its GPU, set its memory policy and CUDA_VISIBLE_DEVICES, then exec the command.

    slurm-gpu-pin [--topology FILE] [--order keep|socket] [--mem-policy preferred|bind|none]
                  [--local-world-size N] [--verbose] [--dry-run] [--] CMD [ARGS]...

It never fails the worker: any problem is one warning line on stderr and the command runs unpinned
(with its own exit code). ``pin_current_process()`` does the same from Python. docs/pinning.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from slurm_gpu.digits import is_digits
from slurm_gpu.placement.pinning import (
    ORDERS,
    NodePins,
    PinError,
    WorkerPin,
    gpus_from_env,
    locality_from_topology,
    plan_node_pins,
    rank_from_env,
)

PROG = "slurm-gpu-pin"
USAGE = (f"usage: {PROG} [--topology FILE] [--order keep|socket] [--mem-policy preferred|bind|none] "
         "[--local-world-size N] [--verbose] [--dry-run] [--] CMD [ARGS]...")
MEM_POLICIES = ("preferred", "bind", "none")


class Usage(Exception):
    pass


def _say(kind: str, text: str) -> None:
    print(f"{PROG}: {kind}: {text}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """(options, command). The command starts at ``--`` or at the first word that is no option."""
    opts: dict[str, Any] = {"topology": None, "order": "keep", "mem_policy": "preferred", "verbose": False,
                            "dry_run": False, "local_world_size": None}
    valued = {"--topology": "topology", "--order": "order", "--mem-policy": "mem_policy",
              "--local-world-size": "local_world_size"}
    i, problem = 0, None
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-"):
            break
        name, eq, value = a.partition("=")
        if name in valued:
            if not eq:
                if i + 1 >= len(argv):
                    raise Usage(f"{name} needs a value")
                i, value = i + 1, argv[i + 1]
            opts[valued[name]] = value
        elif a in ("-v", "--verbose"):
            opts["verbose"] = True
        elif a in ("-n", "--dry-run"):
            opts["dry_run"] = True
        elif a in ("-h", "--help"):
            opts["help"] = True
        else:
            problem = problem or f"unknown option {a!r}"
        i += 1
    command = list(argv[i:])
    if opts["order"] not in ORDERS:
        problem = problem or f"--order {opts['order']!r}: expected one of {', '.join(ORDERS)}"
    if opts["mem_policy"] not in MEM_POLICIES:
        problem = problem or f"--mem-policy {opts['mem_policy']!r}: expected one of {', '.join(MEM_POLICIES)}"
    lws = opts["local_world_size"]
    if lws is not None:
        if not is_digits(str(lws)) or int(lws) < 1:
            problem = problem or f"--local-world-size {lws!r}: expected a positive integer"
        else:
            opts["local_world_size"] = int(lws)
    opts["problem"] = problem
    return opts, command


def load_locality(topology: str | None, env: Mapping[str, str], verbose: bool) -> tuple[Any, str]:
    """(Locality, source) from --topology, $SLURM_GPU_TOPOLOGY, or this node (sysfs + NVML)."""
    path = topology or env.get("SLURM_GPU_TOPOLOGY") or None
    if path:
        from slurm_gpu.topology.loader import load_topology_file

        return locality_from_topology(load_topology_file(path)), path
    from slurm_gpu.adapters.nvml import live_topology

    topo = live_topology(on_warning=(lambda m: _say("note", m)) if verbose else None)
    if not topo.gpus:
        raise PinError("no GPU found on this node (no driver?); give --topology FILE or SLURM_GPU_TOPOLOGY")
    return locality_from_topology(topo), "live (sysfs + NVML)"


def plan_this_node(opts: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Everything the command and the Python call need; raises on any problem."""
    from slurm_gpu.adapters.affinity import read_allocation

    loc, topo_source = load_locality(opts.get("topology"), env, bool(opts.get("verbose")))
    alloc, alloc_source = read_allocation()
    gpus = gpus_from_env(env, loc)
    rank, size, rank_source = rank_from_env(env) or (None, None, None)
    size = opts.get("local_world_size") or size
    if size is None:  # a rank without a count: one worker per visible GPU; no rank: one worker
        size = max(len(gpus), rank + 1) if rank is not None else (max(len(gpus), 1) if opts.get("dry_run") else 1)
    node: NodePins = plan_node_pins(alloc, loc.gpu_cpus, gpus, size, cpu_core=loc.cpu_core, cpu_numa=loc.cpu_numa,
                                    gpu_socket=loc.gpu_socket, order=opts.get("order", "keep"))
    if rank is not None and rank >= size:
        raise PinError(f"{rank_source}={rank} is outside 0..{size - 1} (local world size {size})")
    return {"node": node, "rank": rank, "size": size, "rank_source": rank_source, "allocation": alloc,
            "allocation_source": alloc_source, "topology": topo_source}


def apply_pin(pin: WorkerPin, mem_policy: str, all_threads: bool) -> list[str]:
    """Set affinity (raises OSError) and the memory policy (a failure is returned as a warning)."""
    from slurm_gpu.adapters.affinity import set_affinity, set_mempolicy

    set_affinity(pin.cpus, all_threads=all_threads)
    if mem_policy == "none" or not pin.mem_nodes:
        return []
    try:
        set_mempolicy(mem_policy, pin.mem_nodes)
    except OSError as e:
        return [f"memory policy not set ({e}); CPUs are pinned"]
    return []


def cvd_to_set(pin: WorkerPin, order: str, env: Mapping[str, str]) -> str | None:
    """The CUDA_VISIBLE_DEVICES to export: only when it was set (Slurm sets it) or ``--order socket``
    asks for an order; an unset one stays unset (its integers would follow CUDA's device order)."""
    if not pin.cuda_visible_devices or ("CUDA_VISIBLE_DEVICES" not in env and order != "socket"):
        return None
    return pin.cuda_visible_devices


def _describe(plan: Mapping[str, Any], pin: WorkerPin) -> str:
    from slurm_gpu.cpulist import format_cpulist

    return (f"worker {pin.local_rank}/{plan['size']}: GPU {pin.gpu} (global {pin.gpu_id}) of "
            f"CUDA_VISIBLE_DEVICES={pin.cuda_visible_devices}, CPUs {format_cpulist(pin.cpus)}, memory node(s) "
            f"{','.join(map(str, pin.mem_nodes)) or '-'}; allocation {format_cpulist(plan['allocation'])} "
            f"({plan['allocation_source']}), topology {plan['topology']}")


def pin_current_process(*, topology: str | None = None, order: str = "keep", mem_policy: str = "preferred",
                        local_world_size: int | None = None, verbose: bool = False) -> WorkerPin | None:
    """Pin this process (all its threads) as worker LOCAL_RANK and set CUDA_VISIBLE_DEVICES in
    ``os.environ``. Call it first thing, before CUDA is initialised. Never raises: on a problem it
    prints one warning line and returns None (the process runs unpinned)."""
    opts = {"topology": topology, "order": order, "local_world_size": local_world_size, "verbose": verbose}
    try:
        if mem_policy not in MEM_POLICIES:
            raise PinError(f"mem_policy {mem_policy!r}: expected one of {', '.join(MEM_POLICIES)}")
        plan = plan_this_node(opts, os.environ)
        pin: WorkerPin = plan["node"].workers[plan["rank"] or 0]
        notes = apply_pin(pin, mem_policy, all_threads=True)
    except Exception as e:  # never fail the worker
        _say("warning", f"not pinned: {e}")
        return None
    cvd = cvd_to_set(pin, order, os.environ)
    if cvd is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = cvd
    for text in [*pin.warnings, *notes, *(plan["node"].warnings if pin.local_rank == 0 else ())]:
        _say("warning", text)
    if verbose:
        _say("note", _describe(plan, pin))
    return pin


def _exec(command: list[str], env: dict[str, str] | None = None) -> int:
    try:
        if env is None:
            os.execvp(command[0], command)
        else:
            os.execvpe(command[0], command, env)
    except FileNotFoundError:
        _say("error", f"{command[0]}: command not found")
        return 127
    except OSError as e:
        _say("error", f"{command[0]}: {e.strerror}")
        return 126
    return 0  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        opts, command = parse_args(args)
    except Usage as e:
        _say("error", f"{e}\n{USAGE}")
        return 2
    if opts.get("help"):
        print(USAGE)
        print(__doc__.split("\n\n", 2)[2].strip())
        return 0
    if not command and not opts["dry_run"]:
        _say("error", f"no command given\n{USAGE}")
        return 2
    if opts["problem"]:
        _say("warning" if command else "error", f"{opts['problem']}; running unpinned" if command else opts["problem"])
        return _exec(command) if command else 2
    try:
        plan = plan_this_node(opts, os.environ)
    except Exception as e:  # never fail the worker: one line, then the command unpinned
        _say("warning" if command and not opts["dry_run"] else "error",
             f"not pinned: {e}" + ("; running unpinned" if command and not opts["dry_run"] else ""))
        return 1 if opts["dry_run"] else _exec(command)
    node: NodePins = plan["node"]
    if opts["dry_run"]:
        import json

        from slurm_gpu.cpulist import format_cpulist

        shown = node.workers if plan["rank"] is None else (node.workers[plan["rank"]],)
        print(json.dumps({"local_rank": plan["rank"], "local_world_size": plan["size"],
                          "rank_from": plan["rank_source"], "allocation": format_cpulist(plan["allocation"]),
                          "allocation_from": plan["allocation_source"], "topology": plan["topology"],
                          "order": opts["order"], "cuda_visible_devices": node.cuda_visible_devices,
                          "workers": [w.to_json() for w in shown], "warnings": list(node.warnings)}, indent=2))
        return 0
    pin = node.workers[plan["rank"] or 0]
    try:
        notes = apply_pin(pin, opts["mem_policy"], all_threads=False)
    except Exception as e:
        _say("warning", f"not pinned: {e}; running unpinned")
        return _exec(command)
    for text in [*pin.warnings, *notes, *(node.warnings if pin.local_rank == 0 else ())]:
        _say("warning", text)
    if opts["verbose"]:
        _say("note", _describe(plan, pin))
    env = dict(os.environ)
    cvd = cvd_to_set(pin, opts["order"], env)
    if cvd is not None:
        env["CUDA_VISIBLE_DEVICES"] = cvd
    return _exec(command, env)


if __name__ == "__main__":
    sys.exit(main())
