"""Package layout: the repository keeps ``spade/``, ``train/`` and ``eval/`` at the top, and
installs the last two inside the ``spade`` namespace (``spade.train``, ``spade.eval``), so
that nothing named ``train`` or ``eval`` lands in site-packages. Everything else about the
project is in pyproject.toml."""

from setuptools import find_packages, setup

#: top-level folder -> the package it installs as
NESTED = {"train": "spade.train", "eval": "spade.eval"}


def _packages() -> list[str]:
    found = find_packages(include=["spade", "spade.*"])
    for folder, package in NESTED.items():
        found += [package + name[len(folder):]
                  for name in find_packages(include=[folder, f"{folder}.*"])]
    return found


setup(packages=_packages(), package_dir={package: folder for folder, package in NESTED.items()})
