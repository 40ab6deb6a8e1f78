"""The separate interpreter that runs bfcl-eval (it pins numpy 1.26 and many SDKs).

bfcl-eval cannot share the project's environment, so it lives in its own venv, created on
first use (or ahead of time by ``python -m eval.suites.bfcl_venv``, which ``nox -s tests``
runs before the tests) and reused after. Location: ``$SPADE_BFCL_VENV``, else
``.nox/bfcl_eval`` in the checkout. ``$SPADE_BFCL_PYTHON`` names an interpreter that
already has the pinned bfcl-eval and skips all of this.

The CPU build of torch is installed first (pinned like the project's own, override with
``$SPADE_TORCH_SPEC``): one of bfcl-eval's dependencies needs torch, and without the pin
pip would pull a CUDA build. A marker file records the finished install; a half-built venv
(killed mid-install) has none and is rebuilt. Concurrent callers serialise on a lock.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from spade.errors import UserError
from spade.paths import project_root

BFCL_EVAL_VERSION = "2026.3.23"
BFCL_EVAL_SPEC = f"bfcl-eval=={BFCL_EVAL_VERSION}"
VENV_ENV = "SPADE_BFCL_VENV"
PYTHON_ENV = "SPADE_BFCL_PYTHON"
_MARKER = ".spade-bfcl-ready"
#: Imported by a bfcl-eval dependency (qwen-agent) without being declared by it.
UNDECLARED_DEPS = ("soundfile",)
INSTALL_TIMEOUT_S = 3600


def venv_dir() -> Path:
    given = os.environ.get(VENV_ENV)
    return Path(given).expanduser().resolve() if given else project_root() / ".nox" / "bfcl_eval"


def _torch_spec() -> str:
    return os.environ.get("SPADE_TORCH_SPEC", "torch==2.13.0")


def _ready(venv: Path) -> bool:
    marker = venv / _MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == BFCL_EVAL_SPEC


def _run(cmd: list[str], what: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot create the bfcl-eval environment ({what}): {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise UserError(f"cannot create the bfcl-eval environment ({what}): {tail[0]}")


def _build(venv: Path, progress: bool) -> None:
    if venv.exists():
        shutil.rmtree(venv)  # an unfinished install of our own; start clean
    if progress:
        print(f"creating the bfcl-eval environment in {venv} (once; a few minutes)",
              file=sys.stderr, flush=True)
    _run([sys.executable, "-m", "venv", str(venv)], "venv")
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *shlex.split(_torch_spec())], _torch_spec())
    _run([*pip, BFCL_EVAL_SPEC, *UNDECLARED_DEPS], BFCL_EVAL_SPEC)
    _run([py, "-c", "import bfcl_eval.eval_checker.eval_runner"], "import check")
    (venv / _MARKER).write_text(BFCL_EVAL_SPEC + "\n", encoding="utf-8")


def ensure_python(progress: bool = True) -> Path:
    """The interpreter with bfcl-eval, creating its venv if needed (one-line errors)."""
    given = os.environ.get(PYTHON_ENV)
    if given:
        py = Path(given).expanduser().absolute()  # not resolve(): a venv's python is a link
        if not py.is_file():
            raise UserError(f"{PYTHON_ENV}={given} is not an interpreter")
        return py
    venv = venv_dir()
    if _ready(venv):
        return venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(venv):
            _build(venv, progress)
    return venv / "bin" / "python"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Create (or find) the bfcl-eval venv.")
    parser.parse_args(argv)
    try:
        print(ensure_python())
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
