# SPDX-License-Identifier: Apache-2.0
"""gpusub's help text: one place, printed by the click command (``--help``) and by the submit path
(``--help``/``--usage`` among sbatch's options), so neither imports the other."""

HELP_TEXT = """\
Usage: gpusub [GPUSUB OPTIONS] [SBATCH OPTIONS] [SCRIPT [ARGS]...]

  Submit a batch job exactly as sbatch would (the script runs once, with the nodes,
  tasks, CPUs, GPUs and memory it asks for), placed by the site policy and next to its
  GPUs.  Every sbatch option works, in every form sbatch accepts (long and short,
  --opt=value and --opt value, SBATCH_* variables, #SBATCH lines); with no SCRIPT the
  script is read from standard input, as sbatch reads it.

gpusub options:
  --explain            Print the policy decision and the placement plan; submit nothing.
  --json               Machine-readable output (with --explain, or the submitted job).
  --dry-run            Print exactly the file that would be submitted (the sbatch command
                       line goes to stderr); needs no reachable Slurm.
  --test-only          Ask Slurm (sbatch --test-only) whether and when the job would start.
  --wait               Follow the job to its end; exit with the job's exit code.
  --policy FILE        Site policy (default: $GPUSUB_POLICY, then /etc/slurm-gpu/policy.yaml;
                       with none, gpusub behaves like sbatch).
  --class NAME         Ask for a job class of the policy.
  --interactive        With --explain: classify as an interactive session, as salloc or
                       srun would be (no batch script); gpusub itself submits batch jobs only.
  --gpu-isolation strict|shared
                       shared (default): srun steps see the job's GPUs as Slurm gives them.
                       strict: each srun task sees only the GPUs closest to its cores.
  --launch batch|per-gpu
                       batch (default): the script runs once, as under sbatch.
                       per-gpu: the script runs once per GPU through srun (one task per GPU,
                       each with its GPU's local cores; changes the job's shape on purpose).
  --gpu-fraction F     Ask for part of one GPU (0.25, 1/7, 30%): a MIG slice or an MPS share,
                       as the policy's isolation rules say.
  --mig PROFILE[:COUNT][,...]
                       A MIG layout on each of the job's whole GPUs (3g.40gb:2), on nodes
                       whose policy node type is in dynamic MIG mode (docs/mig_mps.md).
  --mps PERCENT        A per-job MPS daemon on the job's whole GPUs; each client gets
                       PERCENT of the GPU's threads (within the policy's bounds).
  --model-params N --precision P --optimizer O
                       Check that the model fits the GPU memory (VRAM fit).
  --checkpoint         Run under the checkpoint protocol (docs/checkpointing.md): the job
                       gets GPUSUB_CKPT_DIR, GPUSUB_RESTART_COUNT, GPUSUB_RESUME_FROM; near
                       its time limit or when preempted every process gets the stop signal,
                       and the job requeues itself after a fresh checkpoint.
  --ckpt-signal SIG    The stop signal (USR2 by default; USR1, TERM, INT, HUP).
  --ckpt-grace TIME    Time to save after the stop signal (policy default, e.g. 60s).
  -V, --version        Show the version and exit.
  -h, --help           Show this message and exit.

sbatch options: see `man sbatch`; gpusub adds only what the job left unsaid (partition,
QOS, time, the GPU type of an untyped request, placement options); --explain shows it.
Workers forked by torchrun/accelerate/deepspeed/mpirun: slurm-gpu-pin.

Exit status: 0 ok, 1 rejected by the policy or failed in Slurm, 2 usage error.
Environment: GPUSUB_POLICY, GPUSUB_TIMEOUT_S (Slurm client timeout, default 15),
GPUSUB_SLURM_VERSION (skip detection, e.g. 24.11.5), GPUSUB_DEBUG, TMPDIR, SLURM_CONF.
"""
