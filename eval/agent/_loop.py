"""The tool-calling loop: model steps for every open session, tool results fed back.

One :func:`play_turn` call runs the current turn of every session to its end. Each round
makes ONE batched call to the model backend for all sessions whose turn is still open,
then runs each session's calls in its environment. A turn ends when a reply calls no tool;
a session that keeps calling tools past ``max_steps`` calling steps is stopped (its
episode cannot be finished), as is one whose next prompt no longer fits the context, or
one whose suite renders its prompts as a reference harness does (``render_prompt``) where
that harness cannot render the history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from spade.eval.agent._models import StepModel
from spade.eval.agent._session import AgentSession, Decision, PromptUnrenderable, Reply

from spade.policy._types import SamplingParams


def play_turn(
    sessions: Sequence[AgentSession],
    model: StepModel,
    params: SamplingParams,
    *,
    max_steps: int = 20,
    single_step: bool = False,
) -> None:
    """Run the open turn of each session until it ends (see the module docstring).

    ``params.seed`` is ignored: every step samples with the session's own step seed.
    ``single_step`` ends each turn after its first reply without running its calls.
    """

    def run_calls(session: AgentSession, reply: Reply, seed: int) -> None:
        calls = session.book(reply, seed, single_step=single_step)
        if calls:
            session.deliver(session.env.execute(calls), max_steps=max_steps)

    _play(sessions, model, params, run_calls)


def play_decided_turn(
    sessions: Sequence[AgentSession],
    model: StepModel,
    params: SamplingParams,
    decide: Callable[[AgentSession, Reply], Decision],
    *,
    max_steps: int = 20,
) -> None:
    """Like :func:`play_turn`, but each reply is read and its calls run by ``decide`` (a
    suite's reference implementation): a reply it cannot read, or one without calls,
    ends the turn with nothing run."""

    def run_decided(session: AgentSession, reply: Reply, seed: int) -> None:
        decision = None if reply.finish_reason == "context" else decide(session, reply)
        session.book_decided(reply, seed, decision, max_steps=max_steps)

    _play(sessions, model, params, run_decided)


def _play(sessions: Sequence[AgentSession], model: StepModel, params: SamplingParams,
          act: Callable[[AgentSession, Reply, int], None]) -> None:
    """Rounds of one batched model step for every session whose turn is open, each reply
    handed to ``act`` (with its step seed), until no turn is open."""
    active = _rendered([s for s in sessions if s.turn_open])
    while active:
        replies, seeds = _step_all(active, model, params)
        still = []
        for session, reply, seed in zip(active, replies, seeds, strict=True):
            act(session, reply, seed)
            if session.turn_open:
                still.append(session)
        active = _rendered(still)


def _rendered(active: Sequence[AgentSession]) -> list[AgentSession]:
    """The sessions that go on to a model step: each with a ``render_prompt`` gets the
    reference harness's prompt text first; one it cannot render ends there (never asked)."""
    out = []
    for s in active:
        if s.render_prompt is not None:
            try:
                s.prompt_text = s.render_prompt(s)
            except PromptUnrenderable as exc:
                s.fail_render(str(exc))
                continue
        out.append(s)
    return out


def _step_all(
    active: Sequence[AgentSession], model: StepModel, params: SamplingParams
) -> tuple[list[Reply], list[int]]:
    """One batched model call for every open session, each with its own step seed."""
    seeds = [s.step_seed() for s in active]
    replies = list(model.step(active, [replace(params, seed=x) for x in seeds]))
    if len(replies) != len(active):
        raise RuntimeError(f"model {model.name!r} gave {len(replies)} replies "
                           f"for {len(active)} sessions")
    return replies, seeds
