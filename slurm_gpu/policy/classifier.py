# SPDX-License-Identifier: Apache-2.0
"""classify(request, policy) -> Decision: pure, deterministic and total.

Steps (each appends to ``reasons``): sanity checks, VRAM fit (only when model_params is given and
no GPU count/type), class choice (explicit ``--class`` or the first class whose match rules hold),
partition and QOS (the user's kept when allowed), GPU type (typed enforcement), QOS and partition
limits, node split, time, defaults, class options. Any unexpected exception becomes a rejection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurm_gpu.policy.model import MESSAGE_FIELDS, JobClass, Partition, Policy
from slurm_gpu.request import Decision, JobRequest


class _Reject(Exception):
    def __init__(self, message: str, fix: str | None):
        super().__init__(message)
        self.message, self.fix = message, fix


@dataclass
class _State:
    request: JobRequest
    policy: Policy
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    gpus: int = 0
    gpu_type: str | None = None
    fraction: float | None = None
    job_class: str | None = None
    partition: str | None = None
    qos: str | None = None

    def reject(self, key: str, fix: str | None = None, **values: object) -> _Reject:
        full = {f: "" for f in MESSAGE_FIELDS[key]} | values
        return _Reject(self.policy.message(key, **full), fix)

    def add(self, opt: str) -> None:
        if opt not in self.options:
            self.options.append(opt)


def _hint(word: str, choices: list[str]) -> str:
    import difflib  # only on rejections: keeps the accept path's imports small

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def classify(request: JobRequest, policy: Policy) -> Decision:
    st = _State(request, policy)
    try:
        _classify(st)
    except _Reject as rej:
        st.reasons.append(f"rejected: {rej.message}")
        return Decision(False, job_class=st.job_class, partition=st.partition, qos=st.qos,
                        warnings=tuple(st.warnings), reasons=tuple(st.reasons), message=rej.message,
                        fix=rej.fix)
    except Exception as exc:  # totality: a bug must not crash gpusub; the message says so
        msg = f"internal classifier error: {type(exc).__name__}: {exc}"
        return Decision(False, reasons=(*st.reasons, msg), message=msg, fix="report this to the site admins")
    gres = getattr(st, "_gres", None)
    return Decision(True, job_class=st.job_class, partition=st.partition, qos=st.qos, gres=gres,
                    gpu_type=st.gpu_type, gpus=st.gpus, added_options=tuple(st.options),
                    warnings=tuple(st.warnings), reasons=tuple(st.reasons))


def _sanity(st: _State) -> None:
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
    if st.gpu_type and st.policy.gpu_type(st.gpu_type) is None:
        names = [g.name for g in st.policy.gpu_types]
        raise st.reject("unknown_gpu_type", f"{_hint(st.gpu_type, names)}GPU types: {', '.join(names)}",
                        gpu_type=st.gpu_type)
    st.reasons.append(f"policy {st.policy.name}: request asks for "
                      + (f"a {st.fraction:g} GPU fraction" if st.fraction is not None else
                         f"{st.gpus} {st.gpu_type or 'untyped'} GPU(s)" if st.gpus else "no GPUs"))


def _vram(st: _State) -> None:
    r = st.request
    if r.model_params is None:
        return
    from slurm_gpu.policy.vram import estimate_vram, fit_vram, no_fit_advice

    try:
        est = estimate_vram(r.model_params, r.precision, r.optimizer)
    except (ValueError, TypeError) as exc:
        raise st.reject("bad_request", "--precision bf16|fp16|fp32, --optimizer adam|sgd|none, --model-params 7B",
                        why=str(exc)) from None
    st.reasons.append(f"VRAM estimate: {est.bytes_per_param} bytes/param x {est.params:.3g} params = "
                      f"{est.state_gb:.1f} GB of states; {est.per_gpu_gb(1):.1f} GB on one GPU with activations")
    if st.gpus or st.fraction is not None or st.gpu_type:
        if st.gpus and st.gpu_type and st.policy.gpu_type(st.gpu_type):
            mem = st.policy.gpu_type(st.gpu_type).memory_gb  # type: ignore[union-attr]
            if est.per_gpu_gb(st.gpus) > mem:
                st.warnings.append(f"estimated {est.per_gpu_gb(st.gpus):.0f} GB per GPU exceeds the {mem:g} GB of "
                                   f"{st.gpu_type} even sharded over {st.gpus} GPUs")
        return
    fit = fit_vram(st.policy, est)
    if fit is None:
        raise st.reject("vram", "reduce memory (see above) or ask for GPUs explicitly with --gpus",
                        why=no_fit_advice(est))
    st.gpus, st.gpu_type = fit.gpus, fit.gpu_type
    st.reasons.append(f"VRAM fit: {fit.gpus} x {fit.gpu_type} ({fit.per_gpu_gb:.1f} GB needed per GPU)")
    st.warnings.extend(fit.suggestions)


def _mismatch(st: _State, c: JobClass) -> str | None:
    r, m, pol = st.request, c.match, st.policy
    if m.gpu_fraction is True and st.fraction is None:
        return "needs a GPU fraction"
    if m.gpu_fraction is False and st.fraction is not None:
        return "does not take GPU fractions"
    if m.min_gpus is not None and st.gpus < m.min_gpus:
        return f"{st.gpus} GPUs < min_gpus {m.min_gpus}"
    if m.max_gpus is not None and st.gpus > m.max_gpus:
        return f"{st.gpus} GPUs > max_gpus {m.max_gpus}"
    if m.max_time_min is not None:
        part = pol.partition(c.partition)
        t = r.time_limit_min or (part.default_time_min or part.max_time_min if part else None)
        if t is None or t > m.max_time_min:
            return f"time {t if t is not None else 'unlimited'} min > max_time {m.max_time_min} min"
    if m.array is not None and bool(r.array) != m.array:
        return "needs an array job" if m.array else "does not take array jobs"
    if m.interactive is not None and r.interactive != m.interactive:
        return "needs an interactive session" if m.interactive else "does not take interactive sessions"
    if m.gpu_types and st.gpu_type and st.gpu_type not in m.gpu_types:
        return f"GPU type {st.gpu_type} not in {', '.join(m.gpu_types)}"
    if m.accounts and r.account not in m.accounts:
        return f"account {r.account or '(none)'} not in {', '.join(m.accounts)}"
    if m.users and r.user not in m.users:
        return f"user {r.user or '(unknown)'} not in {', '.join(m.users)}"
    if m.groups and not set(r.groups) & set(m.groups):
        return f"groups not in {', '.join(m.groups)}"
    if st.gpus and st.fraction is None and st.gpu_type and st.gpu_type not in pol.partition_gpu_types(c.partition):
        return f"partition {c.partition} has no {st.gpu_type} GPUs"
    return None


def _choose_class(st: _State) -> JobClass:
    r, pol = st.request, st.policy
    names = [c.name for c in pol.classes]
    if r.job_class:
        c = pol.job_class(r.job_class)
        if c is None:
            raise st.reject("unknown_class", f"{_hint(r.job_class, names)}classes: {', '.join(names)}",
                            job_class=r.job_class)
        why = _mismatch(st, c)
        if why:
            raise st.reject("class_not_allowed", f"drop --class {c.name} or change the request ({why})",
                            job_class=c.name, why=why)
        st.reasons.append(f"class {c.name}: chosen with --class")
        return c
    matching: list[JobClass] = []
    for c in pol.classes:
        if c.match.explicit and not (r.partition and r.partition == c.partition):
            st.reasons.append(f"class {c.name}: skipped (only with --class {c.name})")
            continue
        why = _mismatch(st, c)
        st.reasons.append(f"class {c.name}: " + (f"no ({why})" if why else "matches"))
        if not why:
            matching.append(c)
            if not r.partition:
                break
    if not matching:
        opt_in = [c.name for c in pol.classes if c.match.explicit]
        fix = "change the request to fit a class" + (f", or opt in with --class {'|'.join(opt_in)}" if opt_in else "")
        raise st.reject("no_class", fix)
    chosen = next((c for c in matching if c.partition == r.partition), matching[0])
    if r.partition and chosen.partition == r.partition and chosen is not matching[0]:
        st.reasons.append(f"class {chosen.name}: preferred because it maps to the requested partition")
    return chosen


def _placement(st: _State, c: JobClass) -> Partition:
    from dataclasses import replace

    r, pol = st.request, st.policy
    part = pol.partition(c.partition)
    assert part is not None  # validated: class partitions exist
    if r.partition and r.partition != part.name:
        user = pol.partition(r.partition)
        names = [p.name for p in pol.partitions]
        if user is None:
            raise st.reject("unknown_partition", f"{_hint(r.partition, names)}drop --partition (class {c.name} "
                            f"uses {part.name}) or use one of {', '.join(names)}", partition=r.partition)
        st.reasons.append(f"partition {user.name}: kept as requested (class {c.name} would use {part.name})")
        part = user
        if c.qos and part.allowed_qos and c.qos not in part.allowed_qos:
            c = replace(c, qos=None)  # the class's QOS is not allowed there: use the partition's default
    else:
        st.reasons.append(f"partition {part.name}: from class {c.name}")
    st.partition = part.name
    qname = r.qos or c.qos or part.default_qos
    if r.qos:
        if pol.qos_named(r.qos) is None:
            names = [q.name for q in pol.qos]
            raise st.reject("unknown_qos", f"{_hint(r.qos, names)}drop --qos or use one of "
                            f"{', '.join(part.allowed_qos or names)}", qos=r.qos)
        if part.allowed_qos and r.qos not in part.allowed_qos:
            raise st.reject("qos_not_allowed", f"drop --qos or use one of {', '.join(part.allowed_qos)}",
                            qos=r.qos, partition=part.name)
        st.reasons.append(f"qos {r.qos}: kept as requested")
    else:
        st.reasons.append(f"qos {qname or '(Slurm default)'}: " + ("from class" if c.qos else "partition default"))
    st.qos = qname
    if not r.partition or r.partition != part.name:
        st.add(f"--partition={part.name}")
    if qname and r.qos != qname:
        st.add(f"--qos={qname}")
    return part


def _classify(st: _State) -> None:
    from slurm_gpu.policy import resources

    _sanity(st)
    _vram(st)
    c = _choose_class(st)
    st.job_class = c.name
    part = _placement(st, c)
    if st.fraction is not None:
        resources.fraction(st, part)
    elif st.gpus:
        resources.whole_gpus(st, part)
    else:
        st.reasons.append("no GPUs requested: no gres")
    resources.time_limit(st, part)
    resources.defaults(st, c, part)
