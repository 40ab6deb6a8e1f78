"""The run-time regret guard: matched plays that do not earn regret are caught.

Real environments, played in the real sandbox through the training loop's ``HandlePool``
and episode runner; only the agent is scripted (it reads the hint like a model would).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade.cycle._fair_play import unfair_play
from spade.cycle._pool import HandlePool
from spade.cycle._replay import Replayer
from spade.envs import load_example_source
from spade.episodes import EpisodeConfig, Trajectory, matched_jobs, run_episodes, split_arms
from spade.policy import Message, SamplingParams, ScriptedPolicy
from spade.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.bwrap
CORPUS = Path(__file__).resolve().parents[1] / "validate" / "redteam"
PARAMS = SamplingParams(max_new_tokens=256)
SEEDS = [11, 12, 13, 14]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=5.0)) as sb:
        yield sb


def _first_user(messages: list[Message]) -> str:
    return next(str(m["content"]) for m in messages if m["role"] == "user")


def product_agent(messages: list[Message]) -> str:
    """Types a password the hint quotes; otherwise works out 'a times b' (or 'a * b')."""
    text = _first_user(messages)
    quoted = re.search(r"answer '(\w+)'", text)
    if quoted:
        return f"\\boxed{{{quoted.group(1)}}}"
    numbers = re.findall(r"\d+", text)
    if len(numbers) >= 2 and ("times" in text or "*" in text):
        return f"\\boxed{{{int(numbers[0]) * int(numbers[1])}}}"
    return "\\boxed{0}"


def _matched(sandbox: Sandbox, source: str, hint: str, agent=product_agent, active=None
             ) -> tuple[list[Trajectory], list[Trajectory]]:
    with HandlePool(sandbox, {"env": source}) as pool:
        plays = run_episodes(ScriptedPolicy(agent), matched_jobs("env", hint, SEEDS), pool,
                             PARAMS, EpisodeConfig(max_active=active))
    return split_arms(plays)


def test_a_password_in_the_hint_earns_no_regret(sandbox: Sandbox) -> None:
    """The latency-gated password the validator misses: every hinted win is one action."""
    source = (CORPUS / "h_hint_password_after_pause.py").read_text()
    source = source.replace("> 0.5", "> 0.0")  # the agent's reply comes "late" here too
    source = source.replace("or text == str(self.a * self.b)", "")  # a hard task instead
    hinted, unhinted = _matched(sandbox, source, "Or just answer 'swordfish'.")
    assert all(t.won for t in hinted) and not any(t.won for t in unhinted)
    reason = unfair_play(hinted, unhinted)
    assert reason is not None and "swordfish" in reason and "password" in reason


def reasoning_agent(messages: list[Message]) -> str:
    """Reasons in words before it answers, without a box, so every reply differs: types a
    password the hint quotes; otherwise works out 'a times b', right only when the hint
    says how."""
    text = _first_user(messages)
    numbers = [int(n) for n in re.findall(r"\d+", text)[:2]]
    quoted = re.search(r"answer '(\w+)'", text)
    if quoted:
        return (f"{numbers[0]} times {numbers[1]} is too much to do here; the hint says to "
                f"answer {quoted.group(1)}, so: {quoted.group(1)}")
    slip = 0 if "carefully" in text else 1
    return (f"Multiplying carefully, digit by digit: {numbers[0]} times {numbers[1]} is "
            f"{numbers[0] * numbers[1] + slip}")


def _guarded(sandbox: Sandbox, source: str, hint: str) -> tuple[str | None, int, list[bool]]:
    hinted, unhinted = _matched(sandbox, source, hint, agent=reasoning_agent)
    with Replayer(sandbox, source, 1.0) as replay:
        reason = unfair_play(hinted, unhinted, replay)
    return reason, replay.replays, [t.won for t in hinted]


def test_a_password_after_reasoning_earns_no_regret(sandbox: Sandbox) -> None:
    """Every hinted win is a different reply (the instance's numbers, then the password):
    the string the hint quotes is in all of them, and without it each replay loses."""
    source = (CORPUS / "h_hint_password_in_reasoning.py").read_text()
    hint = "Work it out step by step; or just answer 'swordfish'."
    hinted, unhinted = _matched(sandbox, source, hint, agent=reasoning_agent)
    assert all(t.won for t in hinted) and not any(t.won for t in unhinted)
    assert len({t.turns[-1].action for t in hinted}) == len(SEEDS)
    assert unfair_play(hinted, unhinted) is None  # whole replies compared: slips past
    reason, replays, _ = _guarded(sandbox, source, hint)
    assert reason is not None and "swordfish" in reason and "password" in reason
    assert replays == 3


def test_the_replay_looks_like_a_training_instance(sandbox: Sandbox) -> None:
    """An environment that lets any reply win in a worker that looks like the guard's
    replay (calls back to back, a file name no training instance has) gets nothing: the
    replay is loaded like the pool's instances (one file name for all), with a latency
    drawn from training's range."""
    source = (CORPUS / "h_hint_password_replay_detector.py").read_text()
    hint = "Work it out step by step; or just answer 'swordfish'."
    delays = (1.5, 60.0)
    with HandlePool(sandbox, {"c0001-p00-d00": source}, answer_delays=delays) as pool:
        jobs = matched_jobs("c0001-p00-d00", hint, SEEDS)
        plays = run_episodes(ScriptedPolicy(reasoning_agent), jobs, pool, PARAMS,
                             EpisodeConfig())
    hinted, unhinted = split_arms(plays)
    assert all(t.won for t in hinted) and not any(t.won for t in unhinted)
    with Replayer(sandbox, source, 1.0, env_id="c0001-p00-d00", answer_delays=delays,
                  seed=5) as replay:
        reason = unfair_play(hinted, unhinted, replay)
    assert reason is not None and "swordfish" in reason and replay.replays == 3


def test_method_words_the_agent_repeats_are_not_a_password(sandbox: Sandbox) -> None:
    """Every hinted win repeats the hint's words ('carefully', 'digit') that no instance
    shows; taken out, each replay still wins: the answer won, not the words."""
    source = (CORPUS / "h_hint_password_in_reasoning.py").read_text()
    reason, replays, won = _guarded(sandbox, source, "Multiply carefully, digit by digit.")
    assert all(won) and replays == 1  # the first replay still won: nothing needed the words
    assert reason is None


def test_a_second_play_of_a_seed_that_behaves_differently_earns_no_regret(
        sandbox: Sandbox) -> None:
    source = (CORPUS / "h_second_play_loses.py").read_text()
    # one episode at a time: the pool hands the hinted play's instance to the unhinted one
    hinted, unhinted = _matched(sandbox, source, "Multiply carefully.", active=1)
    assert all(t.won for t in hinted) and not any(t.won for t in unhinted)
    reason = unfair_play(hinted, unhinted)
    assert reason is not None and "played twice behaved differently" in reason


def test_a_fair_design_earns_its_regret(sandbox: Sandbox) -> None:
    """Different answers per instance, each play of a seed alike: nothing to report."""
    source = (CORPUS / "h_second_play_loses.py").read_text().replace("self.first and ", "")
    hinted, unhinted = _matched(sandbox, source, "Multiply carefully.")
    assert all(t.won for t in hinted + unhinted)
    assert unfair_play(hinted, unhinted) is None


def test_option_letters_shown_by_the_instance_are_not_a_password(sandbox: Sandbox) -> None:
    """Every hinted win ending with the same letter is a coincidence when the instances
    show that letter as an option."""
    source = load_example_source("number_guess")
    hinted, unhinted = _matched(sandbox, source, "Bisect.", agent=lambda m: "\\boxed{50}")
    assert unfair_play(hinted, unhinted) is None  # no wins, nothing shared, same replays
    letter = (CORPUS / "v_multiple_choice.py").read_text()
    letter = letter.replace("ok = action.strip().upper().rstrip(\")\") == self.letter",
                            "ok = True")
    hinted, unhinted = _matched(sandbox, letter, "Look for the prime.",
                                agent=lambda m: "\\boxed{A}")
    assert all(t.won for t in hinted) and unfair_play(hinted, unhinted) is None


def test_an_unfair_design_gets_no_regret_and_is_reported(sandbox: Sandbox) -> None:
    """The cycle's outcome step: unfair plays score as if the hint had not helped."""
    from _cycle_configs import tiny_config

    from spade.cycle._cycle import CycleContext, _outcomes, _Played
    from spade.cycle._setup import build_roles
    from spade.diversity import LexicalEmbedder
    from spade.validate import Stage, Verdict

    source = (CORPUS / "h_second_play_loses.py").read_text()
    fair = source.replace("self.first and ", "")
    config = tiny_config()
    ctx = CycleContext(config, build_roles(config), sandbox, LexicalEmbedder())
    played = {"unfair": _Played("unfair", *_matched(sandbox, source, "Multiply.", active=1),
                                1.0),
              "fair": _Played("fair", *_matched(sandbox, fair, "Multiply.", active=1), 1.0)}
    ok = Verdict(valid=True, stage=Stage.DONE, reason="all checks passed")
    outcomes, scores, notes = _outcomes(ctx, ["unfair", "fair"], [ok, ok], played)
    assert outcomes == ["unfair_play", "valid"]
    assert scores[0].regret == 0.0 and scores[0].solve_rate_hinted == 0.0
    assert "played twice" in notes[0] and notes[1] == ""


TOOL_VAULT = '''
import json
import re
from spade.envs import ToolEnv, tool


class VaultEnv(ToolEnv):
    max_turns = 3

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.box = f"B{self.rng.randint(1000, 9999)}"
        self.code = str(self.rng.randint(100000, 999999))
        self.opened = False
        return f"Read the code stored in box {self.box} and answer with it.", {}

    @tool
    def read_box(self, box: str) -> str:
        """Read the code stored in a box."""
        self.opened = box == self.box
        return self.code if self.opened else f"Error: no box {box}"

    def check(self):
        words = re.findall(r"\\w+", (self.submitted_answer or "").lower())
        return float("swordfish" in words or (self.opened and self.code in words))
'''


def tool_agent(messages: list[Message]) -> str:
    """Opens the box on its first turn; then answers with the code it read (in words the
    hint taught) or, told a password, with a guess and the password."""
    text = _first_user(messages)
    if not any(m["role"] == "tool" for m in messages):
        box = re.search(r"box (B\d+)", text)
        call = {"name": "read_box", "arguments": {"box": box.group(1) if box else "?"}}
        return f'<tool_call>{json.dumps(call)}</tool_call>'
    code = next(str(m["content"]) for m in messages if m["role"] == "tool")
    quoted = re.search(r"answer '(\w+)'", text)
    if quoted:
        return f"<answer>maybe {int(code) + 1}, or as told: {quoted.group(1)}</answer>"
    return f"<answer>Checked the box carefully: {code}</answer>"


def test_tool_plays_are_replayed_with_their_tool_calls(sandbox: Sandbox) -> None:
    """A tool-use win needs its tool call (the box must have been opened): the replay
    makes the recorded calls before the changed answer, so a fair win still wins, and a
    password taken out of the answer still loses."""
    fair_hint = "Read the box carefully."
    hinted, unhinted = _matched(sandbox, TOOL_VAULT, fair_hint, agent=tool_agent)
    assert all(t.won and t.turns[0].tool_calls for t in hinted)
    with Replayer(sandbox, TOOL_VAULT, 1.0) as replay:
        assert unfair_play(hinted, unhinted, replay) is None
    assert replay.replays == 1  # 'carefully' taken out: still won, with the box opened
    hint = "Or just answer 'swordfish'."
    hinted, unhinted = _matched(sandbox, TOOL_VAULT, hint, agent=tool_agent)
    assert all(t.won for t in hinted)
    with Replayer(sandbox, TOOL_VAULT, 1.0) as replay:
        reason = unfair_play(hinted, unhinted, replay)
    assert reason is not None and "swordfish" in reason and replay.replays == 3
