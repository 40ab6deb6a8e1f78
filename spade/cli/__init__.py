"""The `spade` command line.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; modules are imported only when their command runs, so `spade --help`
stays fast and no ML framework is imported unless a command needs it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from spade.errors import SpadeError

#: command name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "check-env": ("spade.cli.check_env", "validate one environment file in the sandbox"),
    "selfplay": ("spade.cli.selfplay", "run self-play cycles without training"),
    "eval": ("eval.cli", "evaluate a model on benchmark suites"),
    "report": ("eval.cli_report", "render paper-style tables from evaluation runs"),
    "regress": ("eval.cli_regress", "gate a candidate run against a reference run"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spade", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        _parser().parse_args(argv)  # prints usage / help and exits
        return 2
    name, rest = argv[0], argv[1:]
    module_name, help_text = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"spade {name}: unavailable ({exc}); install the matching extra", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=f"spade {name}", description=help_text)
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    try:
        return int(module.run(args))
    except SpadeError as exc:
        print(f"spade {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"spade {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
