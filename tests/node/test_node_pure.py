# SPDX-License-Identifier: Apache-2.0
"""The node hooks' pure core: config, Slurm's GPU ids, id mapping, health judgement, Xid lines, stats."""

from __future__ import annotations

from slurm_gpu.node import health, stats
from slurm_gpu.node.model import (
    GpuId,
    drain_reason,
    gpu_tokens,
    job_from_env,
    map_gpus,
    parse_config,
    task_line_ok,
)


def test_config_defaults_file_and_env():
    cfg, problems = parse_config("state_dir = /srv/s\n# c\n\nxid_drain = 79, 48\nhealth_in_prolog = on\n", "f",
                                 {"SLURM_GPU_HOOKS_STATE_DIR": "/srv/env", "SLURM_GPU_HOOKS_JOBMAP_DIR": ""})
    assert problems == []
    assert cfg["state_dir"] == "/srv/env" and cfg["jobmap_dir"] == "" and cfg["xid_drain"] == (79, 48)
    assert cfg["health_in_prolog"] is True and cfg["kill_grace_s"] == 5 and cfg["gpu_ids"] == "index"
    cfg, problems = parse_config("xid_drain = 79,x\nnvml_timeout_s = -1\naccounting = maybe\n", "f", {})
    assert problems == ["f:1: xid_drain: expected a comma list of numbers, got '79,x'",
                        "f:2: nvml_timeout_s: expected a whole number, got '-1'",
                        "f:3: accounting: expected yes/no, got 'maybe'"]
    assert cfg["xid_drain"][0] == 48 and cfg["nvml_timeout_s"] == 60 and cfg["accounting"] is True


def test_gpu_ids_as_slurm_gives_them():
    assert gpu_tokens("0,1") == (("0", "1"), [])
    assert gpu_tokens("4-7,2") == (("4", "5", "6", "7", "2"), [])
    assert gpu_tokens(" 03 , 3 ,") == (("3",), [])
    uuid = "GPU-00000000-0000-0000-0000-000000000003"
    assert gpu_tokens(f"{uuid},1") == ((uuid, "1"), [])
    assert gpu_tokens("1,$(x),7-2") == (("1",), ["GPU id '$(x)' not understood; skipped",
                                                 "GPU id '7-2' not understood; skipped"])


def test_job_from_env():
    assert job_from_env({"SLURM_JOB_GPUS": "0"}) is None
    j = job_from_env({"SLURM_JOB_ID": "17", "SLURM_JOB_UID": "1001", "SLURMD_NODENAME": "n1",
                      "SLURM_JOB_GPUS": "", "CUDA_VISIBLE_DEVICES": "4,5"})
    assert (j.job_id, j.uid, j.node, j.gpu_tokens) == (17, 1001, "n1", ("4", "5"))
    j = job_from_env({"SLURM_JOB_ID": "17", "SLURM_JOB_GPUS": "1", "CUDA_VISIBLE_DEVICES": "0"})
    assert j.gpu_tokens == ("1",) and j.uid is None
    assert job_from_env({"SLURM_JOB_ID": "17", "CUDA_VISIBLE_DEVICES": "NoDevFiles"}).gpu_tokens == ()


def test_map_by_index_minor_and_uuid():
    devs = (GpuId("", 0, 3, "00000000:1B:00.0", "GPU-a"), GpuId("", 1, 0, "00000000:43:00.0", "GPU-b"))
    got, missing = map_gpus(("1", "GPU-a", "4"), devs, "index")
    assert [(g.slurm_id, g.index, g.minor, g.bus_id) for g in got] == [
        ("1", 1, 0, "00000000:43:00.0"), ("GPU-a", 0, 3, "00000000:1B:00.0")]
    assert missing == ["4"]
    got, missing = map_gpus(("0", "3"), devs, "minor")
    assert [g.index for g in got] == [1, 0] and missing == []
    got, _ = map_gpus(("2",), None, "index")
    assert (got[0].index, got[0].bus_id) == (2, "")
    assert map_gpus(("2",), None, "minor")[0][0].index is None


def test_drain_reason_is_one_clean_line():
    assert drain_reason(["GPU 1 lost", "GPU 1 lost", 'x"y\nz']) == "slurm-gpu: GPU 1 lost; x y z"
    long = drain_reason(["a" * 300])
    assert len(long) == 200 and long.endswith("...")


def test_task_lines():
    assert task_line_ok("export CUDA_VISIBLE_DEVICES=MIG-1,MIG-2")
    assert task_line_ok("unset GPU_DEVICE_ORDINAL") and task_line_ok("print any text")
    for bad in ("export X", "export 1X=2", "export A B=1", "unset", "echo hi", "export X=1\nrm", "rm -rf /"):
        assert not task_line_ok(bad), bad


def test_health_judgement():
    assert health.judge(health.Reading("GPU 0")) == []
    assert health.judge(health.Reading("GPU 0", ecc_volatile_uncorrected=0, retired_pending=False,
                                       remap_pending=False, remap_failure=False)) == []
    assert health.judge(health.Reading("GPU 1", lost=True, ecc_volatile_uncorrected=5)) == [
        "GPU 1 lost (fallen off the bus / NVML GPU_IS_LOST)"]
    assert health.judge(health.Reading("GPU 2", ecc_volatile_uncorrected=3, retired_pending=True,
                                       remap_pending=True, remap_failure=True)) == [
        "GPU 2 3 uncorrectable ECC error(s) since driver load", "GPU 2 retired pages pending (GPU reset needed)",
        "GPU 2 row remapping failed"]


def test_xid_records():
    rec = "3,2187,96451234,-;NVRM: Xid (PCI:0000:9a:00): 79, pid=1234, name=python, GPU has fallen off the bus."
    x = health.parse_kmsg(rec)
    assert (x.ts_us, x.bus, x.code) == (96451234, "0000:9a:00", 79)
    assert health.bus_key("00000000:9A:00.0") == "0000:9a:00" == health.bus_key("0000:9A:00")
    assert health.parse_kmsg("6,1,2,-;usb 1-1: new device") is None
    assert health.parse_kmsg("3,1,x,-;NVRM: Xid (PCI:0000:9a:00): 79") is None
    assert health.parse_kmsg("3,1,5,-;NVRM: Xid (PCI:0000:9a:00): abc") is None
    found = health.job_xids([rec, rec.replace("96451234", "5"), rec.replace("9a:00", "1b:00")],
                            ["00000000:9A:00.0"], 1000)
    assert [(x.ts_us, x.code) for x in found] == [(96451234, 79)]
    fail, notes = health.xid_failures(found + [health.Xid(1, "0000:9a:00", 13, "")], (79,), {"0000:9a:00": "GPU 3"})
    assert fail == ["GPU 3 Xid 79 during the job"] and notes == ["GPU 3 Xid 13 during the job"]


def test_stats():
    s = [stats.Sample(1, 90, 20, 3 << 30, 3000), stats.Sample(2, 10, 60, 1 << 30, 1000)]
    assert stats.summarise(s) == {"processes": 2, "gpu_util_pct": 70.0, "mem_util_pct": 30.0,
                                  "max_memory_bytes": 3 << 30}
    assert stats.summarise([stats.Sample(1, 50, 10, 5, 0), stats.Sample(2, 0, 0, 9, 0)])["gpu_util_pct"] == 25.0
    assert stats.summarise([])["gpu_util_pct"] is None
    assert stats.energy_j(1000, 3500) == 2.5 and stats.energy_j(None, 5) is None and stats.energy_j(9, 5) is None
    rec = stats.record(7, 1001, "n1", {"index": 0, "uuid": 'GPU-"x"', "bus_id": "b"}, stats.summarise([]), None,
                       None, 10.0)
    text = stats.prom_text(rec)
    assert text == ("# HELP slurm_gpu_job_end_timestamp_seconds When the job's epilog ran.\n"
                    "# TYPE slurm_gpu_job_end_timestamp_seconds gauge\n"
                    'slurm_gpu_job_end_timestamp_seconds{gpu="0",uuid="GPU-\\"x\\"",jobid="7"} 10.0\n')
    assert stats.jobmap_text(7) == "7\n"


def test_owner_job_of_a_process():
    assert health.job_of_cgroup("0::/system.slice/slurmstepd.scope/job_17/step_0/user/task_0\n") == 17
    assert health.job_of_cgroup("5:devices:/slurm_node2/uid_2002/job_7/step_batch\n4:cpu:/\n") == 7
    assert health.job_of_cgroup("0::/user.slice/user-1001.slice/session-3.scope\n") is None
    assert health.job_of_cgroup("0::/job_x/\n") is None
    assert health.job_of_cgroup("0::/system.slice/h100n1_slurmstepd.scope/job_18/step_extern\n") == 18
    assert health.job_of_cgroup("4:freezer:/slurm/uid_1001/job_19/step_0/task_0\n") == 19
    # where a user can make cgroups (systemd delegates user@U.service's subtree) or name them: no job
    for text in ("0::/user.slice/user-1001.slice/user@1001.service/app.slice/job_999/\n",
                 "0::/user.slice/user-1001.slice/user@1001.service/system.slice/slurmstepd.scope/job_999\n",
                 "1:name=systemd:/user.slice/user-1001.slice/user@1001.service/slurm/uid_1/job_999\n",
                 "0::/system.slice/other.scope/job_999\n", "0::/job_999/step_0\n", "0::/slurm/job_999/\n",
                 "0::/system.slice/slurmstepd.scope/job_\u0663/\n",
                 "0::/system.slice/slurmstepd.scope/job_99999999999/"):
        assert health.job_of_cgroup(text) is None, text
    assert health.job_of_environ(b"PATH=/bin\0SLURM_JOB_ID=4242\0X=1") == 4242
    assert health.job_of_environ(b"SLURM_JOB_IDX=1\0SLURM_JOB_ID=\0") is None
    assert health.job_of_environ("SLURM_JOB_ID=\u0663".encode()) is None


def test_hook_config_typed_dict_names_every_default_with_its_kind():
    """HookConfig (the TypedDict of the hooks' settings, declared for the type checker only) has one key
    per DEFAULTS entry, and parse_config's value for each key is of the type HookConfig declares."""
    import ast
    from pathlib import Path

    import slurm_gpu.node.model as model

    tree = ast.parse(Path(model.__file__).read_text(encoding="utf-8"))
    (cls,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "HookConfig"]
    declared = {n.target.id: ast.unparse(n.annotation) for n in cls.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert list(declared) == list(model.DEFAULTS)
    python_type = {"str": str, "int": int, "bool": bool, "tuple[int, ...]": tuple}
    cfg, problems = parse_config("", "f", {})
    assert problems == []
    for key, annotation in declared.items():
        assert type(cfg[key]) is python_type[annotation], (key, cfg[key], annotation)
    assert all(type(x) is int for x in cfg["xid_drain"])
