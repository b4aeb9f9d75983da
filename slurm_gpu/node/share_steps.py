# SPDX-License-Identifier: Apache-2.0
"""The node hooks' per-job MIG and MPS steps (docs/hooks.md "MIG and MPS steps", docs/mig_mps.md).

``MigStep`` and ``MpsStep`` plug into the runner (slurm_gpu/node/runner.py) just before
``HealthStep``. They read the job's request token from ``SLURM_JOB_COMMENT`` (:func:`request.decode`),
check it again against the site policy named by hooks.conf ``policy`` (a user can write the token
without gpusub), and run the plans through :mod:`slurm_gpu.adapters.gpu_config`.

- Prolog: a request that cannot be served, for whatever reason (bad token, profile not offered, share
  out of range, no capacity, GPU busy, but also NVML unusable or a hung call: the job must not run
  without the isolation it asked for), raises ``JobSetupError``: the prolog exits 0, the TaskProlog
  prints the message and fails the task. No set-up failure drains the node.
- Epilog, whatever the comment says now: the job's MPS daemon (if its directory exists) is quit and
  the compute modes restored; the job's GPUs are put back to the node type's declared layout
  (``mig.default_layout``: dynamic = the default, static = the declared layout, a drift is repaired).
  A layout that cannot be restored while NVML works is a ``HealthFailure`` (the next job would get a
  GPU in the wrong layout, and in static mode slurmd's inventory would lie); NVML not usable at all
  (no driver) is a log line. An MPS daemon that had to be killed is logged (it is gone).
"""

from __future__ import annotations

import os

from slurm_gpu.node.model import HealthFailure, JobSetupError, Unavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from slurm_gpu.node.model import HookContext
    from slurm_gpu.sharing.mig import Layout
    from slurm_gpu.sharing.token import JobRequest, Outcome

MAX_STEP_TIMEOUT_S = 30.0


def _timeout(ctx: HookContext) -> float:
    return max(1.0, min(MAX_STEP_TIMEOUT_S, float(ctx.config["nvml_timeout_s"]) - 5))


def _indices(ctx: HookContext) -> list[int]:
    return sorted({g.index for g in ctx.gpus if g.index is not None})


def job_request(ctx: HookContext, env: Mapping[str, str]) -> JobRequest | None:
    """The job's request token (``SLURM_JOB_COMMENT``); a bad token is the job's fault."""
    comment = env.get("SLURM_JOB_COMMENT", "")
    if "slurm-gpu:" not in comment:
        return None  # the common case: no parsing, no imports
    from slurm_gpu.sharing.token import RequestError, decode

    try:
        return decode(comment)
    except RequestError as exc:
        raise JobSetupError(str(exc)) from None


def load_site_policy(ctx: HookContext) -> Any:
    """The policy named by hooks.conf ``policy`` (parsed once, cached in the root-only state
    directory); None when none is configured. Unavailable when it cannot be read."""
    path = str(ctx.config["policy"])
    if not path:
        return None
    from slurm_gpu.errors import PolicyError

    cache = None
    state_dir = str(ctx.config["state_dir"])
    if state_dir:
        from slurm_gpu.adapters.fs import open_dir

        try:
            os.close(open_dir(state_dir, create=True, mode=0o700))  # root's and private: the parse cache's place
            cache = os.path.join(state_dir, "policy-cache")
        except OSError:
            cache = None
    try:
        if cache:
            from slurm_gpu.adapters.policy_cache import load_policy_cached

            return load_policy_cached(path, cache)
        from slurm_gpu.policy import load_policy

        return load_policy(path)
    except (OSError, PolicyError) as exc:
        raise Unavailable(f"policy {path}: {str(exc).splitlines()[0][:300]}") from None


def node_mig_mode(ctx: HookContext) -> str:
    """This node's ``mig_mode`` in the policy ("none" when no policy or no node type), remembered in
    ``state_dir/policy-cache/node-<node>.json`` while no file of the policy changes (the epilog of
    every GPU job asks; parsing the policy for it would cost 20-150 ms)."""
    import json

    path = str(ctx.config["policy"])
    state_dir = str(ctx.config["state_dir"])
    if not path:
        return "none"
    name = f"node-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in ctx.job.node)[:100]}.json"
    from slurm_gpu.adapters.cache import Cache, file_stamps

    cache = Cache(os.path.join(state_dir, "policy-cache") if state_dir else None, 1 << 16)
    raw = cache.get(name, path)
    if raw is not None:
        try:
            data = json.loads(raw.decode())
            stamp = data.get("stamp")
            if data.get("policy") == path and isinstance(stamp, list) and stamp and \
                    file_stamps([str(s[0]) for s in stamp if isinstance(s, list) and s]) == stamp:
                return str(data.get("mode", "none"))
        except (ValueError, AttributeError):
            pass
    policy = load_site_policy(ctx)
    nt = _node_type(ctx, policy)
    mode = str(nt.mig_mode) if nt is not None else "none"
    stamp = file_stamps([os.path.realpath(path), *getattr(policy, "includes", ())])
    if stamp is not None:
        cache.put(name, path, json.dumps({"policy": path, "stamp": stamp, "mode": mode}).encode())
    return mode


def _node_type(ctx: HookContext, policy: Any) -> Any:
    from slurm_gpu.sharing.mig import node_type_of

    return node_type_of(policy, ctx.job.node) if policy is not None else None


def _setup_failed(ctx: HookContext, what: str, out: Outcome) -> JobSetupError:
    if out.fault == "node":
        ctx.log(f"job {ctx.job.job_id}: {what} failed on the node's side: {out.message}; the job fails, "
                "nothing drained")
    return JobSetupError(out.message or f"{what} failed")


def _exports(ctx: HookContext, out: Outcome) -> None:
    ctx.task_lines.extend(f"export {k}={v}" for k, v in out.env)


class MigStep:
    """Per-job (dynamic) MIG layouts in the prolog; the declared layout back in the epilog."""

    name = "mig"
    fails_job = True  # the runner: any exception of the prolog fails the job (never open, never a drain)

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = env if env is not None else os.environ

    def prolog(self, ctx: HookContext) -> None:
        req = job_request(ctx, self.env)
        if req is None or not req.mig:
            return
        from slurm_gpu.sharing.mig import MigError, check_request

        gpus = _indices(ctx)
        if ctx.node is None or not gpus:
            raise JobSetupError("MIG requested, but NVML is not usable on this node" if ctx.node is None
                                else "MIG requested, but the job holds no GPU of this node")
        policy = load_site_policy(ctx)
        nt = _node_type(ctx, policy)
        if nt is None:
            raise JobSetupError(f"node {ctx.job.node} serves no per-job MIG layouts (no policy node type; "
                                "hooks.conf policy)")
        try:
            layout = check_request(req.mig, policy, nt)
        except MigError as exc:
            raise JobSetupError(str(exc)) from None
        ctx.state[self.name] = {"gpus": gpus, "layout": layout.describe()}
        from slurm_gpu.adapters import gpu_config

        out = gpu_config.setup_mig(gpus, layout, _timeout(ctx))
        if not out.ok:
            raise _setup_failed(ctx, "MIG setup", out)
        ctx.log(f"job {ctx.job.job_id}: MIG {layout.describe()} on GPU {','.join(map(str, gpus))}")
        _exports(ctx, out)

    def epilog(self, ctx: HookContext) -> None:
        noted = ctx.state.get(self.name)
        gpus = set(_indices(ctx))
        if isinstance(noted, dict) and isinstance(noted.get("gpus"), list):
            gpus |= {i for i in noted["gpus"] if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 1024}
        parents = ctx.state.get("mig_parents")
        if not gpus and isinstance(parents, list) and parents:
            self._check_static_slices(ctx, sorted({i for i in parents if isinstance(i, int)
                                                   and not isinstance(i, bool) and 0 <= i < 1024}))
            return
        if not gpus or node_mig_mode(ctx) == "none":
            return  # the common case: one small JSON read, no policy parse
        policy = load_site_policy(ctx)
        nt = _node_type(ctx, policy)
        if nt is None:
            return
        from slurm_gpu.sharing.mig import default_layout

        layout: Layout | None = default_layout(nt)
        if layout is None:
            return  # mig_mode none: slurm-gpu leaves MIG alone
        if ctx.node is None:
            raise Unavailable("MIG layout not checked (NVML not usable)")
        from slurm_gpu.adapters import gpu_config

        out = gpu_config.restore_mig(sorted(gpus), layout, _timeout(ctx))
        if out.ok:
            if out.message:
                ctx.log(f"job {ctx.job.job_id}: {out.message} (node type {nt.name}, mig_mode {nt.mig_mode})")
            return
        raise HealthFailure(f"GPU {','.join(map(str, sorted(gpus)))} MIG layout not restored to "
                            f"{layout.describe()}: {out.message}"[:180])


    def _check_static_slices(self, ctx: HookContext, parents: list[int]) -> None:
        """A static-MIG job holds slices, not whole GPUs: the layout of their parent GPUs (what slurmd detected
        at start and schedules; the prolog found the job's slices there) is compared with the policy's
        ``mig_layout``. A difference is the node's misconfiguration: logged, never rebuilt here (slurmd's
        inventory would then lie), no job failed, nothing drained."""
        if not parents or ctx.node is None or node_mig_mode(ctx) != "static":
            return
        policy = load_site_policy(ctx)
        nt = _node_type(ctx, policy)
        if nt is None:
            return
        from slurm_gpu.adapters import gpu_config
        from slurm_gpu.sharing.mig import default_layout, drifted

        layout = default_layout(nt)
        if layout is None:
            return
        try:
            states, geo = gpu_config.read_mig(parents, _timeout(ctx))
        except Exception as exc:  # noqa: BLE001 - a read that fails says nothing about the layout
            ctx.log(f"job {ctx.job.job_id}: MIG layout of GPU {','.join(map(str, parents))} not read: {exc}"[:300])
            return
        self._check_detected(ctx, nt)
        for i in drifted(states, layout, geo, parents):
            have = "+".join(g.profile for g in states[i].sorted().instances) or "no instances"
            ctx.log(f"job {ctx.job.job_id}: node misconfigured: GPU {i}'s MIG layout is {have}, not the policy's "
                    f"{layout.describe()} (node type {nt.name}, mig_mode static): slurmd schedules the slices it "
                    "detected; not rebuilt, nothing drained")

    def _check_detected(self, ctx: HookContext, nt: Any) -> None:
        """The node's MIG devices now (every GPU's, from NVML) against what slurmd detected when it started and
        slurmctld schedules (the node's registered ``Gres=``, ``scontrol show node``, bounded by
        ``drain_timeout_s``). A difference means jobs are given slices the driver no longer has, or never
        given ones it has: logged as the node's misconfiguration (slurmd detects again when it restarts),
        never rebuilt, no job failed, nothing drained. A failing read is one log line."""
        from slurm_gpu.adapters import gpu_config
        from slurm_gpu.adapters.gpu_node import run_tool
        from slurm_gpu.sharing.mig import inventory_differences, present_inventory, registered_inventory
        from slurm_gpu.slurm.records import parse_node_records

        node = ctx.job.node
        try:
            rc, out, err = run_tool([str(ctx.config["scontrol"]), "show", "node", "-o", node],
                                    float(ctx.config["drain_timeout_s"]))
            records = [r for r in parse_node_records(out) if r.name == node] if rc == 0 else []
            if not records:
                ctx.log(f"job {ctx.job.job_id}: MIG devices not compared with slurmd's: scontrol show node {node}: "
                        f"{(err or out).strip()[:200] or f'exit {rc}'}")
                return
            present = present_inventory(gpu_config.read_mig_node(_timeout(ctx)))
        except Exception as exc:  # noqa: BLE001 - a read that fails says nothing about the inventory
            ctx.log(f"job {ctx.job.job_id}: MIG devices not compared with slurmd's: {exc}"[:300])
            return
        registered = registered_inventory(((g.gres_type, g.count) for g in records[0].gres if g.name == "gpu"),
                                          str(nt.gpu_type or ""))
        diffs = inventory_differences(registered, present)
        if diffs:
            ctx.log(f"job {ctx.job.job_id}: node misconfigured: its MIG devices are not what slurmd detected and "
                    f"schedules ({'; '.join(diffs)}; node type {nt.name}, mig_mode static): slurmd detects them "
                    "when it starts; not rebuilt, nothing drained"[:600])


class MpsStep:
    """A per-job MPS control daemon for an ``mps=`` request; always stopped in the epilog."""

    name = "mps"
    fails_job = True

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = env if env is not None else os.environ

    def _base(self, ctx: HookContext) -> str:
        return str(ctx.config["mps_dir"])

    def prolog(self, ctx: HookContext) -> None:
        req = job_request(ctx, self.env)
        if req is None or req.mps_pct is None:
            return
        from slurm_gpu.sharing.mps import MpsError, plan

        gpus = _indices(ctx)
        uid = ctx.job.uid
        gid_text = self.env.get("SLURM_JOB_GID", "").strip()
        if ctx.node is None or not gpus:
            raise JobSetupError("MPS requested, but NVML is not usable on this node" if ctx.node is None
                                else "MPS requested, but the job holds no GPU of this node")
        if uid is None or not (gid_text.isascii() and gid_text.isdigit()) or not self._base(ctx):
            raise JobSetupError("MPS requested, but the job's uid/gid (SLURM_JOB_UID/GID) or mps_dir is missing")
        policy = load_site_policy(ctx)
        if policy is None:
            raise JobSetupError("MPS requested, but no site policy is configured on this node (hooks.conf policy)")
        try:
            p = plan(ctx.job.job_id, req.mps_pct, policy.isolation, base=self._base(ctx))
        except MpsError as exc:
            raise JobSetupError(str(exc)) from None
        from slurm_gpu.adapters import gpu_config

        ctx.state[self.name] = {"gpus": gpus}
        extra = {"LD_LIBRARY_PATH": self.env["LD_LIBRARY_PATH"]} if self.env.get("LD_LIBRARY_PATH") else None
        out = gpu_config.start_mps(p, gpus, uid, int(gid_text), mps_control=str(ctx.config["mps_control"]),
                                   path=str(ctx.config["mps_path"]), timeout_s=_timeout(ctx), extra_env=extra)
        if not out.ok:
            raise _setup_failed(ctx, "MPS setup", out)
        ctx.log(f"job {ctx.job.job_id}: MPS daemon started, {req.mps_pct}% on GPU {','.join(map(str, gpus))}")
        _exports(ctx, out)

    def epilog(self, ctx: HookContext) -> None:
        base = self._base(ctx)
        if not base or not os.path.lexists(os.path.join(base, str(ctx.job.job_id))):
            return  # no daemon was started for this job (or the epilog ran already): no NVML, no imports
        from slurm_gpu.sharing.mps import MpsError, teardown_plan

        try:
            p = teardown_plan(ctx.job.job_id, base=base)
        except MpsError as exc:
            raise Unavailable(str(exc)) from None
        from slurm_gpu.adapters import gpu_config

        out = gpu_config.stop_mps(p, mps_control=str(ctx.config["mps_control"]), path=str(ctx.config["mps_path"]),
                                  timeout_s=_timeout(ctx))
        if not out.ok:
            raise Unavailable(f"MPS teardown: {out.message}")
        ctx.log(f"job {ctx.job.job_id}: MPS " + (out.message or "daemon stopped, compute modes restored"))


__all__ = ["MigStep", "MpsStep", "job_request", "load_site_policy"]
