"""Where the project is on disk: the one definition every data lookup starts from."""

from __future__ import annotations

from pathlib import Path


def project_root() -> Path:
    """The checkout root: the folder holding the ``spade`` and ``eval`` packages.

    Data that is not part of the repository is looked up beside it by default
    (``../shared/data``, ``../shared/corpora``), unless an environment variable says
    otherwise.
    """
    return Path(__file__).resolve().parent.parent
