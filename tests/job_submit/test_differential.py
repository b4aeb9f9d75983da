# SPDX-License-Identifier: Apache-2.0
"""The generated job_submit.lua decides what the Python classifier decides, on the same options.

Hypothesis writes sbatch / salloc / srun command lines of the shapes users type (every GPU form, typed,
untyped, unknown and mixed types, node/task counts, time forms, partitions and QOS known and unknown,
accounts, arrays, host lists). Each becomes (a) the JobRequest gpusub's parser reads and the Python
classifier's decision, and (b) the job_desc slurmctld hands the plugin on 22.05 and on 24.11 (the
measured model, slurm_gpu.slurm.job_desc), in Slurm's spelling of each release and without the
``gres`` prefix, with the nil / NO_VAL sentinels. The Lua engine (lupa.lua51) must give the same
accept/reject, partition, QOS, gres and message for every case, for every example policy.
With CI=true each policy gets >= 20,000 cases (5,200 command lines x 2 releases x 2 spellings). A third
of the command lines carry a ``--comment``, often with the slurm-gpu MIG/MPS token (valid or not).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.policy import load_policy
from slurm_gpu.slurm.job_desc import ModelGap

pytest.importorskip("lupa.lua51")
from tests.job_submit.lua_harness import Plugin, lua_decision, py_decision, python_side, spellings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
POLICIES = sorted(p.stem for p in (ROOT / "examples" / "policies").glob("*.yaml") if p.stem != "smallgroup-hardware")
POLICIES.append("mig/university-mig")  # dynamic and static MIG node types (the slurm-gpu token's policy checks)
VERSIONS = ((22, 5, 8), (24, 11, 5))
CI = os.environ.get("CI") == "true"
COMMAND_LINES = 5200 if CI else 250
REQUIRED = 20000 if CI else 0

TYPES = ["h100", "a100", "v100", "H100", "a100_1g.10gb", "a100_3g.40gb", "a100_7g.80gb", "h100_1g.10gb", "1g.10gb"]
GRES_TYPES = [*TYPES, "gpu"]  # --gres=gpu:gpu:1 names the type "gpu" (--gpus=gpu:1 is a 24.11 oddity: not here)
PARTITIONS = ["batch", "interactive", "spot", "mig", "prod", "train", "dev", "gpu", "nope", "batch,spot", "spot,batch"]
QOS = ["normal", "debug", "high", "spot", "standard", "prod", "dev", "sweep", "short", "bogus"]
ACCOUNTS = ["lab", "hpc-priority", "nsf-ai-grant", "prod-retrain"]
TIMES = ["10", "30", "45", "0:30", "1:00:00", "2:00:00", "4:00:00", "8:00:00", "12:00:00", "1-00:00:00",
         "2-00:00:00", "3-00:00:00", "7-00:00:00", "UNLIMITED", "90", "100-00:00:00"]
COUNTS = st.one_of(st.integers(1, 4), st.integers(1, 20), st.sampled_from([32, 64, 129, 1000]))


@st.composite
def gpu_options(draw: st.DrawFn) -> list[str]:
    typed = draw(st.sampled_from(["untyped", "typed", "typed"]))

    def spec(n: int) -> str:
        return f"{draw(st.sampled_from(TYPES))}:{n}" if typed == "typed" else str(n)

    form = draw(st.sampled_from(["none", "gpus", "per-node", "gres", "per-task", "per-socket", "per-gpu",
                                 "two-types", "job+node", "gres-bare"]))
    n = draw(COUNTS)
    if form == "none":
        return []
    if form == "gpus":
        return [f"--gpus={spec(n)}"]
    if form == "per-node":
        return [f"--gpus-per-node={spec(min(n, 16))}"]
    if form == "gres":
        t = draw(st.sampled_from(GRES_TYPES))
        return [f"--gres=gpu:{t}:{n}" if typed == "typed" else f"--gres=gpu:{n}"]
    if form == "gres-bare":
        return ["--gres=gpu"]
    if form == "per-task":
        return [f"--gpus-per-task={spec(min(n, 8))}", f"-n{draw(st.integers(1, 8))}"]
    if form == "per-socket":
        return [f"--gpus-per-socket={spec(min(n, 4))}", "--sockets-per-node=2"]
    if form == "per-gpu":
        return [f"-n{draw(st.integers(1, 16))}", f"--ntasks-per-gpu={draw(st.integers(1, 4))}"]
    if form == "two-types":
        return [f"--gpus=h100:{min(n, 8)},a100:{draw(st.integers(1, 4))}"]
    per = draw(st.integers(1, 8))
    return [f"--gpus={spec(per * draw(st.integers(1, 3)))}", f"--gpus-per-node={spec(per)}"]


# --constraint values (sbatch(1)'s grammar: &, ",", |, [..], counts, parentheses), met by some nodes of
# the example policies, by none, and unreadable ones (left to slurmctld on both sides)
CONSTRAINTS = ["h100", "a100", "mig", "v100", "foo", "h100&mig", "a100,mig", "h100|a100", "[h100|a100]",
               "h100*1&a100*1", "[h100*1&a100*1]", "(h100|a100)&mig", "(h100&mig)*2", "h100|a100*1", "nvlink",
               "ampere", "hopper&nvlink", "gpu", "h100&", "(h100", "h100)", "*2", "a100|foo", "foo|bar",
               "[h100|a100]&mig", "h100&a100", "a100_3g.40gb"]

# --comment values: the slurm-gpu MIG/MPS token (docs/mig_mps.md), valid, out of policy and malformed,
# alone or among other words; check_sharing must decide them alike on both sides.
TOKENS = ["slurm-gpu:mig=3g.40gb:2", "slurm-gpu:mig=1g.10gb:2,2g.20gb:1", "slurm-gpu:mig=3g.40gb",
          "slurm-gpu:mig=7g.80gb", "slurm-gpu:mig=3g.40gb:3", "slurm-gpu:mig=1g.10gb+me", "slurm-gpu:mig=4g.40gb",
          "slurm-gpu:mig=1g.10gb:7", "slurm-gpu:mps=25", "slurm-gpu:mps=10", "slurm-gpu:mps=50", "slurm-gpu:mps=5",
          "slurm-gpu:mps=100", "slurm-gpu:mps=007",
          # malformed
          "slurm-gpu:mps=0", "slurm-gpu:mps=101", "slurm-gpu:mps=", "slurm-gpu:mps=2.5", "slurm-gpu:mps=1000",
          "slurm-gpu:mig=", "slurm-gpu:mig=3g.40gb:8", "slurm-gpu:mig=3g.40gb:", "slurm-gpu:mig=a100_3g.40gb",
          "slurm-gpu:mig=3g.040gb", "slurm-gpu:mig=1g.10gb,1g.10gb", "slurm-gpu:mig=3G.40GB", "slurm-gpu:foo=1",
          "slurm-gpu:mig", "slurm-gpu:", "slurm-gpu:mig=3g.40gb:2:1", "slurm-gpu:mig=3g.40gb,",
          "slurm-gpu:mig=" + ",".join(f"1g.{k}gb" for k in range(10, 18)), "slurm-gpu:mig=1g.1000gb",
          "slurm-gpu:mig=1g.10000gb", "slurm-gpu:mig=" + ",".join(f"1g.{k}gb" for k in range(10, 17)),
          "slurm-gpu:mig=1g.10gb" + "+me" * 40]
OTHER_WORDS = ["run-42", "sweep lr=0.1", "x\tslurm-gpu", "xslurm-gpu:mps=25", "note:", "SLURM-GPU:mps=25"]


@st.composite
def comments(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.one_of(st.sampled_from(TOKENS), st.sampled_from(OTHER_WORDS)), min_size=1, max_size=3))
    return draw(st.sampled_from([" ", "  ", "\t"])).join(words)


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    tool = draw(st.sampled_from(["sbatch", "sbatch", "sbatch", "salloc", "srun"]))
    args = ["--hold"] if tool == "sbatch" else ["--no-shell"] if tool == "salloc" else []
    args += draw(gpu_options())
    if draw(st.booleans()):
        args.append(f"-t{draw(st.sampled_from(TIMES))}")
    if draw(st.integers(0, 2)) == 0:
        args.append(f"--partition={draw(st.sampled_from(PARTITIONS))}")
    if draw(st.integers(0, 3)) == 0:
        args.append(f"--qos={draw(st.sampled_from(QOS))}")
    if draw(st.integers(0, 2)) == 0:
        args.append(f"-A{draw(st.sampled_from(ACCOUNTS))}")
    shape = draw(st.sampled_from(["", "", "N", "N-range", "ntasks-per-node", "n+ntasks-per-node", "w", "c"]))
    if shape == "N":
        args.append(f"-N{draw(st.integers(1, 3))}")
    elif shape == "N-range":
        args.append("--nodes=1-2")
    elif shape == "ntasks-per-node":
        args.append(f"--ntasks-per-node={draw(st.integers(1, 8))}")
    elif shape == "n+ntasks-per-node":
        args += [f"-n{draw(st.integers(1, 16))}", f"--ntasks-per-node={draw(st.integers(1, 8))}"]
    elif shape == "w":
        args.append(draw(st.sampled_from(["-wh100n1", "-wh100n[1-2]", "--nodelist=a100n1,h100n2"])))
    elif shape == "c":
        args.append(f"-c{draw(st.integers(1, 16))}")
    if draw(st.integers(0, 2)) == 0:  # the type resolution that respects -C and -x, and check_nodes
        args.append(f"--constraint={draw(st.sampled_from(CONSTRAINTS))}")
    if draw(st.integers(0, 5)) == 0:
        args.append(draw(st.sampled_from(["-xa100n1", "--exclude=h100n[1-2]", "-xnode1", "-xh100n1,gpu01"])))
    if draw(st.integers(0, 6)) == 0:
        args.append(draw(st.sampled_from(["--gres=shard:1", "--gres=mps:25", "--gres=gpu:1,shard:2"])))
    if tool == "sbatch" and draw(st.integers(0, 3)) == 0:
        args.append(draw(st.sampled_from(["--array=0-3", "--array=1,3%1"])))
    if draw(st.integers(0, 2)) == 0:
        args.append(f"--comment={draw(comments())}")
    args = draw(st.permutations(args))
    return [tool, *args, "job.sh" if tool == "sbatch" else "true"] if tool != "salloc" else [tool, *args]


@pytest.mark.parametrize("policy_name", POLICIES)
def test_lua_decides_as_the_python_classifier(policy_name: str) -> None:
    policy = load_policy(str(ROOT / "examples" / "policies" / f"{policy_name}.yaml"))
    plugin = Plugin(policy)
    seen: Counter[str] = Counter()

    # derandomized: the coverage asserted below (both outcomes, an accepted -C on a featured policy) is
    # rare on some policies (mig/university-mig: one run drew 976 cases, 96 accepted, no accepted -C),
    # so a random draw failed now and then; the same lines every run keep the check and its coverage
    @settings(max_examples=COMMAND_LINES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(argv=command_lines())
    def check(argv: list[str]) -> None:
        for version in VERSIONS:
            try:
                _request, decision, descs = python_side(argv, version, policy)
            except (ValueError, SlurmGpuError, ModelGap):
                seen["refused by the client"] += 1  # sbatch refuses it too: never reaches the plugin
                continue
            want = py_decision(decision)
            for jd in spellings(descs[0]):
                got = lua_decision(plugin.decide(jd))
                assert got == want, f"{' '.join(argv)} on {version}: Lua {got} != Python {want}\njob_desc {jd}"
                seen["cases"] += 1
                seen["accepted" if want["accepted"] else "rejected"] += 1
                if "--constraint=" in " ".join(argv):
                    seen["constraint accepted" if want["accepted"] else "constraint rejected"] += 1
                if "slurm-gpu:" in " ".join(argv):
                    seen["token accepted" if want["accepted"] else "token rejected"] += 1

    check()
    assert seen["cases"] >= REQUIRED, seen
    assert seen["accepted"] and seen["rejected"], seen  # both outcomes exercised
    assert seen["token rejected"], seen  # the slurm-gpu token is checked
    # -C is judged on both sides; a policy whose nodes carry no feature accepts no constraint (fabric-lab)
    featured = any(t.features for t in policy.gpu_types) or any(t.features for t in policy.node_types)
    assert seen["constraint rejected"] and (seen["constraint accepted"] or not featured), seen
    # every check_sharing outcome, on every token: tests/job_submit/test_sharing_token.py
