# SPDX-License-Identifier: Apache-2.0
"""The real-world case table (tests/sbatch/cases.py) against the parser, by hand-written expectations.
The same table runs against the real sbatch in test_sbatch_lab.py."""

import importlib.util
import os
import sys

import pytest

from slurm_gpu.slurm.sbatch.parse import parse_submission, to_argv

_spec = importlib.util.spec_from_file_location("sbatch_cases", os.path.join(os.path.dirname(__file__), "cases.py"))
cases = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("sbatch_cases", cases)
_spec.loader.exec_module(cases)
CASES = cases.CASES

FAKE_DEP = "4242"


def script_of(case) -> str:
    return "#!/bin/bash\n" + case.header + "srun hostname\n"


def fill(text: str, dep: str) -> str:
    return text.replace("{dep}", dep)


def test_there_are_at_least_60_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_effective_options(case):
    argv = [fill(a, FAKE_DEP) for a in case.argv] + ["job.sh", *case.args]
    sub = parse_submission(argv, case.env, fill(script_of(case), FAKE_DEP), version=(22, 5))
    expect = {k: (fill(v, FAKE_DEP) if isinstance(v, str) else v) for k, v in case.expect.items()}
    assert dict(sub.options) == expect
    assert sub.script_path == "job.sh" and sub.script_args == case.args
    # the options alone, on a command line, give the same effective options again
    again = parse_submission(to_argv(sub.options) + ["job.sh"], {}, "#!/bin/bash\nsrun hostname\n", version=(22, 5))
    assert again.options == sub.options
