"""SPADE: self-play in adaptive synthetic executable environments.

The public API is re-exported from the subpackages: ``spade.envs`` (the environment
contract), ``spade.sandbox`` (isolated execution), ``spade.validate`` (the verdict), and the
self-play pieces. Importing ``spade`` never imports torch, transformers or vllm.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

# Installed, ``spade.train`` and ``spade.eval`` are subpackages (see setup.py). In a source
# checkout run without installing (e.g. ``PYTHONPATH=.``), their folders sit beside this one:
# the checkout root joins the search path of this package so that the same names resolve.
_CHECKOUT = Path(__file__).resolve().parent.parent
if not (Path(__file__).resolve().parent / "train").is_dir() and all(
        (_CHECKOUT / name / "__init__.py").is_file() for name in ("train", "eval")):
    __path__.append(str(_CHECKOUT))
