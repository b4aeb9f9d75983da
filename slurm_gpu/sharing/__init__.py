# SPDX-License-Identifier: Apache-2.0
"""GPU sharing rules: MIG layouts and requests (``mig``), MPS shares (``mps``), the request token in a
job's comment (``token``) and gpusub's ``--mig``/``--mps``/``--gpu-fraction`` options (``gpu_share``).

Pure, on the ground floor: used by ``policy`` (the classifier's sharing step), ``slurm.sbatch`` (the
parser), ``submit`` and ``node``. May import only the ground floor (errors, units) and ``policy.model``.
"""
