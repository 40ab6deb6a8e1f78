"""The pipeline calls the functions behind the commands: a protocol's ``options()`` give
the evaluation the equivalent ``spade eval run`` command line gives (same run identity, so
runs started by either resume under the other)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade.eval.cli import build_config, eval_config
from spade.eval.pipeline import EvalProtocol, GateSettings, HeldoutSlice

from spade.cli import command_parser


def _argv(options: dict) -> list[str]:
    """The command line a user would type for ``options``."""
    flags = {"limit": "--limit", "samples": "--samples", "max_tokens": "--max-tokens",
             "fewshot": "--fewshot", "temperature": "--temperature"}
    out = ["--suites", ",".join(options["suites"]), "--preset", options["preset"],
           "--seed", str(options["seed"])]
    for key, value in options["protocol"].items():
        if value is not None:
            out += [flags[key], str(value)]
    for key, flag in (("user_model", "--user-model"), ("batch_size", "--batch-size")):
        if options.get(key) is not None:
            out += [flag, str(options[key])]
    return out + (["--quiet"] if options.get("quiet") else [])


@pytest.mark.parametrize("protocol", [
    EvalProtocol(suites=("aime25", "gpqa_diamond"), limit=2, samples=1, max_tokens=128,
                 batch_size=32, fewshot=2, seed=3),
    EvalProtocol(preset="paper", user_model="openai:http://127.0.0.1:9#m"),
    HeldoutSlice(limit=96, batch_size=32, temperature=0.0, max_tokens=24),
    GateSettings(limit=80, fewshot=2, temperature=0.0, max_tokens=32),
    GateSettings(),
], ids=lambda p: type(p).__name__)
def test_options_give_the_run_the_command_line_gives(tmp_path: Path, protocol) -> None:
    options = protocol.options()
    out = tmp_path / "run"
    common = ["run", "--model", "oracle", "--label", "base", "--out", str(out),
              "--data-dir", str(tmp_path)]
    by_cli = build_config(command_parser("eval").parse_args([*common, *_argv(options)]))
    by_call = eval_config("oracle", label="base", out=out, data_dir=tmp_path, **options)
    assert by_call == by_cli
