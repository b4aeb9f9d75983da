# SPDX-License-Identifier: Apache-2.0
"""gpusub: a batch script submitted as sbatch would, classified, typed and placed (docs/gpusub.md).

Owns: the submission flow (``gpusub``: prepare, render, submit, explain, dry-run, JSON), following a job
to its end (``follow``), ``--mig``/``--mps`` as a submission (``gpu_share``, pure), the usage text
(``usage``).
May import: the core (slurm, policy, placement, render, sharing, checkpoint, topology, emit) and
``adapters``. Never ``cli``, ``node``, ``cluster``, ``sim`` or ``lab``.
"""
