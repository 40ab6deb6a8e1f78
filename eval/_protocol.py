"""Protocols: the paper preset of each suite, and what a run changed about it.

A protocol is recorded verbatim in ``results.json``. Its name is ``paper`` only when the
run used the preset unchanged (values equal to the preset count as unchanged); any other
sample count, sampling setting, token budget, ``--limit`` or ``--fewshot`` makes it
``custom``. ``fewshot`` (solved demonstrations before each question, see
``spade.eval.suites._fewshot``) is recorded only when it is not 0, the preset of every suite
but ``rg_easy`` (whose preset has one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from spade.errors import UserError
from spade.policy._types import SamplingParams

PRESETS_FILE = Path(__file__).with_name("protocols.yaml")
#: Fields a user may override from the command line.
OVERRIDABLE = ("samples", "temperature", "top_p", "top_k", "max_tokens", "limit", "fewshot")


@dataclass(frozen=True)
class Protocol:
    """How one suite is run: sample count, sampling, budget, slice and suite extras."""

    name: str
    samples: int
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    limit: int | None = None
    fewshot: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def sampling(self, seed: int | None = None) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            max_new_tokens=self.max_tokens,
            seed=seed,
        )

    def as_record(self) -> dict[str, Any]:
        rec = asdict(self)
        extra = rec.pop("extra")
        if not rec["fewshot"]:
            del rec["fewshot"]
        rec.update(extra)
        return rec


@cache
def _presets() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(PRESETS_FILE.read_text(encoding="utf-8"))
    return dict(data)


def paper(suite: str) -> Protocol:
    """The paper preset of ``suite``."""
    presets = _presets()
    if suite not in presets:
        raise UserError(f"no protocol preset for suite {suite!r}")
    p = dict(presets[suite])
    extra = dict(p.pop("extra", {}) or {})
    return Protocol(name="paper", extra=extra, **p)


def build(
    suite: str, overrides: dict[str, Any], extra: Mapping[str, Any] | None = None
) -> Protocol:
    """The preset with ``overrides`` (``None`` values ignored) applied and named accordingly.

    ``extra`` holds suite options that choose data rather than change the protocol (e.g.
    official LiveCodeBench files); they are recorded but do not make it ``custom``.
    """
    base = paper(suite)
    if extra:
        base = replace(base, extra={**base.extra, **extra})
    changes = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(changes) - set(OVERRIDABLE)
    if unknown:
        raise UserError(f"cannot override protocol field(s) {sorted(unknown)}")
    if "samples" in changes and int(changes["samples"]) < 1:
        raise UserError("--samples must be at least 1")
    if "limit" in changes and int(changes["limit"]) < 1:
        raise UserError("--limit must be at least 1")
    if "max_tokens" in changes and int(changes["max_tokens"]) < 1:
        raise UserError("--max-tokens must be at least 1")
    if "fewshot" in changes and int(changes["fewshot"]) < 0:
        raise UserError("--fewshot must be 0 or more")
    new = replace(base, **changes)
    changed = any(getattr(new, k) != getattr(base, k) for k in OVERRIDABLE)
    return replace(new, name="custom") if changed else new
