# SPDX-License-Identifier: Apache-2.0
"""Step ``check_sharing``: the slurm-gpu MIG/MPS token in the job's comment, checked against the policy.

``gpusub --mig 3g.40gb:2`` / ``--mps 25`` write the token (``slurm-gpu:mig=...`` / ``slurm-gpu:mps=...``,
:mod:`slurm_gpu.sharing.token`) into ``--comment``; a user may also write it by hand with plain sbatch.
Either way the job must hold whole GPUs of one type (the prolog sets the layout up, or starts the
per-job MPS daemon, on the GPUs Slurm gave the job), and:

- ``mig``: every node type of the chosen partition that carries the job's GPU type serves per-job
  layouts (``mig_mode: dynamic``) and offers each profile, within the 7 compute slices of a GPU
  (:func:`slurm_gpu.sharing.mig.check_request`, the prolog's own check);
- ``mps``: the share lies within ``isolation.mps_min_share_pct..mps_max_share_pct``
  (:func:`slurm_gpu.sharing.mps.check_share`).

A token that does not parse is one generic rejection (the details go to the reasons); the Lua mirror
(``check_sharing`` in job_submit/engine.lua) gives the same decisions and messages. A comment without
``slurm-gpu:`` costs one substring test: nothing is imported.
"""

from __future__ import annotations

from slurm_gpu.policy.classifier.state import State

PREFIX = "slurm-gpu:"  # slurm_gpu.sharing.token.PREFIX (not imported: most comments carry no token)
BAD_TOKEN = "bad slurm-gpu token in the job comment"
TOKEN_FIX = ("write slurm-gpu:mig=PROFILE[:COUNT][,PROFILE[:COUNT]...] (e.g. slurm-gpu:mig=3g.40gb:2) "
             "or slurm-gpu:mps=PERCENT (e.g. slurm-gpu:mps=25), once, in --comment")
WHOLE_GPUS = "a slurm-gpu MIG layout or MPS share needs whole GPUs of one type"
WHOLE_FIX = "ask for whole GPUs of one type (e.g. --gpus=a100:1), without a GPU fraction or MIG slice"
MIG_FIX = "use gpusub --mig with GPUs of a type whose nodes are in dynamic MIG mode, or a MIG slice (--gpu-fraction)"


def check_sharing(st: State) -> None:
    r = st.request
    comment = r.comment
    if not isinstance(comment, str) or PREFIX not in comment:
        return
    from slurm_gpu.sharing import token as token

    try:
        req = token.decode(comment)
    except token.RequestError as exc:
        st.reasons.append(f"slurm-gpu token: {exc}")
        raise st.reject("bad_request", TOKEN_FIX, why=BAD_TOKEN) from None
    if req is None:
        return
    if st.fraction is not None or st.gpus <= 0 or not st.gpu_type:
        raise st.reject("bad_request", WHOLE_FIX, why=WHOLE_GPUS)
    if req.mps_pct is not None:
        from slurm_gpu.sharing.mps import MpsError, check_share

        iso = st.policy.isolation
        try:
            check_share(req.mps_pct, iso)
        except MpsError as exc:
            raise st.reject("bad_request", f"ask for a share of {iso.mps_min_share_pct}-{iso.mps_max_share_pct}%",
                            why=str(exc)) from None
        st.reasons.append(f"MPS: a per-job MPS daemon on the job's {st.gpu_type} GPUs, "
                          f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={req.mps_pct}")
        return
    from slurm_gpu.sharing.mig import MigError, check_request

    part = st.partition
    assert part is not None  # place ran
    names = []
    for name in part.node_types:
        nt = st.policy.node_type(name)
        if nt is None or nt.gpu_type != st.gpu_type or nt.gpus <= 0:
            continue
        try:
            check_request(req.mig, st.policy, nt)
        except MigError as exc:
            raise st.reject("bad_request", MIG_FIX, why=str(exc)) from None
        names.append(nt.name)
    st.reasons.append(f"MIG: layout {token.format_mig_spec(req.mig)} on each {st.gpu_type} GPU of the job "
                      f"(node types {', '.join(names)}: dynamic MIG)")
