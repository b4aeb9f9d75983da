# SPDX-License-Identifier: Apache-2.0
"""Site policy: the model, loading/validation, classification, VRAM fit and explanations.

Names are resolved lazily (PEP 562) so ``import slurm_gpu.policy`` costs almost nothing.

Owns: the one schema declaration (``model`` with ``kinds``; ``fields`` and ``schema`` read it), hardened
loading (``reader``, ``yamlload``, ``load``, ``build``, ``validate``, ``cache``: a Policy from its JSON
form), ``lint``, ``vram``, ``durations``, ``explain`` and the classifier (``classifier/``: an ordered step
table mirrored by the generated job_submit.lua).
May import: the ground floor (GROUND in tests/test_layers.py), sharing and checkpoint (its edge modules also
the adapters).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Policy": "model", "GpuType": "model", "NodeType": "model", "Partition": "model", "Qos": "model",
    "JobClass": "model", "Match": "model", "Defaults": "model", "Isolation": "model",
    "load_policy": "load", "check_policy": "load", "CheckResult": "load",
    "classify": "classifier", "classify_job": "classifier", "job_verdict": "classifier",
    "explain_lines": "explain",
    "estimate_vram": "vram", "fit_vram": "vram", "parse_param_count": "vram",
    "parse_duration_min": "durations", "parse_duration_s": "durations",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"slurm_gpu.policy.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'slurm_gpu.policy' has no attribute {name!r}")
