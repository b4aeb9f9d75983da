# SPDX-License-Identifier: Apache-2.0
"""classify(request, policy) -> Decision, as the ordered step table of :mod:`.steps` (see there);
classify_job(requests, policy): every component of a heterogeneous job (:mod:`.hetjob`)."""

from __future__ import annotations

from slurm_gpu.policy.classifier.hetjob import classify_job, job_verdict
from slurm_gpu.policy.classifier.steps import STEPS, classify

__all__ = ["STEPS", "classify", "classify_job", "job_verdict"]
