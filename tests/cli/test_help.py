"""Every command and option is documented in --help, defaults shown; --version works."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from spade import __version__
from spade.cli import COMMANDS, command_parser, main


def _options(parser: argparse.ArgumentParser, prog: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{prog} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield prog, action


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"spade {__version__}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help(name: str) -> None:
    undocumented = [f"{prog} {a.option_strings or a.dest}"
                    for prog, a in _options(command_parser(name), f"spade {name}")
                    if not (a.help or "").strip()]
    assert not undocumented, f"options without help text: {undocumented}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_exits_0(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([name, "--help"]) == 0
    assert f"usage: spade {name}" in capsys.readouterr().out


def test_defaults_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--seed SEED run seed; every sample's seed is derived from it (default: 0)" in text
    assert "Presets:" in text  # the run's description
    assert main(["regress", "--help"]) == 0
    assert "(default: 0.05)" in capsys.readouterr().out


@pytest.mark.slow
def test_smollm2_is_an_eval_model_too(tmp_path: Path) -> None:
    """The name self-play takes works in eval (real SmolLM2 on this CPU, 1 token budget)."""
    pytest.importorskip("transformers")
    data = tmp_path / "data"
    (data / "aime").mkdir(parents=True)
    (data / "aime" / "aime24.jsonl").write_text(
        json.dumps({"id": 1, "problem": "What is 1 + 1?", "answer": "2"}) + "\n")
    out = tmp_path / "o"
    assert main(["eval", "run", "--quiet", "--model", "smollm2", "--suites", "aime24",
                 "--max-tokens", "4", "--data-dir", str(data), "--out", str(out)]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["model"]["name"] == "smollm2-135m-instruct" and doc["model"]["sha256"]
    assert doc["preset"] in ("quick", "paper")


def _eval_without_action(text: str) -> list[str]:
    """``spade eval`` written with an option where its action (run, export) belongs."""
    import re

    return re.findall(r"spade eval --[\w-]+", text)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_quotes_commands_that_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([name, "--help"]) == 0
    assert not _eval_without_action(capsys.readouterr().out)


def test_docs_quote_commands_that_run() -> None:
    root = Path(__file__).resolve().parents[2]
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        found = _eval_without_action(doc.read_text(encoding="utf-8"))
        assert not found, f"{doc.name}: {found}"
