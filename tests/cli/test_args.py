"""The shared command-line pieces of spade.cli._args."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from spade.cli import selfplay, train


@pytest.mark.parametrize(("module", "prog"), [(selfplay, "spade selfplay"),
                                              (train, "spade train")])
def test_the_resume_command_names_the_run_directory_and_drops_the_run_mode(
        module: object, prog: str, tmp_path: Path) -> None:
    args = argparse.Namespace(argv=["--config", "x.yaml", "--new-run", "--out", "elsewhere"],
                              resolved_run_dir=tmp_path / "run")
    assert module.resume_command(args) == (  # type: ignore[attr-defined]
        f"{prog} --config x.yaml --run-dir {tmp_path / 'run'}")
    assert module.resume_command(argparse.Namespace(argv=[])) is None  # type: ignore[attr-defined]
