# SPDX-License-Identifier: Apache-2.0
"""The generated job_submit.lua under Lua 5.1 (lupa.lua51, the Lua that slurmctld links), with a
``slurm`` table that records what the plugin logs; and the Python side of the same case: a command line
as gpusub's parser reads it (the JobRequest) and as the job_desc model says slurmctld hands it over.

Test support only: the differential, fuzz and idempotence tests use it."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from lupa import lua51

from slurm_gpu.emit.job_submit import compile_policy
from slurm_gpu.policy.classifier import classify
from slurm_gpu.policy.model import Policy
from slurm_gpu.request import Decision, JobRequest
from slurm_gpu.slurm.job_desc import job_descs_for, strip_interactive
from slurm_gpu.slurm.sbatch.parse import parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request

SLURM_STUB = """
slurm = {SUCCESS = 0, ERROR = -1, ESLURM_INVALID_GRES = 2072, NO_VAL = 4294967294, NO_VAL16 = 65534,
         NO_VAL64 = 18446744073709551614, INFINITE = 4294967295}
SLURM_GPU_LOG = {}
local function logger(kind)
  return function(fmt, ...)
    local ok, text = pcall(string.format, fmt, ...)
    SLURM_GPU_LOG[#SLURM_GPU_LOG + 1] = {kind, ok and text or tostring(fmt)}
  end
end
slurm.log_user, slurm.log_info, slurm.log_error = logger("user"), logger("info"), logger("error")
slurm.log_debug, slurm.log_verbose = logger("debug"), logger("verbose")
SLURM_GPU_TEST = {}
"""
USER = "labuser"


class Plugin:
    """One compiled policy loaded into a fresh Lua 5.1 state."""

    def __init__(self, policy: Policy, text: str | None = None) -> None:
        self.policy = policy
        self.text = text if text is not None else compile_policy(policy)
        self.lua = lua51.LuaRuntime(unpack_returned_tuples=True, register_eval=False)
        self.lua.execute(SLURM_STUB)
        rc = self.lua.execute(self.text)
        assert rc == 0, f"the script returned {rc!r}, not slurm.SUCCESS"
        g = self.lua.globals()
        self.engine = g.SLURM_GPU_TEST.engine
        self.submit_fn = g.slurm_job_submit
        self.modify_fn = g.slurm_job_modify
        self.g = g

    def table(self, fields: Mapping[str, Any]) -> Any:
        """A Lua table of the fields (None: absent, as Lua reads an unset string)."""
        t = self.lua.table()
        for k, v in fields.items():
            if v is not None:
                t[k] = self.lua.table_from(v) if isinstance(v, (list, dict)) else v
        return t

    def decide(self, job_desc: Mapping[str, Any]) -> dict[str, Any]:
        """The engine's decision for a job_desc (classify only: the job_desc is not changed)."""
        r = self.engine.request_from_job_desc(self.table(job_desc), job_desc.get("user_name"))
        d = self.engine.classify(self.engine.P, r)
        return {k: d[k] for k in ("accepted", "partition", "qos", "gres", "message")}

    def submit(self, job_desc: Mapping[str, Any], uid: int = 1001) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        """slurm_job_submit: (return code, the job_desc after the call, what it logged)."""
        self.g.SLURM_GPU_LOG = self.lua.table()
        t = self.table(job_desc)
        rc = self.submit_fn(t, self.lua.table(), uid)
        log = [(e[1], e[2]) for e in self.g.SLURM_GPU_LOG.values()]
        return rc, {k: t[k] for k in t}, log

    def modify(self, job_desc: Mapping[str, Any], job_rec: Mapping[str, Any], uid: int = 1001
               ) -> tuple[int, list[tuple[str, str]]]:
        self.g.SLURM_GPU_LOG = self.lua.table()
        rc = self.modify_fn(self.table(job_desc), self.table(job_rec), self.lua.table(), uid)
        return rc, [(e[1], e[2]) for e in self.g.SLURM_GPU_LOG.values()]


def python_side(argv: list[str], version: tuple[int, int, int], policy: Policy
                ) -> tuple[JobRequest, Decision, list[dict[str, Any]]]:
    """(request, the Python classifier's decision, the job_descs) for one command line. Raises what
    the parser raises for a command line sbatch refuses."""
    tool, args = posixpath.basename(argv[0]), list(argv[1:])
    descs = job_descs_for(argv, version)
    if tool != "sbatch":
        args = strip_interactive(args)
    sub = parse_submission(args, {}, None, version=version)
    request = to_job_request(sub, user=USER)._replace(interactive=tool != "sbatch")
    for d in descs:
        d["user_name"] = USER
        d["script"] = "#!/bin/sh\ntrue\n" if tool == "sbatch" else None
    return request, classify(request, policy), descs


def py_decision(d: Decision) -> dict[str, Any]:
    return {"accepted": d.accepted, "partition": d.partition if d.accepted else None,
            "qos": d.qos if d.accepted else None, "gres": d.gres if d.accepted else None,
            "message": d.message}


def lua_decision(raw: Mapping[str, Any]) -> dict[str, Any]:
    acc = bool(raw["accepted"])
    return {"accepted": acc, "partition": raw["partition"] if acc else None, "qos": raw["qos"] if acc else None,
            "gres": raw["gres"] if acc else None, "message": raw["message"]}


def unprefixed(job_desc: Mapping[str, Any]) -> dict[str, Any]:
    """The third spelling: TRES items without the ``gres:``/``gres/`` prefix (``gpu:h100:2``)."""
    out = dict(job_desc)
    for f in ("tres_per_job", "tres_per_node", "gres", "tres_per_socket", "tres_per_task"):
        v = out.get(f)
        if isinstance(v, str):
            out[f] = ",".join(i[5:] if i[:5] in ("gres:", "gres/") else i for i in v.split(","))
    return out


def spellings(job_desc: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    yield dict(job_desc)
    yield unprefixed(job_desc)
