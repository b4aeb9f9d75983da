# SPDX-License-Identifier: Apache-2.0
"""Training memory estimate and the smallest GPU allocation of a policy that fits it.

Formula (documented in docs/policy.md)::

    state_gb    = params * (weight_b + grad_b + optimizer_b) / 1e9
    per_gpu_gb  = state_gb / n * (1 + ACTIVATION_FRACTION) + OVERHEAD_GB     (n GPUs, states sharded)

bf16/fp16 mixed precision keeps fp32 master weights inside the optimizer state: Adam = 4 (master)
+ 4 + 4 (two moments) = 12 bytes/param, SGD with momentum = 8, none = 0 (and no gradients:
inference or frozen weights). fp32 training: Adam = 8, SGD = 4.
"""

from __future__ import annotations

from slurm_gpu.plain import Record, record
from slurm_gpu.policy.model import Policy
from slurm_gpu.units import parse_param_count

__all__ = ["estimate_vram", "fit_vram", "no_fit_advice", "parse_param_count", "VramEstimate", "VramFit"]

ACTIVATION_FRACTION = 0.25  # activation allowance, as a share of the (sharded) states
OVERHEAD_GB = 2.0  # CUDA context, allocator slack, NCCL buffers, per GPU
PRECISIONS = ("bf16", "fp16", "fp32")
OPTIMIZERS = ("adam", "sgd", "none")
_WEIGHT_B = {"bf16": 2, "fp16": 2, "fp32": 4}
_OPT_B = {("mixed", "adam"): 12, ("mixed", "sgd"): 8, ("fp32", "adam"): 8, ("fp32", "sgd"): 4}
@record
class VramEstimate(Record):
    params: float
    precision: str
    optimizer: str
    bytes_per_param: int  # weights + gradients + optimizer states
    state_gb: float

    def per_gpu_gb(self, n_gpus: int = 1) -> float:
        return self.state_gb / max(1, n_gpus) * (1 + ACTIVATION_FRACTION) + OVERHEAD_GB


def estimate_vram(params: float, precision: str | None = None, optimizer: str | None = None) -> VramEstimate:
    """Bytes per parameter and total state for training (see module docstring). Raises ValueError."""
    precision = (precision or "bf16").lower()
    optimizer = (optimizer or "adam").lower()
    if precision not in PRECISIONS:
        raise ValueError(f"bad precision {precision!r}; accepted: {', '.join(PRECISIONS)}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"bad optimizer {optimizer!r}; accepted: {', '.join(OPTIMIZERS)}")
    params = parse_param_count(params)  # finite, > 0 and bounded
    w = _WEIGHT_B[precision]
    if optimizer == "none":
        b = w
    else:
        b = w + w + _OPT_B[("fp32" if precision == "fp32" else "mixed", optimizer)]
    return VramEstimate(params, precision, optimizer, b, params * b / 1e9)


@record
class VramFit(Record):
    gpu_type: str
    gpus: int
    per_gpu_gb: float
    estimate: VramEstimate
    suggestions: tuple[str, ...] = ()


def _counts(per_node: int, total: int) -> list[int]:
    """Candidate GPU counts: powers of two within a node, then whole nodes."""
    out = {n for n in (1, 2, 4, 8, 16) if n <= per_node}
    out |= {per_node * k for k in range(1, total // per_node + 1)} if per_node else set()
    return sorted(n for n in out if n <= total)


def fit_vram(policy: Policy, est: VramEstimate, gpu_types: tuple[str, ...] = ()) -> VramFit | None:
    """Smallest GPU count, then smallest memory (then policy order) whose per-GPU share fits."""
    options: list[tuple[int, float, int, str]] = []
    for order, gt in enumerate(policy.gpu_types):
        if gpu_types and gt.name not in gpu_types:
            continue
        per_node = max((nt.gpus for nt in policy.node_types if nt.gpu_type == gt.name), default=0)
        total = sum(nt.gpus * len(nt.nodes) for nt in policy.node_types if nt.gpu_type == gt.name)
        for n in _counts(per_node, total):
            if est.per_gpu_gb(n) <= gt.memory_gb:
                options.append((n, gt.memory_gb, order, gt.name))
                break
    if not options:
        return None
    n, _, _, name = min(options)
    tips: list[str] = []
    if n > 1:
        tips.append(f"the model needs {est.per_gpu_gb(1):.0f} GB on one GPU: shard weights, gradients and "
                    f"optimizer states over {n} GPUs (PyTorch FSDP or DeepSpeed ZeRO-3)")
        tips.append("activation checkpointing and gradient accumulation (smaller micro-batches) keep "
                    "activations inside the allowance")
    return VramFit(name, n, est.per_gpu_gb(n), est, tuple(tips))


def no_fit_advice(est: VramEstimate) -> str:
    return (f"{est.params / 1e9:.3g}B parameters at {est.bytes_per_param} bytes/param need "
            f"{est.per_gpu_gb(1):.0f} GB on one GPU; shard with FSDP/ZeRO-3, use activation checkpointing "
            "and gradient accumulation, an 8-bit optimizer, LoRA, or CPU offload")
