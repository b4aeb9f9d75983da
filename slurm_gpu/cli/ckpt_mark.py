# SPDX-License-Identifier: Apache-2.0
"""``gpusub-ckpt``: the shell side of the checkpoint protocol (docs/checkpointing.md).

    gpusub-ckpt mark PATH [--step N] [--cost SECONDS] [--quiet]
    gpusub-ckpt resume [--dir DIR] [--rank R]
    gpusub-ckpt status [--dir DIR]

``mark`` records that this rank finished the checkpoint at PATH (in GPUSUB_CKPT_DIR); ``resume``
prints the path of the newest complete step (exit 1 and nothing printed when there is none);
``status`` prints the directory's complete steps as JSON. Exit codes: 0 ok, 1 nothing to resume or
the marker could not be written, 2 usage. It runs inside every rank of a job, so it starts without
click (a hand parser, as slurm-gpu-pin).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

PROG = "gpusub-ckpt"
USAGE = f"""usage: {PROG} mark PATH [--step N] [--cost SECONDS] [--quiet]
       {PROG} resume [--dir DIR] [--rank R]
       {PROG} status [--dir DIR]

  mark    record that this rank finished the checkpoint at PATH, in $GPUSUB_CKPT_DIR. Each rank of a
          multi-rank job marks its own shard; the step is complete when every rank marked it.
          --step N        the step (default: one past this rank's last marked step)
          --cost SECONDS  how long the checkpoint took (recorded; gpusub compares it with the grace time)
  resume  print the path of the newest complete step (this rank's; --rank R for another); exit 1 if none
  status  print the complete steps as JSON
  --dir DIR  the checkpoint directory (default: $GPUSUB_CKPT_DIR)

Rank: RANK/WORLD_SIZE (torchrun), else SLURM_PROCID/SLURM_STEP_NUM_TASKS inside an srun step, else 0 of 1.
Exit codes: 0 ok, 1 nothing to resume or the marker could not be written, 2 usage."""

VALUED = {"mark": ("--step", "--cost"), "resume": ("--dir", "--rank"), "status": ("--dir",)}
FLAGS = {"mark": ("--quiet", "-q"), "resume": (), "status": ()}


class Usage(Exception):
    pass


def parse_args(argv: Sequence[str]) -> tuple[str, dict[str, str | bool], list[str]]:
    """(verb, options, positional words)."""
    if not argv:
        raise Usage("a command is needed: mark, resume or status")
    if argv[0] in ("-h", "--help", "help"):
        return "help", {}, []
    verb, rest = argv[0], list(argv[1:])
    if verb not in VALUED:
        raise Usage(f"unknown command {verb[:40]!r}; expected mark, resume or status")
    opts: dict[str, str | bool] = {}
    words: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        name, eq, value = a.partition("=")
        if a == "--":
            words += rest[i + 1:]
            break
        if a in ("-h", "--help"):
            return "help", {}, []
        if name in VALUED[verb]:
            if not eq:
                if i + 1 >= len(rest):
                    raise Usage(f"{name} needs a value")
                i, value = i + 1, rest[i + 1]
            opts[name] = value
        elif a in FLAGS[verb]:
            opts["--quiet"] = True
        elif a.startswith("-") and a != "-":
            raise Usage(f"unknown option {a[:40]!r} for {verb}")
        else:
            words.append(a)
        i += 1
    want = 1 if verb == "mark" else 0
    if len(words) != want:
        raise Usage(f"{verb} takes {'one PATH' if want else 'no arguments'}, not {len(words)}")
    return verb, opts, words


def _whole(opt: str, text: str) -> int:
    t = text.strip()
    if not (t.isascii() and t.isdigit() and len(t) <= 16):
        raise Usage(f"{opt} {text[:40]!r}: expected a whole number >= 0")
    return int(t)


def _seconds(opt: str, text: str) -> float:
    try:
        value = float(text.strip().removesuffix("s")) if len(text) <= 32 and text.isascii() else -1.0
    except ValueError:
        value = -1.0
    if not 0 <= value < 1e12:  # NaN fails too
        raise Usage(f"{opt} {text[:40]!r}: expected seconds >= 0 (e.g. 42 or 42.5)")
    return value


def _env(opts: dict[str, str | bool]) -> dict[str, str]:
    env = dict(os.environ)
    if isinstance(opts.get("--dir"), str):
        env["GPUSUB_CKPT_DIR"] = str(opts["--dir"])
    return env


def run(argv: Sequence[str]) -> int:
    verb, opts, words = parse_args(argv)
    if verb == "help":
        sys.stdout.write(USAGE + "\n")
        return 0
    from slurm_gpu.adapters.markers import read_markers, warn_stderr
    from slurm_gpu.checkpoint import contract, job
    from slurm_gpu.checkpoint.markers import complete_steps

    env = _env(opts)
    if verb == "mark":
        step = _whole("--step", str(opts["--step"])) if "--step" in opts else None
        cost = _seconds("--cost", str(opts["--cost"])) if "--cost" in opts else None
        try:
            marker, newest = job.mark_step(words[0], step, cost_s=cost, env=env, warn=warn_stderr)
        except job.CheckpointError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n")
            return 1
        if not opts.get("--quiet"):
            state = "complete" if newest is not None and newest.step == marker.step else "waiting for the other ranks"
            sys.stderr.write(f"{PROG}: marked step {marker.step} (rank {marker.rank} of {marker.world_size}): "
                             f"{state}\n")
        return 0
    directory = job.marker_dir(env)
    if directory is None:
        raise Usage(f"no checkpoint directory: set {contract.ENV_DIR} or give --dir")
    listing = read_markers(directory, warn=warn_stderr)
    steps = complete_steps(listing.markers)
    if verb == "resume":
        if not steps:
            return 1
        rank = _whole("--rank", str(opts["--rank"])) if "--rank" in opts else _own_rank(env)
        sys.stdout.write(steps[0].path_of(rank) + "\n")
        return 0
    out = {"dir": directory, "markers": len(listing.markers),
           "complete": [{"step": s.step, "path": s.path, "world_size": len(s.markers), "time": s.time,
                         "cost_s": s.cost_s, "restart_count": s.markers[0].restart_count} for s in steps]}
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
    return 0


def _own_rank(env: dict[str, str]) -> int:
    from slurm_gpu.checkpoint import contract

    try:
        return contract.identity(env)[0]
    except contract.ContractError:
        return 0


def main(argv: Sequence[str] | None = None) -> None:
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except Usage as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n{USAGE.splitlines()[0]}\n")
        code = 2
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # a bug of ours: one line, never a traceback
        if os.environ.get("GPUSUB_DEBUG"):
            raise
        sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}\n")
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
