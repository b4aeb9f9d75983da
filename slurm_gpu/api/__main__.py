# SPDX-License-Identifier: Apache-2.0
"""``python -m slurm_gpu.api FOLDER KEY [--array OFFSET]``: the job side (slurm_gpu/api/worker.py)."""

from __future__ import annotations

import sys

from slurm_gpu.api.worker import main

sys.exit(main())
