"""The built-in scripted designer and agent: a whole self-play cycle without any model.

Both are ``respond(messages, rng)`` callables behind :class:`spade.policy.ScriptedPolicy`,
so the REAL parser, validator, sandbox and episode runner do all the work; only the model's
text is scripted.

- :class:`ScriptedDesigner` replies with a bundled example environment of the setting and
  its registry hint. About one reply in six (drawn from the policy's seeded generator) is
  deliberately broken in one of the ways models break the contract: a syntax error, a
  missing hint, an answer leak in the observation, global RNG seeding, or a crashing
  ``step``. As a hint writer (``hint_source: self``) it returns the example's hint.
- :class:`ScriptedAgent` plays with privileged test-double knowledge: before the plays the
  cycle calls :meth:`ScriptedAgent.prepare`, which asks each environment's own
  ``solution()`` (through the sandbox) for every seed to be played. With the hint the agent
  follows the solution with high probability per action, without it with low probability;
  otherwise it takes a plausible wrong action. So the hint measurably helps, and regret is
  positive, as for a learnable task.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spade.designer import as_setting
from spade.envs import ExampleEnv, format_tool_call, list_examples
from spade.episodes import EnvProvider, first_observation
from spade.policy import Generation, Message, SamplingParams, ScriptedPolicy
from spade.sandbox import EnvFault

#: The ways a scripted design is broken on purpose (each fails a different validator rule).
BREAKS = ("syntax_error", "missing_hint", "answer_leak", "global_rng", "crashing_step")
_CLASS = re.compile(r"^class[ \t]+(\w+Env)\b", re.MULTILINE)
_HINT_WRITER_MARK = "You write privileged hints"
_PAD, _IM_START, _IM_END, _OFFSET = 0, 1, 2, 3  # the scripted tokenizer's special ids
_OPEN, _CLOSE = "\x02", "\x03"  # stand-ins for IM_START / IM_END in the decoded text
_MARKER = re.compile("[\x02\x03]")


def _examples(kind: str) -> list[ExampleEnv]:
    return [e for e in list_examples() if e.kind == kind]


def break_source(source: str, how: str) -> str:
    """A broken variant of a valid environment module (``how`` is one of :data:`BREAKS`)."""
    name = _CLASS.findall(source)[-1]
    if how == "syntax_error":
        return source.replace("    def step(", "    def broken(self:\n\n    def step(", 1)
    if how == "global_rng":
        seeded = source.replace(
            "super().reset(seed=seed)\n", "super().reset(seed=seed)\n        random.seed(1234)\n", 1
        )
        future = "from __future__ import annotations\n"
        if future in seeded:
            return seeded.replace(future, future + "import random\n", 1)
        return "import random\n" + seeded
    if how == "answer_leak":
        return source + (
            f"\n\n_plain_reset = {name}.reset\n\n\n"
            "def _leaky_reset(self, seed=None, options=None):\n"
            "    observation, info = _plain_reset(self, seed=seed, options=options)\n"
            "    steps = [s for s in self.solution() if isinstance(s, str)]\n"
            "    return observation + ' (Answer: ' + ' '.join(steps) + ')', info\n\n\n"
            f"{name}.reset = _leaky_reset\n"
        )
    if how == "crashing_step":
        return source + (
            "\n\ndef _crashing_step(self, action):\n"
            "    raise RuntimeError('step is not implemented yet')\n\n\n"
            f"{name}.step = _crashing_step\n"
        )
    if how == "missing_hint":
        return source
    raise ValueError(f"unknown break {how!r}; expected one of {BREAKS}")


def design_reply(source: str, hint: str | None) -> str:
    """A designer reply in the designer reply format (no hint tag when ``hint`` is None)."""
    reply = f"Here is the environment.\n\n```python\n{source.rstrip()}\n```\n"
    return reply + (f"<hint>{hint}</hint>\n" if hint is not None else "")


@dataclass(frozen=True)
class ScriptedDesigner:
    """Emits bundled examples of ``setting``; ``broken_rate`` of them broken on purpose."""

    setting: str = "games"
    broken_rate: float = 1 / 6

    def respond(self, messages: list[Message], rng: random.Random) -> str:
        system = str(messages[0].get("content", "")) if messages else ""
        if system.startswith(_HINT_WRITER_MARK):
            return self._hint_for(str(messages[-1].get("content", "")))
        pool = _examples(as_setting(self.setting).kind)
        example = pool[rng.randrange(len(pool))]
        source, hint = example.source(), example.hint
        if rng.random() < self.broken_rate:
            breaks = BREAKS if example.kind == "game" else tuple(
                b for b in BREAKS if b != "answer_leak")
            how = breaks[rng.randrange(len(breaks))]
            return design_reply(break_source(source, how), None if how == "missing_hint" else hint)
        return design_reply(source, hint)

    def _hint_for(self, code: str) -> str:
        names = set(_CLASS.findall(code))
        for example in list_examples():
            if names & set(_CLASS.findall(example.source())):
                return f"<hint>{example.hint}</hint>"
        return "<hint>Work through the task step by step and check each result.</hint>"


@dataclass(frozen=True)
class _Known:
    kind: str  # "game" | "tool"
    solution: tuple[Any, ...]
    hinted: bool


class ScriptedAgent:
    """Plays from each instance's ``solution()``: likely with the hint, rarely without."""

    def __init__(self, p_hinted: float = 0.9, p_unhinted: float = 0.3) -> None:
        self.p_hinted = p_hinted
        self.p_unhinted = p_unhinted
        self._known: dict[str, _Known] = {}

    def prepare(self, provider: EnvProvider, envs: Sequence[tuple[str, str, Sequence[int]]]
                ) -> None:
        """Learn the solutions of ``(env_id, hint, seeds)`` before they are played.

        Instances come from the cycle's provider. Solutions are keyed by the first user
        message the runner will send (with and without the hint), so the agent recognises
        the instance from its prompt alone.
        """
        self._known = {}
        for env_id, hint, seeds in envs:
            try:
                handle = provider.acquire(env_id)
            except EnvFault:
                continue
            broken = False
            try:
                kind = handle.info.kind
                for seed in seeds:
                    observation = str(handle.reset(seed=seed)[0])
                    solution = handle.solution() if handle.info.has_solution else None
                    steps = tuple(solution) if isinstance(solution, list) else ()
                    self._known[first_observation(observation, None)] = _Known(kind, steps, False)
                    self._known[first_observation(observation, hint)] = _Known(kind, steps, True)
            except EnvFault:
                broken = True
            finally:
                provider.release(env_id, handle, broken=broken)

    def respond(self, messages: list[Message], rng: random.Random) -> str:
        first_user = next((str(m.get("content", "")) for m in messages if m["role"] == "user"), "")
        known = self._known.get(first_user)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if known is None:
            return "I am not sure. \\boxed{0}"
        follow = rng.random() < (self.p_hinted if known.hinted else self.p_unhinted)
        if known.kind == "game":
            return f"My move: \\boxed{{{self._game_action(known.solution, turn, follow, rng)}}}"
        return self._tool_reply(known.solution, turn, follow, rng)

    @staticmethod
    def _game_action(solution: Sequence[Any], turn: int, follow: bool, rng: random.Random) -> str:
        right = str(solution[turn]) if turn < len(solution) else str(rng.randrange(10_000))
        if follow:
            return right
        chars = list(right)
        rng.shuffle(chars)
        wrong = "".join(chars)
        return wrong if wrong != right else str(rng.randrange(10_000))

    @staticmethod
    def _tool_reply(solution: Sequence[Any], turn: int, follow: bool, rng: random.Random) -> str:
        calls = [s for s in solution if isinstance(s, dict)]
        answer = next((s for s in reversed(solution) if isinstance(s, str)), "done")
        if turn < len(calls):
            if follow:
                return format_tool_call(calls[turn]["name"], calls[turn].get("arguments", {}))
            if rng.random() < 0.5:
                return "<answer>I could not complete the request.</answer>"
            other = calls[rng.randrange(len(calls))]
            return format_tool_call(other["name"], other.get("arguments", {}))
        return f"<answer>{answer if follow else 'Request handled.'}</answer>"


class FastScriptedPolicy(ScriptedPolicy):
    """:class:`ScriptedPolicy` with a vectorised ``parse`` (the same messages, faster).

    The scripted policy re-reads the whole transcript on every turn; at one id per character
    the per-character Python loop dominated the harness benchmark. Transcripts containing
    the ids this parser uses as markers (or a pad id) take the reference path. Everything
    else, the per-request random stream included, is the base class's.
    """

    def parse(self, token_ids: Sequence[int]) -> list[Message]:
        ids = np.asarray(token_ids, dtype=np.int64)
        if ids.size == 0:
            return []
        markers = (ids == _PAD) | (ids == ord(_OPEN) + _OFFSET) | (ids == ord(_CLOSE) + _OFFSET)
        if markers.any():
            return super().parse(token_ids)
        codes = np.where(ids >= _OFFSET, ids - _OFFSET,
                         np.where(ids == _IM_START, ord(_OPEN), ord(_CLOSE)))
        try:
            text = codes.astype("<u4").tobytes().decode("utf-32-le")
        except UnicodeDecodeError:  # lone surrogates: let the reference path decide
            return super().parse(token_ids)
        messages: list[Message] = []
        current: str | None = None
        pos = 0
        for found in _MARKER.finditer(text):
            if current is not None:
                current += text[pos:found.start()]
            if found.group() == _OPEN:
                current = ""
            elif current is not None:
                role, _, content = current.partition("\n")
                messages.append({"role": role, "content": content})
                current = None
            pos = found.end()
        return messages


class _WholeReplies(FastScriptedPolicy):
    """A scripted policy that never cuts its replies at ``max_new_tokens``.

    The scripted tokenizer has one id per character, so a model-sized token budget would cut
    the scripted designer's environment files (fixed texts) in the middle.
    """

    def generate(self, prompts: Sequence[Sequence[int]],
                 params: SamplingParams | Sequence[SamplingParams]) -> list[Generation]:
        whole = self.context_window
        budget: Any = (dataclasses.replace(params, max_new_tokens=whole)
                       if isinstance(params, SamplingParams)
                       else [dataclasses.replace(p, max_new_tokens=whole) for p in params])
        return super().generate(prompts, budget)


@dataclass
class ScriptedRoles:
    """The scripted designer and agent as policies, plus the agent's preparation hook."""

    designer: ScriptedPolicy
    agent: ScriptedPolicy
    scripted_agent: ScriptedAgent


def scripted_designer_policy(setting: str, broken_rate: float = 1 / 6) -> ScriptedPolicy:
    """The scripted designer (also a hint writer) as a policy."""
    return _WholeReplies(ScriptedDesigner(setting, broken_rate).respond, name="scripted-designer")


def scripted_roles(setting: str, *, p_hinted: float = 0.9, p_unhinted: float = 0.3,
                   broken_rate: float = 1 / 6) -> ScriptedRoles:
    """Policies for ``--policy scripted`` (deterministic; see the module docstring)."""
    agent = ScriptedAgent(p_hinted, p_unhinted)
    return ScriptedRoles(
        designer=scripted_designer_policy(setting, broken_rate),
        agent=FastScriptedPolicy(agent.respond, name="scripted-agent"),
        scripted_agent=agent,
    )

