# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu why``'s answer as text and as the documented ``--json`` object (docs/why.md); pure."""

from __future__ import annotations

from slurm_gpu.cluster.why import NOT_RESOURCES, Why
from slurm_gpu.jsontypes import JsonObject


def to_json(why: Why) -> JsonObject:
    """The documented ``--json`` object (docs/why.md)."""
    return {
        "job_id": why.job_id, "state": why.state, "pending": why.pending, "reason": why.reason,
        "blocker": why.blocker, "explanation": why.explanation, "user": why.user, "partition": why.partition,
        "qos": why.qos, "limit": why.limit._asdict() if why.limit else None,
        "request": None if why.ask is None else {
            "gpus": why.ask.gpus, "gpu_type": why.ask.gpu_type, "nodes": why.ask.nodes,
            "gpus_per_node": why.ask.per_node, "time_limit_min": why.ask.time_min},
        "start_estimate": why.start_estimate, "sched_nodes": why.sched_nodes,
        "could_run_on": list(why.could_run_on), "free_now": {t: dict(v) for t, v in why.free_now.items()},
        "alternatives": [{"gpus": a.gpus, "gpu_type": a.gpu_type, "nodes": list(a.nodes),
                          "gpusub_options": list(a.options), "text": a.text,
                          "slurm_estimate": a.slurm_estimate} for a in why.alternatives],
        "advice": list(why.advice),
    }


def lines(why: Why) -> list[str]:
    """The plain-words answer, one fact per line."""
    if not why.pending:
        return [why.explanation]
    ask = why.ask
    asked = "" if ask is None or not ask.gpus else f", {ask.gpus} {ask.gpu_type or 'GPU'}" + (
        f" on {ask.nodes} nodes" if ask.nodes > 1 else "")
    out = [f"job {why.job_id} ({why.user}, partition {why.partition}, QOS {why.qos}{asked}) is PENDING: "
           f"{why.reason or 'not yet evaluated'}",
           f"  why: {why.explanation}"]
    if why.limit is not None:
        out.append(f"  limit: {why.limit.text}")
    out += [f"  note: {a}" for a in why.advice]
    if why.could_run_on:
        out.append(f"  could run on: {', '.join(why.could_run_on)}")
    out.append(f"  Slurm's start estimate: {why.start_estimate or 'none yet'}"
               + (f" on {why.sched_nodes}" if why.sched_nodes else ""))
    free = ", ".join(f"{t}: " + (" ".join(f"{n}={c}" for n, c in v.items()) or "none") for t, v in why.free_now.items())
    if free:
        out.append(f"  free GPUs now: {free}")
    for alt in why.alternatives:
        out.append(f"  would start now: gpusub {' '.join(alt.options)} ... ({alt.text}"
                   + (f"; Slurm: {alt.slurm_estimate})" if alt.slurm_estimate else ")"))
    if ask is not None and ask.gpus and not why.alternatives and why.blocker not in NOT_RESOURCES:
        out.append("  no smaller or differently typed GPU request would start now")
    return out



__all__ = ["to_json", "lines"]
