# SPDX-License-Identifier: Apache-2.0
"""The policy simulator's pure core: replays a job trace through the site policy (the classifier itself)
and a model of Slurm's scheduler (docs/simulate.md). ``engine.simulate(trace, policy, params)``.

Owns: traces and their readers (``traces``, ``trace_fields``, ``alibaba``, ``workloads``, ``validate``),
the model of the cluster and scheduler (``cluster``, ``queue``, ``scheduler``, ``backfill``, ``priority``,
``fairtree``, ``drf``, ``routing``, ``params``, ``engine``), sweeps (``settings``) and the summary
(``report``, ``report_html``). Edges: ``replay`` and ``run_files`` (the trace and result files).
May import: the ground floor (GROUND in tests/test_layers.py), the pure packages and cluster (its edges also
the adapters).
"""
