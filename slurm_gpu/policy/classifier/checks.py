# SPDX-License-Identifier: Apache-2.0
"""Steps ``check_request`` (sanity of the request) and ``fit_vram`` (GPUs from a model's size)."""

from __future__ import annotations

from slurm_gpu.policy.classifier.state import State, hint


def check_request(st: State) -> None:
    r = st.request
    for name in ("gpus", "gpus_per_node", "gpus_per_task", "gpus_per_socket", "ntasks_per_gpu", "nodes",
                 "ntasks", "ntasks_per_node", "cpus_per_task", "cpus_per_gpu", "mem_mb", "mem_per_gpu_mb",
                 "mem_per_cpu_mb"):
        v = getattr(r, name)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise st.reject("bad_request", f"give --{name.replace('_', '-')} a whole number >= 0",
                            why=f"{name} is {v!r}")
    if r.nodes == 0 or r.ntasks == 0:
        raise st.reject("bad_request", "ask for at least one node and one task", why="zero nodes or tasks")
    if r.time_limit_min is not None and (not isinstance(r.time_limit_min, int) or r.time_limit_min <= 0):
        raise st.reject("bad_request", "give --time as minutes or D-HH:MM:SS", why=f"time {r.time_limit_min!r}")
    if r.gpu_fraction is not None:
        f = r.gpu_fraction
        if not isinstance(f, (int, float)) or isinstance(f, bool) or not 0 < f < 1:
            raise st.reject("bad_request", "a GPU fraction lies strictly between 0 and 1 (e.g. 0.25)",
                            why=f"gpu_fraction {f!r}")
        if r.total_gpus:
            raise st.reject("bad_request", "ask for either a GPU fraction or whole GPUs",
                            why="both a GPU fraction and whole GPUs")
        st.fraction = float(f)
    st.gpus = r.total_gpus
    st.gpu_type = r.gpu_type or None
    mig = st.policy.mig_type(st.gpu_type)
    if mig is not None:  # --gres=gpu:a100_1g.10gb:1: a MIG slice asked for by its gres type
        if st.gpus != 1 or len(r.gpu_types) != 1:
            raise st.reject("bad_request", f"ask for one MIG slice alone: --gres=gpu:{st.gpu_type}:1",
                            why=f"{st.gpus} GPU(s) of {len(r.gpu_types)} type(s) with the MIG slice {st.gpu_type}")
        st.gpu_type, st.mig_profile, st.gpus, st.fraction = mig[0], mig[1], 0, mig[2] / 7
    elif st.gpu_type and st.policy.gpu_type(st.gpu_type) is None:
        names = [g.name for g in st.policy.gpu_types]
        raise st.reject("unknown_gpu_type", f"{hint(st.gpu_type, names)}GPU types: {', '.join(names)}",
                        gpu_type=st.gpu_type)
    st.reasons.append(f"policy {st.policy.name}: request asks for "
                      + (f"the MIG slice {st.mig_profile} of {st.gpu_type}" if st.mig_profile else
                         f"a {st.fraction:g} GPU fraction" if st.fraction is not None else
                         f"{st.gpus} {st.gpu_type or 'untyped'} GPU(s)" if st.gpus else "no GPUs"))



def fit_vram(st: State) -> None:
    r = st.request
    if r.model_params is None:
        return
    from slurm_gpu.policy import vram

    try:
        est = vram.estimate_vram(r.model_params, r.precision, r.optimizer)
    except (ValueError, TypeError) as exc:
        raise st.reject("bad_request", "--precision bf16|fp16|fp32, --optimizer adam|sgd|none, --model-params 7B",
                        why=str(exc)) from None
    st.reasons.append(f"VRAM estimate: {est.bytes_per_param} bytes/param x {est.params:.3g} params = "
                      f"{est.state_gb:.1f} GB of states; {est.per_gpu_gb(1):.1f} GB on one GPU with activations")
    if st.gpus or st.fraction is not None:
        if st.gpus and st.gpu_type and st.policy.gpu_type(st.gpu_type):
            mem = st.policy.gpu_type(st.gpu_type).memory_gb  # type: ignore[union-attr]
            if est.per_gpu_gb(st.gpus) > mem:
                st.warnings.append(f"estimated {est.per_gpu_gb(st.gpus):.0f} GB per GPU exceeds the {mem:g} GB of "
                                   f"{st.gpu_type} even sharded over {st.gpus} GPUs")
        return
    fit = vram.fit_vram(st.policy, est, (st.gpu_type,) if st.gpu_type else ())  # a type without a count: fit it
    if fit is None:
        raise st.reject("vram", "reduce memory (see above) or ask for GPUs explicitly with --gpus",
                        why=vram.no_fit_advice(est))
    st.gpus, st.gpu_type = fit.gpus, fit.gpu_type
    st.reasons.append(f"VRAM fit: {fit.gpus} x {fit.gpu_type} ({fit.per_gpu_gb:.1f} GB needed per GPU)")
    st.warnings.extend(fit.suggestions)


