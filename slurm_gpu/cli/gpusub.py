# SPDX-License-Identifier: Apache-2.0
"""``gpusub``: sbatch, plus the site policy and GPU/CPU binding from node topology.

Exit codes: 0 ok; 1 rejected by the policy, or Slurm failed/unreachable; 2 usage (bad option, bad script).

The plain submit path does not import click (it costs about three bare interpreter starts): ``main``
hands argv straight to :func:`slurm_gpu.submit.gpusub.run` and only builds the click command for ``--help``,
``--version`` and ``--usage``. Both paths format errors the same way: one line on stderr.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

from slurm_gpu import __version__
from slurm_gpu.submit.usage import HELP_TEXT  # one text for click and the submit path

if TYPE_CHECKING:
    import click

HELP_WORDS = ("--help", "-h", "--usage")
VERSION_WORDS = ("--version", "-V")


def _report(exc: BaseException) -> int:
    """One line on stderr; the exit code for the error type."""
    from slurm_gpu.errors import exit_code_for

    message = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
    sys.stderr.write(f"gpusub: error: {message}\n")
    return exit_code_for(exc)


def run_argv(argv: list[str]) -> int:
    """The whole of gpusub without click: parse, decide, bind, render, submit. Returns the exit code."""
    from slurm_gpu.errors import SlurmGpuError

    try:
        from slurm_gpu.submit import gpusub as submit

        return submit.run(argv, os.environ, sys.stdout, sys.stderr)
    except SlurmGpuError as exc:
        return _report(exc)
    except KeyboardInterrupt:
        sys.stderr.write("gpusub: interrupted\n")
        return 130
    except BrokenPipeError:  # `gpusub ... | head -1`: the reader left; not an error of the job
        _silence_stdout()
        return 0
    except (MemoryError, RecursionError) as exc:
        sys.stderr.write(f"gpusub: error: input too large or too deeply nested ({type(exc).__name__})\n")
        return 2
    except Exception as exc:  # a bug of ours: one line, never a traceback (GPUSUB_DEBUG=1 shows it)
        if os.environ.get("GPUSUB_DEBUG"):
            raise
        sys.stderr.write(f"gpusub: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
                         "(set GPUSUB_DEBUG=1 for the traceback, and please report it)\n")
        return 1


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _click_command() -> click.Command:
    import click

    class _Command(click.Command):
        def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            formatter.write(HELP_TEXT)

    @click.command(
        "gpusub", cls=_Command, add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                          "allow_interspersed_args": False},
    )
    @click.option("-h", "--help", "--usage", "show_help", is_flag=True, is_eager=True, expose_value=True,
                  help="Show this message and exit.")
    @click.version_option(__version__, "-V", "--version", prog_name="gpusub")
    @click.argument("argv", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def gpusub(ctx: click.Context, show_help: bool, argv: tuple[str, ...]) -> None:
        """Submit a batch job like sbatch, placed by policy and bound to GPU-local cores."""
        if show_help or not argv:
            click.echo(ctx.get_help(), err=not show_help)
            ctx.exit(0 if show_help else 2)
        ctx.exit(run_argv(list(argv)))

    return gpusub


def __getattr__(name: str) -> click.Command:
    # ``from slurm_gpu.cli.gpusub import gpusub`` builds the click command on demand.
    if name == "gpusub":
        return _click_command()
    raise AttributeError(name)


def _exit_now(code: int) -> None:
    """Flush the output and end the process without the interpreter's teardown: freeing every module
    one by one costs gpusub about a tenth of its run, and a finished command has nothing to clean up
    (its temporary script is already removed; nothing registers atexit handlers on this path)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left; not an error of the job (as in run_argv)
        pass
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"gpusub: error: cannot write the output: {exc}\n")
        code = code or 1
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """The ``gpusub`` command. Run as the command (``argv`` None), the process ends here without the
    interpreter's teardown; called with ``argv``, it raises SystemExit like any click command."""
    as_command = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else None
    # as sbatch: with no argument at all the script comes from standard input (a heredoc, a pipe);
    # only on a terminal (or with no standard input) is a bare `gpusub` a request for the usage
    bare_on_terminal = first is None and (sys.stdin is None or sys.stdin.isatty())
    if bare_on_terminal or first in HELP_WORDS or first in VERSION_WORDS:
        _click_command()(args=argv, prog_name="gpusub")
        return
    # One short-lived run: the cyclic collector only slows the imports down (about a tenth of the
    # start-up); refcounting still frees everything else, and --wait turns the collector back on.
    gc.disable()
    code = run_argv(argv)
    if as_command:
        _exit_now(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
