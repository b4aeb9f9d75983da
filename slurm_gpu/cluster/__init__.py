# SPDX-License-Identifier: Apache-2.0
"""The cluster view (``view``, ``model``, ``picture``), ``why`` a job waits, job GPU efficiency
(``jobstats``), usage reports (``report``, ``autoscale``, ``report_html``, ``charts``), the exporter's text
(``exporter``) and the hooks' AdminComment summary codec (``summary_codec``): pure, built on
slurm_gpu.slurm.records. Edges: ``jobstats_io`` and ``report_io`` (their Slurm calls and files).
May import: the ground floor, ``slurm``, ``policy`` and ``adapters`` (edges only). Never ``cli``, ``node`` or ``lab``.
"""
