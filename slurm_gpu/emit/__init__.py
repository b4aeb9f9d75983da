# SPDX-License-Identifier: Apache-2.0
"""Emit Slurm configuration from the site policy (pure: policy model + topologies in, text/argv out).

- :mod:`.slurm_conf`: ``NodeName=`` and ``PartitionName=`` lines;
- :mod:`.gres_conf`: gres.conf (``AutoDetect=off`` + one line per GPU group, cores from the topology);
- :mod:`.sacctmgr`: the QOS as ``sacctmgr -i`` argv lists.

``topologies`` maps each node type's name to its parsed :class:`slurm_gpu.topology.model.Topology`
(the caller reads the files). The lab (:mod:`slurm_gpu.lab.config`) and ``slurm-gpu admin emit`` both
call these functions, so a real cluster gets the same text as the lab.

May import: the ground floor (GROUND in tests/test_layers.py), topology, policy, placement and sharing
(``install_lua``, an edge, also the adapters).
"""
