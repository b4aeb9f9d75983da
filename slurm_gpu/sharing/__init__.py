# SPDX-License-Identifier: Apache-2.0
"""GPU sharing rules: MIG layouts and requests (``mig``), MPS shares (``mps``) and the request token in a
job's comment (``token``). Pure, on the ground floor.

Owns: the rules both sides of a job apply, the submitting side (the classifier's sharing step, the
sbatch parser's ``--mig``/``--mps`` values, gpusub) and the node side (the hooks' MIG and MPS steps).
May import: the ground floor (errors, units); ``policy.model`` for types only (TYPE_CHECKING).
"""
