"""Argument types shared by every ``spade`` command, so one option means one thing.

Each is an ``argparse`` ``type=`` callable: a bad value stops the command at parse time
with ``spade CMD: error: argument --x: ...`` and exit 2, before any model or data loads.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: ``--device`` values a local model accepts (``cuda:N`` too).
DEVICES = ("auto", "cpu", "cuda")
#: ``--dtype`` values for local model weights.
DTYPES = ("auto", "float32", "float16", "bfloat16")


def _number(text: str, kind: type[int] | type[float]) -> float:
    try:
        value = kind(text)
    except ValueError:
        name = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def int_at_least(low: int) -> Callable[[str], int]:
    """An integer >= ``low``."""

    def parse(text: str) -> int:
        value = int(_number(text, int))
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def float_in(low: float, high: float | None = None, *, low_open: bool = False,
             high_open: bool = False) -> Callable[[str], float]:
    """A finite float in [low, high] (open ends when asked; ``high=None``: no upper bound)."""

    def parse(text: str) -> float:
        value = float(_number(text, float))
        too_low = value <= low if low_open else value < low
        too_high = high is not None and (value >= high if high_open else value > high)
        if too_low or too_high:
            lo = "(" if low_open else "["
            hi = "inf)" if high is None else (f"{high:g})" if high_open else f"{high:g}]")
            raise argparse.ArgumentTypeError(f"must lie in {lo}{low:g}, {hi}, got {value:g}")
        return value

    parse.__name__ = "number"
    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
temperature = float_in(0.0)
top_p = float_in(0.0, 1.0, low_open=True)
probability_open = float_in(0.0, 1.0, low_open=True, high_open=True)
non_negative_float = float_in(0.0)


def device(text: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (availability is checked when the model loads)."""
    head, sep, index = text.partition(":")
    if text in DEVICES or (head == "cuda" and sep and index.isdigit()):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown device {text!r}; expected one of {', '.join(DEVICES)} or cuda:N"
    )


def dtype(text: str) -> str:
    if text in DTYPES:
        return text
    raise argparse.ArgumentTypeError(f"unknown dtype {text!r}; expected one of {', '.join(DTYPES)}")


def int_between(low: int, high: int) -> Callable[[str], int]:
    """An integer in [low, high]: options whose memory grows with their value get a ceiling
    far above any real protocol, so a typo fails at once instead of allocating gigabytes."""
    at_least = int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value:,}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


#: Ceilings of options whose memory grows with their value (see :func:`int_between`).
MAX_SAMPLES = 10_000
MAX_TOKENS = 1_048_576
MAX_BATCH = 4096
MAX_FEWSHOT = 64
#: training steps and self-play cycles: plans and stores grow with them
MAX_STEPS = 1_000_000
samples = int_between(1, MAX_SAMPLES)
max_tokens = int_between(1, MAX_TOKENS)
batch_size = int_between(1, MAX_BATCH)
fewshot = int_between(0, MAX_FEWSHOT)
steps = int_between(1, MAX_STEPS)


def writable_error(path: Path, *, directory: bool) -> str | None:
    """Why ``path`` could not be written (None when it can): the path or its nearest
    existing folder is tried for real (a file created and removed), so read-only file
    systems and permissions are caught whoever runs the command."""
    path = Path(path).expanduser()
    if path.exists():
        if directory and not path.is_dir():
            return f"{path} exists and is not a directory"
        if not directory and path.is_dir():
            return f"{path} is a directory, not a file"
        if not directory and not os.access(path, os.W_OK):
            return f"{path} is not writable"
    folder = path if directory and path.is_dir() else None
    for parent in path.parents:
        if folder is not None:
            break
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a directory"
            folder = parent
    folder = folder or Path(".")
    try:
        fd, probe = tempfile.mkstemp(prefix=".spade-write-test-", dir=folder)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return f"cannot write into {folder} ({reason})"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def output_dir(text: str) -> Path:
    """A directory to write into: refused at parse time when it (or the folder it would be
    created in) cannot be written, or when the path is a file."""
    path = Path(text).expanduser()
    problem = writable_error(path, directory=True)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return path


def output_file(text: str) -> Path:
    """A file to write: refused at parse time when it is a directory or cannot be written."""
    path = Path(text).expanduser()
    problem = writable_error(path, directory=False)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return path


def add_run_dir(parser: argparse.ArgumentParser, default: str) -> None:
    """``--run-dir DIR`` (alias ``--out``) of a command whose run resumes in its directory."""
    parser.add_argument("--run-dir", "--out", dest="run_dir", type=output_dir, metavar="DIR",
                        help=f"run directory (default: {default}, so rerunning the same "
                             "command resumes)")


def run_dir_resume(args: argparse.Namespace, prog: str) -> str | None:
    """The command that resumes the run of a command with :func:`add_run_dir` (``prog``:
    the command's name), once its run directory is resolved (``args.resolved_run_dir``)."""
    from spade.rundir import resume_command

    run_dir = getattr(args, "resolved_run_dir", None)
    if run_dir is None:
        return None
    return resume_command(prog, args.argv, ("--run-dir", "--out"), Path(run_dir))


def add_run_modes(parser: argparse.ArgumentParser, where: str = "the directory",
                  what: str = "run directory") -> None:
    """``--resume | --new-run``: the two ways to treat a run already in the output folder
    (``where``, ``what``: how the command's help names it), in the same words on every
    command that resumes one."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help=f"insist on continuing the run in {where} (error if none)")
    mode.add_argument("--new-run", action="store_true",
                      help=f"move an existing {what} aside to DIR.prev-N, start over")


def check_device_available(requested: str | None) -> None:
    """UserError when ``cuda`` is asked for and this torch build cannot use it."""
    if requested is None or not requested.startswith("cuda"):
        return
    from spade.errors import UserError

    try:
        import torch
    except ImportError:
        raise UserError(f"--device {requested}: torch is not installed") from None
    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else "no visible GPU"
        raise UserError(
            f"--device {requested}: torch {torch.__version__} has {build}; "
            "use --device cpu (or auto), or install a CUDA build of torch"
        )


def assignment(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set``: a dotted key and a YAML value (``4``, ``0.5``, ``false``,
    ``[math, logic]``, ``null``; anything else is text)."""
    import yaml

    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or not all(part.strip() for part in key.split(".")):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with a dotted KEY, got {text!r}")
    try:
        return key, yaml.safe_load(value)
    except yaml.YAMLError:
        raise argparse.ArgumentTypeError(f"{key}: malformed value {value!r}") from None


assignment.__name__ = "KEY=VALUE"


def add_set(parser: argparse.ArgumentParser, what: str, example: str) -> None:
    """``--set KEY=VALUE`` (repeatable): one field of ``what``, through the same dotted
    setter as every other override; applied after the command's own options."""
    parser.add_argument("--set", dest="sets", action="append", type=assignment, default=[],
                        metavar="KEY=VALUE",
                        help=f"override one field of {what} by its dotted key (e.g. "
                             f"{example}); repeatable, applied after the other options")
