# SPDX-License-Identifier: Apache-2.0
"""classify(request, policy) -> Decision, as the ordered step table of :mod:`.steps` (see there)."""

from __future__ import annotations

from slurm_gpu.policy.classifier.steps import STEPS, classify

__all__ = ["STEPS", "classify"]
