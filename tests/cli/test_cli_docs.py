"""docs/cli.md is generated from the parsers and must match them."""

from __future__ import annotations

from pathlib import Path

from spade.cli.docs import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_in_sync() -> None:
    assert DOC.is_file(), "docs/cli.md is missing: python -m spade.cli.docs > docs/cli.md"
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is out of date with the command-line parsers; regenerate it with: "
        "python -m spade.cli.docs > docs/cli.md"
    )


def test_every_command_is_in_the_reference() -> None:
    from spade.cli import COMMANDS

    text = render()
    for name in COMMANDS:
        assert f"## `spade {name}`" in text
