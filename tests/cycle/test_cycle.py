"""One cycle with the scripted roles through the real sandbox, validator and runner."""

from __future__ import annotations

import statistics

import pytest
from _cycle_configs import tiny_config

from spade.config import RunConfig
from spade.cycle import (
    PARSE,
    VALID,
    CycleContext,
    CycleResult,
    CycleState,
    build_roles,
    fresh_state,
    run_cycle,
    without_timing,
)
from spade.diversity import LexicalEmbedder
from spade.rewards import Arm
from spade.sandbox import Sandbox


def _state(config: RunConfig) -> CycleState:
    return fresh_state(config)


def _cycle(config: RunConfig, sandbox: Sandbox, cycle: int = 0,
           state: CycleState | None = None) -> tuple[CycleResult, CycleState]:
    state = state or _state(config)
    ctx = CycleContext(config, build_roles(config), sandbox, LexicalEmbedder())
    return run_cycle(ctx, state, cycle), state


@pytest.mark.needs("corpora")
def test_cycle_shapes_groups_and_matched_seeds(sandbox: Sandbox) -> None:
    config = tiny_config(**{"designer.prompts_per_cycle": 3, "designer.designs_per_prompt": 4,
                            "agent.plays_per_arm": 3})
    result, state = _cycle(config, sandbox)
    assert len(result.designs) == 12
    assert [d.prompt_index for d in result.designs] == [i // 4 for i in range(12)]
    valid = [d for d in result.designs if d.valid]
    assert valid, "the scripted designer emits valid bundled examples"
    for d in result.designs:
        assert d.prompt_ids and d.generation.token_ids  # token ids kept for training
        if not d.valid:
            assert d.score.reward == config.reward.invalid_penalty
            assert d.outcome != VALID
    for group in range(3):  # GRPO: each prompt's advantages are centred
        adv = [d.advantage for d in result.designs if d.prompt_index == group]
        assert abs(sum(adv)) < 1e-6
    for d in valid:
        plays = [p for p in result.plays if p.trajectory.env_id == d.env_id]
        hinted = sorted((p.play_index, p.trajectory.seed) for p in plays if p.arm == Arm.HINTED)
        unhinted = sorted((p.play_index, p.trajectory.seed) for p in plays
                          if p.arm == Arm.UNHINTED)
        assert hinted == unhinted and len(hinted) == 3  # same seeds, equal counts
        assert all(p.advantage is None for p in plays if p.arm == Arm.HINTED)
        assert all(p.advantage is not None for p in plays if p.arm == Arm.UNHINTED)
        returns_h = [p.trajectory.total_return for p in plays if p.arm == Arm.HINTED]
        returns_u = [p.trajectory.total_return for p in plays if p.arm == Arm.UNHINTED]
        assert d.score.regret == pytest.approx(
            max(0.0, statistics.fmean(returns_h) - statistics.fmean(returns_u)))
    assert [e.env_id for e in state.memory.entries] == [d.env_id for d in valid]
    assert all(e.embedding is not None and e.summary for e in state.memory.entries)
    m = result.metrics
    assert m["counts"]["valid"] == len(valid)
    assert m["validity_rate"] == pytest.approx(len(valid) / 12, abs=1e-6)
    assert sum(m["failures_by_stage"].values()) == 12 - len(valid)
    assert m["counts"]["episodes"] == len(result.plays) == 6 * len(valid)
    assert m["zero_variance"]["designer"]["n_groups"] == 3
    assert m["diversity"]["embedding_backend"] == "lexical"
    assert all(k.endswith("_s") for k in m["timing_s"])
    assert len(result.env_records) == 12 and len(result.play_records) == len(result.plays)


@pytest.mark.needs("corpora")
def test_hint_helps_the_scripted_agent(sandbox: Sandbox) -> None:
    config = tiny_config(**{"designer.prompts_per_cycle": 2, "designer.designs_per_prompt": 4,
                            "agent.plays_per_arm": 6})
    result, _ = _cycle(config, sandbox)
    m = result.metrics
    assert m["solve_rate_hinted"] > m["solve_rate_unhinted"]
    assert m["regret"]["mean"] > 0


@pytest.mark.needs("corpora")
def test_same_inputs_same_metrics(sandbox: Sandbox) -> None:
    config = tiny_config()
    a, _ = _cycle(config, sandbox, cycle=3)
    b, _ = _cycle(config, sandbox, cycle=3)
    assert without_timing(a.metrics) == without_timing(b.metrics)
    assert [d.env_id for d in a.designs] == [d.env_id for d in b.designs]
    c, _ = _cycle(config, sandbox, cycle=4)
    assert [p.trajectory.seed for p in c.plays] != [p.trajectory.seed for p in a.plays]


def test_ablations_no_corpus_no_memory(sandbox: Sandbox) -> None:
    config = tiny_config(**{"designer.use_corpus": False, "designer.use_memory": False})
    state = _state(config)
    assert state.sampler is None
    first, state = _cycle(config, sandbox, 0, state)
    assert all(d.doc_id is None for d in first.designs)
    assert "<document>" not in first.designs[0].messages[-1]["content"]
    second, _ = _cycle(config, sandbox, 1, state)
    assert len(state.memory) > 0  # memory still records; it is just not shown
    for d in second.designs:
        assert "Earlier environments" not in d.messages[-1]["content"]


@pytest.mark.needs("corpora")
def test_memory_is_shown_in_later_prompts(sandbox: Sandbox) -> None:
    config = tiny_config(**{"agent.plays_per_arm": 4})
    first, state = _cycle(config, sandbox, 0)
    assert len(state.memory) == first.metrics["counts"]["valid"] > 0
    second, _ = _cycle(config, sandbox, 1, state)
    assert any("Earlier environments" in d.messages[-1]["content"] for d in second.designs)


@pytest.mark.needs("corpora")
def test_corpus_documents_ground_the_prompts(sandbox: Sandbox) -> None:
    config = tiny_config()
    state = _state(config)
    assert state.sampler is not None
    result, state = _cycle(config, sandbox, 0, state)
    ids = [d.doc_id for d in result.designs]
    assert None not in ids and len(set(ids)) == 2  # one document per prompt
    assert all("<document>" in d.messages[-1]["content"] for d in result.designs)
    assert state.sampler is not None and state.sampler.state.position == 2


@pytest.mark.needs("corpora")
def test_hint_source_self_and_reward_variant(sandbox: Sandbox) -> None:
    config = tiny_config(**{"designer.hint_source": "self", "reward.variant": "blend"})
    result, _ = _cycle(config, sandbox)
    valid = [d for d in result.designs if d.valid]
    assert valid and all(d.parse.hint for d in valid)
    # a missing <hint> tag is no parse failure when a hint writer supplies the hint
    assert all(d.parse.failure is None for d in result.designs if d.outcome != PARSE)
    assert result.metrics["designer_reward"]["variant"] == "blend"
    assert all(d.score.variant == "blend" for d in result.designs)


@pytest.mark.needs("corpora")
def test_tool_use_setting(sandbox: Sandbox) -> None:
    config = tiny_config(**{"designer.setting": "tool_use", "designer.designs_per_prompt": 2,
                            "agent.plays_per_arm": 3})
    result, _ = _cycle(config, sandbox)
    valid = [d for d in result.designs if d.valid]
    assert valid and all(d.verdict is not None and d.verdict.kind == "tool" for d in valid)
    assert any(p.trajectory.turns and p.trajectory.turns[0].tool_calls for p in result.plays)
    assert result.metrics["solve_rate_hinted"] >= result.metrics["solve_rate_unhinted"]
