# SPDX-License-Identifier: Apache-2.0
"""Real-world sbatch submissions: command line, SBATCH_* environment and #SBATCH header, with the
effective options sbatch gets, written by hand from sbatch(1) (precedence: cli > env > script).

Values are valid in the lab (policy examples/policies/university.yaml: partitions interactive, batch,
spot, mig; QOS debug, normal, high, spot; h100n[1-2] with 8 h100, a100n1 with 4 a100; account lab),
so the lab test can submit each case with --hold and compare Slurm's own record of the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # options before the script
    header: str  # the #SBATCH lines (and comments) after "#!/bin/bash"
    expect: dict  # effective options: canonical name -> value (None for a flag)
    env: dict = field(default_factory=dict)
    args: tuple[str, ...] = ()  # the script's own arguments
    needs_job: bool = False  # "{dep}" in argv/header/expect is replaced by a held job's id
    before: tuple[int, int] | None = None  # sbatch behaves so only in releases older than this one


def C(id, argv="", header="", expect=None, env=None, args=(), needs_job=False, before=None):
    import shlex

    return Case(id, tuple(shlex.split(argv)), header, expect or {}, env or {}, tuple(args), needs_job, before)


CASES: list[Case] = [
    # --- single-node GPU training ---
    C("gres-typed", "--gres=gpu:h100:1", "", {"gres": "gpu:h100:1"}),
    C("gres-untyped", "", "#SBATCH --gres=gpu:2\n", {"gres": "gpu:2"}),
    C("gpus-short", "-G 2", "", {"gpus": "2"}),
    C("gpus-typed", "--gpus=a100:2", "", {"gpus": "a100:2"}),
    C("gpus-per-node", "", "#SBATCH --gpus-per-node=h100:4\n#SBATCH --cpus-per-gpu=4\n",
      {"gpus-per-node": "h100:4", "cpus-per-gpu": "4"}),
    C("gpus-per-task", "-n 4 --gpus-per-task=1", "", {"ntasks": "4", "gpus-per-task": "1"}),
    C("ddp-8gpu", "", "#SBATCH -N 1\n#SBATCH --ntasks-per-node=8\n#SBATCH --gres=gpu:h100:8\n"
      "#SBATCH --cpus-per-task=2\n#SBATCH -t 12:00:00\n",
      {"nodes": "1", "ntasks-per-node": "8", "gres": "gpu:h100:8", "cpus-per-task": "2", "time": "12:00:00"}),
    C("ddp-2node", "", "#SBATCH --nodes=2 --ntasks-per-node=8 --gpus-per-node=8\n#SBATCH --time=1-00:00:00\n",
      {"nodes": "2", "ntasks-per-node": "8", "gpus-per-node": "8", "time": "1-00:00:00"}),
    C("mem-per-gpu", "--gres=gpu:a100:1 --mem-per-gpu=32G", "", {"gres": "gpu:a100:1", "mem-per-gpu": "32G"}),
    C("mem-node", "", "#SBATCH --mem=64G\n#SBATCH -c 8\n", {"mem": "64G", "cpus-per-task": "8"}),
    C("mem-per-cpu", "--mem-per-cpu=2000 -c 4", "", {"mem-per-cpu": "2000", "cpus-per-task": "4"}),
    C("gres-flags", "--gres=gpu:h100:2 --gres-flags=enforce-binding", "",
      {"gres": "gpu:h100:2", "gres-flags": "enforce-binding"}),
    C("ntasks-per-gpu", "--gpus=2 --ntasks-per-gpu=2", "", {"gpus": "2", "ntasks-per-gpu": "2"}),
    C("gpus-per-socket", "--gpus-per-socket=2 --sockets-per-node=1", "",
      {"gpus-per-socket": "2", "sockets-per-node": "1"}),
    C("cpus-per-gpu", "-G 1 --cpus-per-gpu=8", "", {"gpus": "1", "cpus-per-gpu": "8"}),
    # --- partitions, QOS, accounts, time ---
    C("partition-short", "-p interactive -q debug -t 20", "",
      {"partition": "interactive", "qos": "debug", "time": "20"}),
    C("partition-script", "", "#SBATCH --partition=batch\n#SBATCH --qos=high\n", {"partition": "batch", "qos": "high"}),
    C("spot", "", "#SBATCH -p spot\n#SBATCH -q spot\n#SBATCH --requeue\n",
      {"partition": "spot", "qos": "spot", "requeue": None}),
    C("mig", "-p mig --gres=gpu:a100:1", "", {"partition": "mig", "gres": "gpu:a100:1"}),
    C("account", "-A lab", "", {"account": "lab"}),
    C("time-mm-ss", "--time=5:30", "", {"time": "5:30"}),
    C("time-d-hh", "-t 1-12", "", {"time": "1-12"}),
    C("time-min", "--time=2:00:00 --time-min=30", "", {"time": "2:00:00", "time-min": "30"}),
    C("time-abbrev", "--time-m=45 --time 60", "", {"time-min": "45", "time": "60"}),
    # --- names, output, mail, comments ---
    C("job-name-spaces", "", '#SBATCH --job-name="llama 7b finetune"\n', {"job-name": "llama 7b finetune"}),
    C("job-name-single-quotes", "", "#SBATCH -J 'it \"works\"'\n", {"job-name": 'it "works"'}),
    C("job-name-cli", "-J cli-name", "#SBATCH -J script-name\n", {"job-name": "cli-name"}),
    C("output-error", "", "#SBATCH -o logs/%x-%j.out\n#SBATCH -e logs/%x-%j.err\n",
      {"output": "logs/%x-%j.out", "error": "logs/%x-%j.err"}),
    C("open-mode", "--open-mode=append -o out.txt", "", {"open-mode": "append", "output": "out.txt"}),
    C("mail", "", "#SBATCH --mail-type=END,FAIL\n#SBATCH --mail-user=alice@example.org\n",
      {"mail-type": "END,FAIL", "mail-user": "alice@example.org"}),
    C("comment-quoted", "", '#SBATCH --comment="run #3; lr=3e-4"\n', {"comment": "run #3; lr=3e-4"}),
    C("comment-trailing", "", "#SBATCH --comment=baseline   # why this run exists\n", {"comment": "baseline"}),
    C("comment-hash-in-word", "", "#SBATCH --comment=a#b\n", {"comment": "a"}),
    C("chdir", "-D /tmp", "", {"chdir": "/tmp"}),
    # --- arrays ---
    C("array-range", "--array=0-9", "", {"array": "0-9"}),
    C("array-throttle", "", "#SBATCH -a 0-99%10\n", {"array": "0-99%10"}),
    C("array-list", "-a 1,3,5,7", "", {"array": "1,3,5,7"}),
    C("array-step-gpu", "", "#SBATCH --array=0-20:5\n#SBATCH --gres=gpu:1\n", {"array": "0-20:5", "gres": "gpu:1"}),
    C("array-env", "", "", {"array": "0-3"}, env={"SBATCH_ARRAY_INX": "0-3"}),
    # --- MPI / multi-node CPU ---
    C("mpi-ntasks", "-n 64", "", {"ntasks": "64"}),
    C("mpi-nodes-tasks", "", "#SBATCH -N 2\n#SBATCH --ntasks-per-node=16\n#SBATCH --ntasks-per-core=1\n",
      {"nodes": "2", "ntasks-per-node": "16", "ntasks-per-core": "1"}),
    C("mpi-distribution", "-n 8 -m block:cyclic", "", {"ntasks": "8", "distribution": "block:cyclic"}),
    C("mpi-hint", "--hint=nomultithread -n 4", "", {"hint": "nomultithread", "ntasks": "4"}),
    C("nodes-range", "-N 1-2", "", {"nodes": "1-2"}),
    C("nodelist", "-w h100n1", "", {"nodelist": "h100n1"}),
    C("exclude", "", "#SBATCH --exclude=a100n1\n", {"exclude": "a100n1"}),
    C("contiguous-switches", "--contiguous -N 2", "", {"contiguous": None, "nodes": "2"}),
    C("mincpus", "--mincpus=4", "", {"mincpus": "4"}),
    # --- exclusive and sharing ---
    C("exclusive", "", "#SBATCH --exclusive\n", {"exclusive": None}),
    C("exclusive-user", "--exclusive=user", "", {"exclusive": "user"}),
    # one field up to 22.05 (the last wins); sbatch 24.11 refuses the pair (test_sbatch_lab REFUSED)
    C("oversubscribe-over-exclusive", "--oversubscribe", "#SBATCH --exclusive\n", {"oversubscribe": None},
      before=(24, 11)),
    C("exclusive-over-oversubscribe", "--exclusive", "#SBATCH -s\n", {"exclusive": None}, before=(24, 11)),
    # --- constraints, dependencies, begin, misc ---
    C("constraint", "-C h100", "", {"constraint": "h100"}),
    C("constraint-script-or", "", '#SBATCH --constraint="h100|a100"\n', {"constraint": "h100|a100"}),
    C("dependency-afterok", "--dependency=afterok:{dep}", "", {"dependency": "afterok:{dep}"}, needs_job=True),
    C("dependency-script", "", "#SBATCH -d afterany:{dep}\n#SBATCH --kill-on-invalid-dep=yes\n",
      {"dependency": "afterany:{dep}", "kill-on-invalid-dep": "yes"}, needs_job=True),
    C("dependency-singleton", "--dependency=singleton -J single", "",
      {"dependency": "singleton", "job-name": "single"}),
    C("begin", "--begin=now+1hour", "", {"begin": "now+1hour"}),
    C("nice-priority", "--nice=100", "", {"nice": "100"}),
    C("signal", "", "#SBATCH --signal=B:USR1@120\n", {"signal": "B:USR1@120"}),
    C("no-requeue", "--no-requeue", "#SBATCH --requeue\n", {"no-requeue": None}),
    C("licenses-tmp", "--tmp=1G", "", {"tmp": "1G"}),
    C("wckey-export", "--export=NONE", "", {"export": "NONE"}),
    C("export-list", "", "#SBATCH --export=ALL,MY_VAR=1\n", {"export": "ALL,MY_VAR=1"}),
    C("get-user-env-like-cpu", "--cores-per-socket=4", "", {"cores-per-socket": "4"}),
    C("threads-per-core", "--threads-per-core=1", "", {"threads-per-core": "1"}),
    # --- environment forms and precedence ---
    C("env-partition", "", "", {"partition": "interactive"}, env={"SBATCH_PARTITION": "interactive"}),
    C("env-time", "", "#SBATCH -t 10\n", {"time": "30"}, env={"SBATCH_TIMELIMIT": "30"}),
    C("env-vs-cli", "-t 15", "#SBATCH -t 10\n", {"time": "15"}, env={"SBATCH_TIMELIMIT": "30"}),
    C("env-gres", "", "", {"gres": "gpu:h100:1"}, env={"SBATCH_GRES": "gpu:h100:1"}),
    C("env-gpus", "", "", {"gpus": "1"}, env={"SBATCH_GPUS": "1"}),
    C("env-account-qos", "", "#SBATCH -q normal\n", {"account": "lab", "qos": "high"},
      env={"SBATCH_ACCOUNT": "lab", "SBATCH_QOS": "high"}),
    C("env-job-name", "", "#SBATCH -J from-script\n", {"job-name": "from-env"}, env={"SBATCH_JOB_NAME": "from-env"}),
    C("env-exclusive", "", "", {"exclusive": None}, env={"SBATCH_EXCLUSIVE": ""}),
    C("env-no-requeue-reset", "", "#SBATCH --no-requeue\n", {}, env={"SBATCH_NO_REQUEUE": "no"}),
    C("env-mem-vs-script", "", "#SBATCH --mem=4G\n", {"mem": "4G"}, env={"SBATCH_MEM_PER_CPU": "1G"}),
    C("env-mem", "", "", {"mem": "2G"}, env={"SBATCH_MEM_PER_NODE": "2G"}),
    C("env-output", "", "", {"output": "env-%j.out"}, env={"SBATCH_OUTPUT": "env-%j.out"}),
    C("env-ignored-vars", "", "", {}, env={"SLURM_PARTITION": "spot", "SBATCH_NOT_A_VAR": "1"}),
    # --- directive-parsing edges ---
    C("stop-at-command", "", "#SBATCH -t 10\necho hi\n#SBATCH -t 20\n", {"time": "10"}),
    C("indented-directive", "", "  #SBATCH -t 20\n#SBATCH -J real\n", {"job-name": "real"}),
    C("blank-and-comments", "", "\n# setup\n\n#SBATCH -c 2\n", {"cpus-per-task": "2"}),
    C("split-over-lines", "", "#SBATCH --job-name\n#SBATCH next-line-name\n", {"job-name": "next-line-name"}),
    C("long-abbrev-script", "", "#SBATCH --cpus-per-t=3\n#SBATCH --part=batch\n",
      {"cpus-per-task": "3", "partition": "batch"}),
    C("bundled-short", "-HJbundle", "", {"hold": None, "job-name": "bundle"}),
    C("slurm-magic", "", "#SLURM -t 7\n", {"time": "7"}),
    C("script-args", "-t 5", "", {"time": "5"}, args=("--lr", "0.1", "-p", "x y")),
]
