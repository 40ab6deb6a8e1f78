"""The `spade` command line.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int`` (and, for long jobs, ``resume_command(args) -> str``); modules are
imported only when their command runs, so `spade --help` stays fast and no ML framework is
imported unless a command needs it.

Exit codes: 0 success, 1 a negative verdict (an invalid environment, a failed gate),
2 bad input or an unavailable resource (one line on stderr, never a traceback),
130 interrupted (Ctrl-C or SIGTERM; long jobs say how to resume).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from spade import __version__
from spade.cli._boundary import describe, missing_extra
from spade.errors import SpadeError

#: command name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "check-env": ("spade.cli.check_env", "validate one environment file in the sandbox"),
    "selfplay": ("spade.cli.selfplay", "run self-play cycles without training"),
    "train": ("spade.cli.train", "GRPO self-play training (designer and agent, shared weights)"),
    "eval": ("spade.eval.cli", "evaluate a model on benchmark suites"),
    "report": ("spade.eval.cli_report", "render paper-style tables from evaluation runs"),
    "regress": ("spade.eval.cli_regress", "gate a candidate run against a reference run"),
    "experiment": ("spade.eval.cli_experiment",
                   "train every method of an experiment, score every checkpoint, tables"),
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows every option's default (unless it is None/False or already in the help)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default:" in text
            or default is None
            or default is False
            or default == argparse.SUPPRESS
            or default == []
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


class ArgumentParser(argparse.ArgumentParser):
    """Usage errors in one line (exit 2), pointing at ``--help`` instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def top_parser() -> argparse.ArgumentParser:
    """`spade` itself: the command list and ``--version``."""
    parser = ArgumentParser(
        prog="spade", description=__doc__.splitlines()[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"spade {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def command_parser(name: str, module: Any | None = None) -> argparse.ArgumentParser:
    """The full parser of one command (imports its module)."""
    module_name, help_text = COMMANDS[name]
    module = module or importlib.import_module(module_name)
    description = (module.__doc__ or help_text).strip()
    parser = ArgumentParser(
        prog=f"spade {name}", description=description, formatter_class=HelpFormatter,
        allow_abbrev=False,
    )
    module.add_arguments(parser)
    return parser


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the Ctrl-C path, so a killed job stops cleanly and says how to resume."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. called from a test runner's worker)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        try:
            top_parser().parse_args(argv)  # prints usage / help / version
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 2
        return 2
    name, rest = argv[0], argv[1:]
    try:
        module = importlib.import_module(COMMANDS[name][0])
    except ImportError as exc:
        why = missing_extra(exc) or f"{exc}; install the matching extra"
        print(f"spade {name}: unavailable: {why}", file=sys.stderr)
        return 2
    try:
        args = command_parser(name, module).parse_args(rest)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2
    args.argv = rest  # for resume_command: the exact command that was run
    try:
        with _sigterm_as_interrupt():
            return int(module.run(args))
    except SpadeError as exc:
        print(f"spade {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        resume = getattr(module, "resume_command", None)
        hint = resume(args) if callable(resume) else None
        tail = f"; resume with: {hint}" if hint else ""
        print(f"spade {name}: interrupted{tail}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`spade report ... | head`): stop quietly
        _silence_stdout()
        return 141
    except (OSError, ImportError, UnicodeDecodeError) as exc:
        # the machine or the install (a full disk, an unwritable path, a binary file, an
        # extra not installed): one line; anything else is a bug and keeps its traceback
        line = describe(exc)
        if line is None:
            raise
        print(f"spade {name}: error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
