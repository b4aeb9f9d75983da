# SPDX-License-Identifier: Apache-2.0
"""The sbatch/scontrol adapter: output parsing (texts Slurm printed in the lab) and version detection."""

from __future__ import annotations

import os
import shutil

import pytest

from slurm_gpu.adapters.slurm import SbatchCli
from slurm_gpu.errors import SlurmUnreachable
from slurm_gpu.slurm.records import one_line, parse_kv_line, parse_test_only


def test_test_only_answer_22_05():
    r = parse_test_only("sbatch: Job 5 to start at 2026-11-29T20:40:23 using 8 processors on nodes vm "
                        "in partition batch\n")
    assert (r.job_id, r.start, r.processors, r.nodes, r.partition) == (5, "2026-11-29T20:40:23", 8, "vm", "batch")


def test_test_only_answer_with_preemption_24_11():
    r = parse_test_only("sbatch: Job 45 to start at 2026-11-29T21:00:00 using 1 processors on nodes node1 in "
                         "partition interactive\nsbatch:   Preempts: 39,40\n")
    assert r.job_id == 45 and r.partition == "interactive" and r.preempts == (39, 40)


def test_one_line_keeps_the_reason():
    err = ("sbatch: error: Batch job submission failed: Requested node configuration is not available\n")
    assert one_line(err, "") == "Batch job submission failed: Requested node configuration is not available"
    err = "sbatch: error: s_p_parse_file: cannot stat file x\nsbatch: fatal: Unable to process configuration file\n"
    assert one_line(err, "") == "Unable to process configuration file"


def test_kv_line_of_scontrol_o():
    rec = parse_kv_line("JobId=24 JobName=ex3.sh JobState=FAILED Reason=NonZeroExitCode Dependency=(null) "
                        "ExitCode=3:0 NodeList=a100n1 Command=/tmp/a b/job.sh")
    assert rec["JobState"] == "FAILED" and rec["ExitCode"] == "3:0" and rec["Command"] == "/tmp/a b/job.sh"


def test_missing_slurm_conf_fails_before_running_anything(tmp_path):
    cli = SbatchCli(env={"SLURM_CONF": str(tmp_path / "none.conf"), "PATH": os.environ["PATH"]})
    with pytest.raises(SlurmUnreachable, match="none.conf: no such file"):
        cli.submit([], "/bin/true")


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs the Slurm client (sbatch)")
def test_version_detection_needs_no_controller_and_is_cached(tmp_path):
    env = {"PATH": os.environ["PATH"], "SLURM_CONF": "/no/such/file", "HOME": str(tmp_path)}
    version = SbatchCli(env=env, cache_dir=str(tmp_path)).version()
    assert version[0] >= 22
    cache = (tmp_path / "sbatch-version").read_text()
    assert cache.splitlines()[1].endswith("{}.{:02d}.{}".format(*version))
    # the cached answer is used while the binary's path+mtime match
    (tmp_path / "sbatch-version").write_text(cache.splitlines()[0] + "\nslurm 99.01.0\n")
    assert SbatchCli(env=env, cache_dir=str(tmp_path)).version() == (99, 1, 0)
    # a different key (another binary or mtime) is re-probed
    (tmp_path / "sbatch-version").write_text("/other/sbatch:1\nslurm 99.01.0\n")
    assert SbatchCli(env=env, cache_dir=str(tmp_path)).version() == version


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs the Slurm client (sbatch)")
def test_help_text_is_cached_per_slurm_conf(tmp_path):
    """Two clusters (two slurm.conf) keep one `sbatch --help` entry each: neither evicts the other."""
    confs = []
    for name in ("a", "b"):
        conf = tmp_path / f"{name}.conf"
        conf.write_text(f"ClusterName={name}\nSlurmctldHost=localhost\n")
        confs.append(str(conf))
    cache_dir = tmp_path / "cache"

    def cli(conf: str) -> SbatchCli:
        return SbatchCli(env={"PATH": os.environ["PATH"], "SLURM_CONF": conf, "HOME": str(tmp_path)},
                         cache_dir=str(cache_dir))

    texts = [cli(c).help_text() for c in confs]
    assert all("Usage: sbatch" in t for t in texts)
    entries = sorted(p.name for p in cache_dir.iterdir() if p.name.startswith("sbatch-help"))
    assert len(entries) == 2, entries
    for entry in entries:  # mark each entry: the next call for its conf reads the mark, sbatch is not run
        path = cache_dir / entry
        path.write_text(path.read_text().splitlines()[0] + f"\nmarked {entry}\n")
        path.chmod(0o600)
    assert {cli(c).help_text() for c in confs} == {f"marked {e}\n" for e in entries}
