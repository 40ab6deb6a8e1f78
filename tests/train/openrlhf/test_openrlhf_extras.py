"""The ``gpu`` extra pins one combination of torch, vLLM, transformers, OpenRLHF, TRL,
DeepSpeed, flash-attn and Ray, and every pin satisfies what the others require: TRL's and
OpenRLHF's requirements are read from their installed metadata (where installed); vLLM's
from its published 0.29.0 metadata, which cannot be installed on a CPU machine."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[3]
#: vllm 0.29.0's own requirements on the packages pinned here (its wheel's METADATA).
VLLM_0_29_0 = ["torch==2.13.0", "transformers>=5.10.4", "tokenizers>=0.21.1"]
PINNED = {"torch", "transformers", "vllm", "openrlhf", "trl", "deepspeed", "flash-attn",
          "ray"}


def _extra(name: str, extras: dict[str, list[str]]) -> list[Requirement]:
    out = []
    for line in extras[name]:
        req = Requirement(line)
        if req.name == "spade-rl":
            for sub in sorted(req.extras):
                out += _extra(sub, extras)
        else:
            out.append(req)
    return out


def _pins() -> dict[str, str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    pins: dict[str, str] = {}
    for req in _extra("gpu", extras):
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if exact:
            assert pins.setdefault(req.name, exact[0]) == exact[0], req
    return pins


def _check(requirements: list[str], pins: dict[str, str], extras: set[str]) -> None:
    for line in requirements:
        req = Requirement(line)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e})
                                              for e in extras | {""}):
            continue
        if req.name in pins:
            assert req.specifier.contains(pins[req.name], prereleases=True), (line, pins)


def test_the_gpu_extra_pins_every_framework() -> None:
    pins = _pins()
    assert set(pins) >= PINNED, PINNED - set(pins)
    _check(VLLM_0_29_0, pins, set())


@pytest.mark.parametrize(("package", "extras"), [("trl", set()), ("openrlhf", {"vllm"})])
def test_installed_metadata_accepts_the_pins(package: str, extras: set[str]) -> None:
    try:
        reqs = requires(package) or []
    except PackageNotFoundError:
        pytest.skip(f"{package} is not installed here")
    pins = _pins()
    assert package in pins
    _check(reqs, pins, extras)


def test_the_openrlhf_extra_brings_vllm() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert "vllm" in {r.name for r in _extra("openrlhf", extras)}
