"""Generate the command-line reference from the parsers themselves.

    python -m spade.cli.docs > docs/cli.md

Every command in :data:`spade.cli.COMMANDS` (and every sub-action, e.g. ``eval run``) gets
its description, usage line and a table of options with their defaults. A test compares
the output with ``docs/cli.md``, so a new command or option is documented by regenerating.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

from spade.cli import COMMANDS, command_parser, top_parser

#: Fixed width, so the output does not depend on the terminal it is generated in.
WIDTH = "100"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    d = action.default
    if d is None or d is False or d == argparse.SUPPRESS or d == [] or not action.option_strings:
        return ""
    return f"`{d}`"


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = ""
    if action.nargs != 0:
        if action.choices is not None and action.metavar is None:
            metavar = " {" + ",".join(map(str, action.choices)) + "}"
        else:
            metavar = f" {action.metavar or action.dest.upper()}"
    return ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)


def _help(action: argparse.Action, prog: str) -> str:
    """The help text with ``%(...)s`` expanded as argparse does (no appended default)."""
    if not action.help:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params = {k: getattr(v, "__name__", v) for k, v in params.items()}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, action.choices or ()))
    return action.help % {**params, "prog": prog}


def _section(parser: argparse.ArgumentParser, title: str, level: int) -> Iterator[str]:
    yield f"{'#' * level} `{title}`"
    yield ""
    if parser.description:
        yield parser.description.strip()
        yield ""
    yield "```text"
    yield parser.format_usage().strip()
    yield "```"
    yield ""
    rows: list[str] = []
    subs: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subs.extend(action.choices.items())
        elif not isinstance(action, argparse._HelpAction):
            meaning = _cell(_help(action, parser.prog))
            rows.append(f"| {_flags(action)} | {_default(action)} | {meaning} |")
    if rows:
        yield "| option | default | meaning |"
        yield "|---|---|---|"
        yield from rows
        yield ""
    for name, sub in subs:
        yield from _section(sub, f"{title} {name}", level + 1)


def render() -> str:
    """The whole reference as Markdown."""
    os.environ["COLUMNS"] = WIDTH
    lines = [
        "# Command-line reference",
        "",
        "Generated from the argument parsers by `python -m spade.cli.docs > docs/cli.md`;",
        "do not edit by hand. Exit codes of every command: 0 success, 1 a negative verdict",
        "(an invalid environment, a failed regression gate), 2 bad input or an unavailable",
        "resource (one line on stderr), 130 interrupted (long jobs print the command that",
        "resumes them).",
        "",
        "```text",
        top_parser().format_usage().strip(),
        "```",
        "",
        "| command | what it does |",
        "|---|---|",
        *(f"| `spade {name}` | {help_text} |" for name, (_m, help_text) in COMMANDS.items()),
        "",
    ]
    for name in COMMANDS:
        lines += list(_section(command_parser(name), f"spade {name}", 2))
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
