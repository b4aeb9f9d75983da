# SPDX-License-Identifier: Apache-2.0
"""The node hooks: slurmd's Prolog/Epilog/TaskProlog and slurmctld's EpilogSlurmctld (docs/hooks.md).

Owns: the hooks' model and settings (``model``), GPU health judgement (``health``), per-job stats
(``stats``), the requeue decision of the EpilogSlurmctld (``requeue``) — those four are pure — and their
I/O edges: one run in this process (``entry``), the runner and its steps (``runner``, ``steps``,
``share_steps``: MIG and MPS, ``summary``: the job summary in AdminComment), the root-only files
(``files``), the per-node agent (``agent``), the EpilogSlurmctld run (``epilog_ctld``) and
``slurm-gpu admin install/check`` (``install``).
May import: the ground floor (errors, units, request), ``sharing``, ``checkpoint``, ``policy``,
``cluster.summary_codec``, ``emit`` (the job_submit.lua install) and ``adapters``. Never ``cli`` or ``lab``.
"""
