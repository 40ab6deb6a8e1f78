"""The base of agentic suites: whole episodes per (item, sample), scored by the suite.

The runner hands an agentic suite a chunk of requests (item, sample, opening messages,
sampling with the request's seed) together with the provider, and gets back one
``(completion, Scored)`` per request. The completion is the episode script
(:func:`spade.eval.agent.encode_script`), so a run's own samples file replays it; the transcript
goes into ``Scored.details["transcript"]`` for exports. Stores, resume, statistics and
reports are the same as for single-turn suites.

It lives beside the suite base (not in ``spade.eval.agent``) so that importing the agent loop
never imports the suites; ``spade.eval.agent.EpisodeSuite`` names it lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from spade.eval.suites._base import Item, Scored, SingleTurnSuite

from spade.policy._types import Message

if TYPE_CHECKING:
    from spade.eval.providers._base import Provider, Request


class EpisodeSuite(SingleTurnSuite):
    """Subclasses implement ``load``, ``messages`` (the opening, hashed for resume) and
    ``play``."""

    kind: ClassVar[str] = "agentic"

    def messages(self, item: Item, sample: int) -> list[Message]:
        raise NotImplementedError

    def play(
        self, requests: Sequence[Request], provider: Provider
    ) -> list[tuple[str, Scored]]:
        """Play and score one episode per request, in order."""
        raise NotImplementedError

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        raise NotImplementedError(f"{self.id} scores whole episodes in play()")


def kept_episode(messages: list[Message], scored: Scored) -> tuple[str, Scored]:
    """What the runner keeps of one episode played by ``run_episode``: the completion a
    replay needs (the episode script, else what was extracted) and the score with the
    conversation in ``details["messages"]``."""
    details = dict(scored.details)
    completion = str(details.pop("script", "") or scored.extracted or "")
    details["messages"] = messages
    return completion, Scored(scored.extracted, scored.score, details)
