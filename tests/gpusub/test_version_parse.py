# SPDX-License-Identifier: Apache-2.0
"""gpusub parses the command line as the detected sbatch does: 24.11 refuses --exclusive with
--oversubscribe, 22.05 keeps the last one (both seen with the real sbatch of each release)."""

from __future__ import annotations

import os
import subprocess
import sys

GPUSUB = os.path.join(os.path.dirname(sys.executable), "gpusub")


def _dry_run(tmp_path, version: str, *opts: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "GPUSUB_"))}
    env.update(GPUSUB_SLURM_VERSION=version, SLURM_CONF="/no/such/slurm.conf", HOME=str(tmp_path))
    return subprocess.run([GPUSUB, "--dry-run", *opts, str(script)], capture_output=True, text=True,
                          timeout=60, env=env)


def test_24_11_refuses_exclusive_with_oversubscribe(tmp_path):
    r = _dry_run(tmp_path, "24.11.5", "--exclusive", "--oversubscribe")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--exclusive and --oversubscribe" in r.stderr


def test_22_05_keeps_the_last_of_the_two(tmp_path):
    r = _dry_run(tmp_path, "22.05.8", "--exclusive", "--oversubscribe")
    assert r.returncode == 0, r.stderr
    directives = [ln for ln in r.stdout.splitlines() if ln.startswith("#SBATCH")]
    assert "#SBATCH --oversubscribe" in directives and "#SBATCH --exclusive" not in directives
