# SPDX-License-Identifier: Apache-2.0
"""gpusub on heterogeneous jobs, as a user runs it (no Slurm needed): --explain shows each component's
decision, and the rendered script gives each component its own partition, QOS and typed GPUs after its
``#SBATCH hetjob`` separator, with the counts the user asked. The lab test is
tests/job_submit/test_hetjob_lab.py."""

from __future__ import annotations

import json

from tests.gpusub.test_cli import POLICY, gpusub

POL = {"GPUSUB_POLICY": POLICY}
CPU_THEN_GPU = "#!/bin/bash\n#SBATCH -t 60 -n 3\n#SBATCH hetjob\n#SBATCH -t 60 --gpus=1 -n 1\nsrun --het-group=1 true\n"


def _script(tmp_path, text: str) -> str:
    path = tmp_path / "het.sh"
    path.write_text(text)
    return str(path)


def test_explain_shows_each_component(tmp_path):
    path = _script(tmp_path, CPU_THEN_GPU)
    r = gpusub("--explain", "--json", path, env_extra=POL)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["accepted"] is True and len(data["components"]) == 2
    cpu, gpu = data["components"]
    assert cpu["accepted"] and cpu["class"] is None and cpu["added_options"] == []
    assert any("the CPU part of a GPU job" in x for x in cpu["reasons"])
    assert (gpu["class"], gpu["partition"], gpu["qos"], gpu["gres"]) == ("production", "batch", "normal", "gpu:h100:1")
    text = gpusub("--explain", path, env_extra=POL).stdout
    assert text.startswith("accepted: a heterogeneous job of 2 components\n")
    assert "hetjob component 0:\n  accepted: class (none)" in text
    assert "hetjob component 1:\n  accepted: class production" in text


def test_rendered_components_get_their_own_directives(tmp_path):
    r = gpusub("--dry-run", _script(tmp_path, CPU_THEN_GPU), env_extra=POL)
    assert r.returncode == 0, r.stderr
    head = r.stdout.split("\n\n", 1)[0]  # the rendered directives, before the payload
    assert "# Decision: class=-+production partition=-+batch qos=-+normal gres=-+gpu:h100:1 " in head
    lines = [x.removeprefix("#SBATCH ") for x in head.splitlines() if x.startswith("#SBATCH ")]
    sep = lines.index("hetjob")
    first, second = lines[:sep], lines[sep + 1:]
    assert "--ntasks=3" in first and "--time=60" in first
    assert not any(x.startswith(("--partition", "--qos", "--gpus", "--gres")) for x in first)  # CPU part: as given
    assert {"--partition=batch", "--qos=normal", "--ntasks=1", "--time=60"} <= set(second)
    assert "--gpus=h100:1" in second  # the untyped request typed, in its own component


def test_cpu_only_hetjob_is_refused_with_each_component(tmp_path):
    path = _script(tmp_path, "#!/bin/bash\n#SBATCH -t 60\n#SBATCH hetjob\n#SBATCH -t 60\ntrue\n")
    r = gpusub("--explain", "--json", path, env_extra=POL)
    data = json.loads(r.stdout)
    assert r.returncode == 1 and data["accepted"] is False and "GPU jobs only" in data["message"]
    r = gpusub("--dry-run", path, env_extra=POL)
    assert r.returncode == 1 and "GPU jobs only" in r.stderr and len(r.stderr.strip().splitlines()) == 1
