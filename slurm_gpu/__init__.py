# SPDX-License-Identifier: Apache-2.0
"""slurm-gpu: GPU jobs on Slurm that land in the right place and run well there.

The core (policy, topology, binding, rendering) is pure: it takes data and returns data.
Slurm, NVML and the filesystem are adapters under :mod:`slurm_gpu.adapters`.
"""

__version__ = "0.1.0"
