"""check-env reports sandbox opt-outs as its own flag, not as the Python API."""

from __future__ import annotations

from spade.cli.check_env import _cli_terms
from spade.sandbox._launch import INSTALL_HINT


def test_install_hint_names_the_flag() -> None:
    text = _cli_terms(f"bubblewrap (bwrap) was not found: {INSTALL_HINT}")
    assert "--isolation rlimits" in text and "allow_weak" not in text
