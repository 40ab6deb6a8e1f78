"""The suite contract and its registry.

A suite turns a benchmark's data into items, each item into a prompt, and a completion into
a score. Single-turn suites (AIME, GPQA, LiveCodeBench, Reasoning Gym) are batched by the
runner: it asks :meth:`SingleTurnSuite.messages` for every pending (item, sample), sends
them to the provider in batches, and calls :meth:`SingleTurnSuite.score` on each
completion. Agentic suites (BFCL, tau2, ACEBench) will implement :class:`AgenticSuite`
instead: they drive a multi-turn episode themselves, with the evaluated model and any
other role (a user simulator) passed in as providers, and return the same
:class:`Scored` record, so the store, statistics and reports do not change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from spade.errors import UserError
from spade.policy._types import Message

if TYPE_CHECKING:
    from spade.eval._protocol import Protocol as RunProtocol
    from spade.eval.data import DataDir
    from spade.eval.providers._base import Provider



class OracleUnavailable(UserError):
    """The suite has no reference answer the oracle could give."""


@dataclass(frozen=True)
class Item:
    """One benchmark question. ``id`` is the id as in the data file (int or str)."""

    id: int | str
    data: Mapping[str, Any]
    group: str | None = None  # e.g. the Reasoning Gym dataset the item came from

    @property
    def key(self) -> str:
        return str(self.id)


@dataclass(frozen=True)
class Scored:
    """A scored completion: what was extracted, the score in [0, 1], suite-specific facts."""

    extracted: str | None
    score: float
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Loaded:
    """A suite's items plus the files they came from and anything worth recording."""

    items: list[Item]
    files: list[Path]
    notes: dict[str, Any] = field(default_factory=dict)


def render(template: str, **fields: str) -> str:
    """Fill a suite prompt template (``templates/`` here) via the one template renderer."""
    from spade.templates import render_template

    return render_template("spade.eval.suites", template, **fields)


class SingleTurnSuite:
    """Base for one-prompt-one-completion suites; subclasses set ``id`` and the methods."""

    id: ClassVar[str]
    kind: ClassVar[str] = "single_turn"
    #: False where even the full run is not the official benchmark (public-test subsets).
    official: ClassVar[bool] = True

    def __init__(self, protocol: RunProtocol, seed: int) -> None:
        self.protocol = protocol
        self.seed = seed
        #: few-shot demonstrations per item group, set aside by :meth:`take_fewshot`
        self.demonstrations: dict[str | None, list[Message]] = {}

    def load(self, data: DataDir) -> Loaded:
        raise NotImplementedError

    def select(self, items: list[Item]) -> list[Item]:
        """The ``--limit`` slice: the first N items in file order."""
        limit = self.protocol.limit
        return items if limit is None else items[:limit]

    def messages(self, item: Item, sample: int) -> list[Message]:
        """The item's own (zero-shot) prompt."""
        raise NotImplementedError

    def take_fewshot(self, items: list[Item]) -> list[Item]:
        """Set aside the protocol's few-shot demonstrations; the items left to score."""
        from spade.eval.suites import _fewshot

        n = self.protocol.fewshot
        if n and self.kind != "single_turn":
            raise UserError(f"{self.id}: --fewshot applies to single-turn suites, not to "
                            f"{self.kind} episodes")
        shots, rest = _fewshot.split(items, n, self.id)
        self.demonstrations = {g: _fewshot.demonstrations(self, s) for g, s in shots.items()
                               if s}
        return rest

    def prompt(self, item: Item, sample: int) -> list[Message]:
        """What the model is asked: the item's messages after its group's demonstrations."""
        from spade.eval.suites._fewshot import with_demonstrations

        demos = self.demonstrations.get(item.group)
        messages = self.messages(item, sample)
        return with_demonstrations(messages, demos) if demos else messages

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        raise NotImplementedError

    def oracle(self, item: Item, sample: int) -> str:
        """A completion in the expected format carrying the reference answer."""
        raise OracleUnavailable(f"{self.id}: the oracle has no reference answers for this suite")

    def check_oracle(self, items: Sequence[Item]) -> None:
        """Raise :class:`OracleUnavailable` before any work if the oracle cannot answer."""
        if items:
            self.oracle(items[0], 0)

    #: the prompt template files (under ``templates/``) this suite renders
    templates: ClassVar[tuple[str, ...]] = ()

    def template_text(self) -> str:
        """Everything fixed that goes into a prompt besides the item (templates, a system
        prompt), so results can tell whether two runs asked in the same words."""
        folder = Path(__file__).with_name("templates")
        return "\0".join((folder / t).read_text(encoding="utf-8") for t in self.templates)

    def template_sha256(self) -> str:
        return hashlib.sha256(self.template_text().encode("utf-8")).hexdigest()

    def comparable(self) -> bool:
        return self.official and self.protocol.name == "paper"

    def rollup(self, item_scores: Mapping[str, float], items: Sequence[Item]) -> dict[str, Any]:
        """Extra aggregate fields for results.json (categories, per dataset); none by default."""
        return {}

    def close(self) -> None:
        """Release anything held for scoring (sandbox workers)."""


class AgenticSuite(Protocol):
    """Contract for multi-turn suites with tools and extra model roles (follow-up issue)."""

    id: ClassVar[str]
    kind: ClassVar[str]  # "agentic"

    def load(self, data: DataDir) -> Loaded: ...

    def run_episode(
        self, item: Item, sample: int, roles: Mapping[str, Provider]
    ) -> tuple[list[Message], Scored]:
        """Play one episode (``roles["model"]``, optional ``roles["user"]``) and score it."""
        ...


SuiteFactory = type[SingleTurnSuite]
_S = TypeVar("_S", bound=SuiteFactory)


class SuiteRegistry:
    """Suite id -> class. One instance per process lives in ``spade.eval.suites``."""

    def __init__(self) -> None:
        self._suites: dict[str, SuiteFactory] = {}

    def register(self, suite_id: str) -> Callable[[_S], _S]:
        def deco(cls: _S) -> _S:
            if suite_id in self._suites:
                raise ValueError(f"suite {suite_id!r} registered twice")
            cls.id = suite_id
            self._suites[suite_id] = cls
            return cls

        return deco

    def names(self) -> list[str]:
        return list(self._suites)

    def get(self, suite_id: str) -> SuiteFactory:
        if suite_id not in self._suites:
            known = ", ".join(self._suites)
            raise UserError(f"unknown suite {suite_id!r} (known: {known})")
        return self._suites[suite_id]
