"""parse_design on the replies small and thinking models actually produce."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spade.designer import MAX_HINT_CHARS, DesignParse, ParseFailure, parse_design

ENV = "from spade.envs import TextEnv\n\n\nclass CoinEnv(TextEnv):\n    max_turns = 3\n"
DRAFT = "class DraftEnv(TextEnv):\n    pass\n"


def _ok(parsed: DesignParse, source: str = ENV, hint: str = "Count the heads.") -> None:
    assert parsed.ok, parsed.reason
    assert parsed.source == source
    assert parsed.hint == hint
    assert parsed.class_name == source.split("class ")[-1].split("(")[0]


def test_clean_reply() -> None:
    _ok(parse_design(f"Here it is:\n```python\n{ENV}```\n<hint>Count the heads.</hint>\n"))


def test_think_block_with_draft_is_ignored() -> None:
    reply = (
        f"<think>Maybe:\n```python\n{DRAFT}```\n<hint>draft hint</hint></think>\n"
        f"```python\n{ENV}```\n<hint>Count the heads.</hint>"
    )
    _ok(parse_design(reply))


def test_orphan_think_close_drops_everything_before() -> None:
    reply = f"thinking about {DRAFT}...</think>```python\n{ENV}```<hint>Count the heads.</hint>"
    _ok(parse_design(reply))


def test_reply_cut_off_inside_think_has_no_code() -> None:
    parsed = parse_design(f"<think>let me write\n```python\n{ENV}```")
    assert parsed.failure is ParseFailure.EMPTY_REPLY


def test_missing_closing_fence_stops_at_hint() -> None:
    _ok(parse_design(f"```python\n{ENV}\n<hint>Count the heads.</hint>"))


def test_missing_closing_fence_and_no_hint() -> None:
    parsed = parse_design(f"```python\n{ENV}")
    assert parsed.failure is ParseFailure.NO_HINT and parsed.reason == "no <hint> tag"
    assert parsed.source == ENV and parsed.class_name == "CoinEnv"


def test_several_blocks_choose_the_last_env_block() -> None:
    helper = "def helper():\n    return 1\n"
    usage = "env = CoinEnv()\nenv.reset(seed=0)\n"
    reply = (
        f"```python\n{helper}```\nFirst a draft:\n```python\n{DRAFT}```\nFinal:\n"
        f"```python\n{ENV}```\nUsage:\n```python\n{usage}```\n<hint>Count the heads.</hint>"
    )
    _ok(parse_design(reply))


def test_py_and_bare_fences() -> None:
    _ok(parse_design(f"```py\n{ENV}```\n<hint>Count the heads.</hint>"))
    _ok(parse_design(f"```\n{ENV}```\n<hint>Count the heads.</hint>"))
    _ok(parse_design(f"```Python3 title=env.py\n{ENV}```\n<hint>Count the heads.</hint>"))


def test_unfenced_code_is_accepted() -> None:
    _ok(parse_design(f"Sure.\n{ENV}\n<hint>Count the heads.</hint>"))


def test_no_code_at_all() -> None:
    parsed = parse_design("I cannot do that. <hint>nothing</hint>")
    assert parsed.failure is ParseFailure.NO_CODE_BLOCK and parsed.source is None


def test_blocks_without_env_class() -> None:
    parsed = parse_design("```python\nclass Coin:\n    pass\n```\n<hint>h</hint>")
    assert parsed.failure is ParseFailure.NO_ENV_CLASS
    assert parsed.reason == "no class ending in Env: 1 code block(s), none defines one"


def test_missing_hint_is_fine_when_the_hint_comes_from_elsewhere() -> None:
    reply = f"```python\n{ENV}```"
    assert parse_design(reply).failure is ParseFailure.NO_HINT
    parsed = parse_design(reply, require_hint=False)
    assert parsed.ok and parsed.hint is None and parsed.source == ENV


def test_empty_and_long_hints() -> None:
    empty = parse_design(f"```python\n{ENV}```\n<hint>  \n </hint>")
    assert empty.failure is ParseFailure.EMPTY_HINT
    long = "word " * 200
    parsed = parse_design(f"```python\n{ENV}```\n<hint>{long}</hint>")
    assert parsed.failure is ParseFailure.HINT_TOO_LONG
    assert parsed.reason == f"hint too long: {len(long.strip())} chars > {MAX_HINT_CHARS}"


def test_hint_whitespace_unclosed_tag_and_position() -> None:
    _ok(parse_design(f"<HINT>\n  Count\n the   heads.\n</Hint>\n```python\n{ENV}```"))
    _ok(parse_design(f"```python\n{ENV}```\n<hint>Count the heads."))


def test_hint_tag_inside_code_does_not_count() -> None:
    source = ENV + '    NOTE = "<hint>fake</hint>"\n'
    parsed = parse_design(f"```python\n{source}```\n")
    assert parsed.failure is ParseFailure.NO_HINT and parsed.source == source
    other = f"```text\n<hint>in another block</hint>\n```\n```python\n{ENV}```"
    assert parse_design(other).failure is ParseFailure.NO_HINT


def test_empty_reply() -> None:
    assert parse_design("").failure is ParseFailure.EMPTY_REPLY
    assert parse_design("<think>only thoughts</think>  ").failure is ParseFailure.EMPTY_REPLY


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("`<>/hintkpyo\n class XEnv():think")), max_size=200))
def test_never_raises_and_failure_is_consistent(text: str) -> None:
    parsed = parse_design(text)
    assert (parsed.failure is None) == parsed.ok
    if parsed.ok:
        assert parsed.source and parsed.class_name and parsed.hint


def test_closing_fence_glued_to_text() -> None:
    _ok(parse_design(f"```python\n{ENV}```<hint>Count the heads.</hint>"))
    _ok(parse_design(f"```python\n{ENV.rstrip()}```\n<hint>Count the heads.</hint>"))
