"""The scripted designer's broken variants fail the REAL validator at the intended rule,
and the scripted agent plays better with the hint."""

from __future__ import annotations

import random

import pytest

from spade.cycle import BREAKS, ScriptedAgent, ScriptedDesigner, break_source, design_reply
from spade.cycle._pool import HandlePool
from spade.cycle._scripted import FastScriptedPolicy
from spade.designer import ParseFailure, parse_design, validate_design
from spade.envs import get_example, load_example_source
from spade.episodes import EpisodeJob, run_episodes
from spade.policy import SamplingParams, ScriptedPolicy
from spade.sandbox import Sandbox
from spade.validate import Stage

EXPECTED = {  # stage, and a word the verdict's reason must contain
    "syntax_error": ({Stage.SOURCE}, "syntax"),
    "global_rng": ({Stage.SOURCE}, "seed"),
    "answer_leak": ({Stage.ANSWER_LEAK}, "answer"),
    "crashing_step": ({Stage.TYPES, Stage.REWARDS}, "RuntimeError"),
}


@pytest.mark.parametrize("how", sorted(EXPECTED))
def test_broken_variant_fails_its_rule(how: str, sandbox: Sandbox) -> None:
    example = get_example("divisor_sum")
    reply = design_reply(break_source(example.source(), how), example.hint)
    design = parse_design(reply)
    assert design.ok, design.reason
    verdict = validate_design(design, sandbox=sandbox)
    stages, word = EXPECTED[how]
    assert not verdict.valid
    assert verdict.stage in stages, (verdict.stage, verdict.reason)
    assert word in verdict.reason, verdict.reason


def test_missing_hint_is_a_parse_failure() -> None:
    source = load_example_source("number_guess")
    reply = design_reply(break_source(source, "missing_hint"), None)
    assert parse_design(reply).failure is ParseFailure.NO_HINT
    assert parse_design(reply, require_hint=False).ok


def test_unbroken_examples_are_valid(sandbox: Sandbox) -> None:
    for name in ("number_guess", "refund_desk"):
        example = get_example(name)
        design = parse_design(design_reply(example.source(), example.hint))
        assert validate_design(design, sandbox=sandbox).valid


def test_designer_breaks_about_one_in_six() -> None:
    designer = ScriptedDesigner("games")
    messages = [{"role": "system", "content": "design"}, {"role": "user", "content": "go"}]
    replies = [designer.respond(messages, random.Random(i)) for i in range(300)]
    broken = sum(1 for r in replies if r.count("<hint>") == 0 or "broken(self:" in r
                 or "random.seed(" in r or "_leaky_reset" in r or "_crashing_step" in r)
    assert 25 <= broken <= 75  # 1/6 of 300 = 50
    assert replies == [designer.respond(messages, random.Random(i)) for i in range(300)]
    assert set(BREAKS) >= {"syntax_error", "missing_hint", "answer_leak", "global_rng",
                           "crashing_step"}


def test_designer_as_hint_writer_returns_the_example_hint() -> None:
    example = get_example("code_breaker")
    messages = [{"role": "system", "content": "You write privileged hints for environments"},
                {"role": "user", "content": f"```python\n{example.source()}\n```"}]
    assert ScriptedDesigner().respond(messages, random.Random(0)) == f"<hint>{example.hint}</hint>"


def test_fast_parse_matches_the_reference_parser() -> None:
    fast, ref = FastScriptedPolicy(lambda m: ""), ScriptedPolicy(lambda m: "")
    rng = random.Random(1)
    alphabet = [0, 1, 2, 3, 5, 6, 13, 40, 100, ord("\n") + 3, 70_000]
    for _ in range(2000):
        ids = [rng.choice(alphabet) for _ in range(rng.randrange(40))]
        assert fast.parse(ids) == ref.parse(ids)
    transcript = ref.render([{"role": "system", "content": "a\nb"},
                             {"role": "user", "content": "é 😀 \\boxed{1}"}])
    assert fast.parse(transcript) == ref.parse(transcript)


@pytest.mark.parametrize("name", ["number_guess", "meeting_scheduler"])
def test_scripted_agent_solves_more_with_the_hint(name: str, sandbox: Sandbox) -> None:
    example = get_example(name)
    agent = ScriptedAgent(p_hinted=0.95, p_unhinted=0.2)
    policy = FastScriptedPolicy(agent.respond)
    seeds = list(range(12))
    with HandlePool(sandbox, {name: example.source()}) as pool:
        agent.prepare(pool, [(name, example.hint, seeds)])
        jobs = [EpisodeJob(name, s, h) for s in seeds for h in (example.hint, None)]
        plays = run_episodes(policy, jobs, pool, SamplingParams(seed=0))
    hinted = sum(t.won for t in plays if t.hint is not None)
    unhinted = sum(t.won for t in plays if t.hint is None)
    assert hinted > unhinted
    assert hinted >= 6
