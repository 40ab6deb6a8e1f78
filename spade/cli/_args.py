"""Argument types shared by every ``spade`` command, so one option means one thing.

Each is an ``argparse`` ``type=`` callable: a bad value stops the command at parse time
with ``spade CMD: error: argument --x: ...`` and exit 2, before any model or data loads.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

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


def output_dir(text: str) -> Path:
    """A directory to write into: refused when the path exists and is not a directory."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} exists and is not a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{parent} is a file, not a directory")
            break
    return path


def output_file(text: str) -> Path:
    """A file to write: refused when the path is an existing directory."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory, not a file")
    return path


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
