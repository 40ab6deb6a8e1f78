"""The harness works from any working directory: the repository's folders install as
``spade.eval`` / ``spade.train``, so nothing may reach them as top-level ``eval``/``train``
(which only the repository root's own folder would satisfy)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
from spade.eval.suites import SUITES
from spade.eval.suites._base import render
print(render("aime.txt", problem="PROBLEM-X"))
"""


def test_prompt_templates_render_outside_the_repository(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PROBLEM-X" in done.stdout
