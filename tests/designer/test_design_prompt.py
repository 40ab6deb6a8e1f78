"""Designer prompt rendering: what the model reads must carry every input, and only once."""

from __future__ import annotations

import random

import pytest

from spade.designer import (
    DesignerPrompt,
    FewShot,
    PromptEnv,
    Setting,
    build_designer_messages,
    bundled_examples,
    difficulty_levels,
    parse_design,
    skills,
    summarize_source,
)
from spade.envs.examples import GAME_SKILLS, TOOL_SKILLS, list_examples
from spade.errors import UserError

POSITIVE = PromptEnv(
    name="TiltMazeEnv",
    source=(
        "from spade.envs import TextEnv\n\n"
        "class TiltMazeEnv(TextEnv):\n    GRID = 7  # marker-positive\n"
    ),
    hint="Tilt towards the wall that stops the ball next to the exit.",
    skill="spatial",
    solve_rate_hinted=0.75,
    solve_rate_unhinted=0.125,
    regret=0.625,
)
NEGATIVE = PromptEnv(
    name="AddTwoEnv",
    source='class AddTwoEnv(TextEnv):\n    """Add two small integers."""\n',
    hint="Add them.",
    skill="math",
    solve_rate_hinted=1.0,
    solve_rate_unhinted=0.9375,
    regret=0.0625,
    summary="Asks for the sum of two one-digit numbers in a single turn.",
)


def _user(messages: list[dict[str, str]]) -> str:
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def test_games_prompt_carries_every_input() -> None:
    doc = "The Henderson-Hasselbalch equation relates pH to pKa and the buffer ratio."
    examples = bundled_examples("games", skill="logic")
    messages = build_designer_messages(
        "games", "logic", doc, [POSITIVE], [NEGATIVE], examples, "hard"
    )
    system, user = messages[0]["content"], _user(messages)
    # the contract: TextEnv, boxed actions via step(action), one python block + hint tag
    assert "TextEnv" in system and "\\boxed" in system and "self.rng" in system
    assert "```python" in system and "<hint>" in system
    assert "ToolEnv" not in system
    # skill with its one-line description, the document, the difficulty
    assert "**logic**" in user and skills("games")["logic"] in user
    assert doc in user
    assert difficulty_levels()["hard"] in user
    # the positive with its code, hint and numbers
    assert "marker-positive" in user and POSITIVE.hint in user
    assert "75% with the hint" in user and "12% without" in user and "regret 0.62" in user
    # the negative with its real summary, classified, without its code
    assert NEGATIVE.summary in user and "too easy" in user
    assert '"""Add two small integers."""' not in user
    # the few-shot example: complete source and its hint
    assert examples and examples[0].source.strip() in user and examples[0].hint in user
    assert user.rstrip().endswith("then <hint>...</hint>.")


def test_tool_prompt_uses_tool_contract_and_tool_example() -> None:
    messages = build_designer_messages(
        Setting.TOOL_USE, "tool_selection", "GET /v1/orders/{id} returns an order.",
        examples=bundled_examples("tool_use", skill="tool_selection"),
    )
    system, user = messages[0]["content"], _user(messages)
    assert "ToolEnv" in system and "@tool" in system and "check(self)" in system
    assert "<answer>" in system and "<tool_call>" in system
    assert "class " in user and "(ToolEnv)" in user and "@tool" in user
    assert "GET /v1/orders/{id}" in user


def test_negative_without_summary_is_summarised_from_code() -> None:
    bare = PromptEnv("AddTwoEnv", NEGATIVE.source, "", "math", 0.0, 0.0, 0.0)
    user = _user(build_designer_messages("games", "math", None, memory_negatives=[bare]))
    assert "AddTwoEnv: Add two small integers." in user and "too hard" in user


def test_document_is_truncated_and_never_expanded() -> None:
    doc = "${skill} costs $5 and {braces} stay. " + "word " * 2000
    user = _user(build_designer_messages("games", "math", doc, max_document_chars=300))
    assert "${skill} costs $5 and {braces} stay." in user
    assert "[...]" in user
    body = user.split("<document>")[1].split("</document>")[0]
    assert len(body.strip()) <= 300 + len(" [...]")


def test_no_document_and_free_difficulty() -> None:
    user = _user(build_designer_messages("games", "causal", "", difficulty="Use exactly 3 turns."))
    assert "no source document" in user and "<document>" not in user
    assert "Use exactly 3 turns." in user


def test_long_positive_code_is_truncated() -> None:
    big = PromptEnv("BigEnv", "x = 1\n" * 5000, "h", "math", 0.5, 0.0, 0.5)
    user = _user(build_designer_messages("games", "math", None, [big], max_code_chars=500))
    assert "# ... (truncated)" in user and user.count("x = 1") < 100


def test_skills_match_design_and_examples() -> None:
    assert tuple(skills("games")) == GAME_SKILLS
    assert tuple(skills("tool_use")) == TOOL_SKILLS
    for setting in ("games", "tool_use"):
        assert all(len(desc) > 20 and "\n" not in desc for desc in skills(setting).values())


@pytest.mark.parametrize(
    ("setting", "skill"), [("games", "api_orchestration"), ("tool_use", "math"), ("chess", "math")]
)
def test_bad_setting_or_skill_is_a_user_error(setting: str, skill: str) -> None:
    with pytest.raises(UserError):
        build_designer_messages(setting, skill, None)


def test_bundled_examples_kind_skill_and_reproducible() -> None:
    games = {e.name for e in list_examples() if e.kind == "game"}
    picked = bundled_examples("games", k=2, rng=random.Random(3), skill="math")
    assert len(picked) == 2 and {p.name for p in picked} <= games
    assert picked[0].name == "divisor_sum"  # the math example comes first
    again = bundled_examples("games", k=2, rng=random.Random(3), skill="math")
    assert picked == again
    assert {p.name for p in bundled_examples("tool_use", k=10)} == {
        e.name for e in list_examples() if e.kind == "tool"
    }


@pytest.mark.parametrize("example", list_examples(), ids=lambda e: e.name)
def test_few_shot_rendering_round_trips_through_the_parser(example) -> None:
    """The format the prompt shows is exactly the format the parser accepts."""
    shot = FewShot(example.name, example.source(), example.hint)
    user = DesignerPrompt(Setting.GAMES, "math", examples=(shot,)).messages()[1]["content"]
    block = user.split("A complete, valid example of the expected output format:")[1]
    parsed = parse_design(block.split("Aim at the frontier")[0])
    assert parsed.ok, parsed.reason
    assert parsed.source.strip() == example.source().strip()
    assert parsed.hint == example.hint


def test_summarize_source_names_tools() -> None:
    text = summarize_source(
        "from spade.envs import ToolEnv, tool\n"
        "class DeskEnv(ToolEnv):\n    '''Refund desk.'''\n"
        "    @tool\n    def lookup(self, x: str) -> str:\n        return x\n"
    )
    assert text == "DeskEnv: Refund desk. Tools: lookup."
    assert summarize_source("def (") == "(code does not parse)"


def test_memory_records_and_corpus_documents_are_accepted() -> None:
    from spade.corpus import Document
    from spade.memory import Memory, MemoryConfig, MemoryEntry, summarize_env

    def entry(env_id: str, p_h: float, p_u: float, source: str) -> MemoryEntry:
        return MemoryEntry(
            env_id=env_id, source=source, hint=f"hint of {env_id}", skill="logic", doc_id=None,
            solve_rate_hinted=p_h, solve_rate_unhinted=p_u, regret=max(0.0, p_h - p_u),
            cycle=0, summary=summarize_env(source),
        )

    memory = Memory(MemoryConfig(capacity=10))
    memory.add(entry("e1", 0.8, 0.3, POSITIVE.source))
    memory.add(entry("e2", 1.0, 1.0, NEGATIVE.source))
    sample = memory.sample(k=1, rng=random.Random(0))
    assert len(sample.positives) == 1 and len(sample.negatives) == 1
    text = "Titration curves have an equivalence point."
    doc = Document(id="d1", text=text, line=0, corpus="games")
    user = _user(
        build_designer_messages("games", "logic", doc, sample.positives, sample.negatives)
    )
    assert doc.text in user
    assert "### TiltMazeEnv" in user and "marker-positive" in user and "hint of e1" in user
    assert "AddTwoEnv (skill: logic) was too easy" in user
    assert summarize_env(NEGATIVE.source) in user
