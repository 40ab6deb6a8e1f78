"""The leak rules on their own: extraction rules for observations, fractions for hints."""

from __future__ import annotations

from spade.validate._leaks import (
    Answer,
    answers_of,
    command_suffix,
    final_is_move,
    hint_leaks,
    observation_leak,
    tokens,
)


def single(seed: int, text: str) -> Answer:
    return answers_of(seed, [text], "game")[0]


def test_tokens_ignore_case_spacing_and_punctuation() -> None:
    assert tokens("  The  ANSWER: -4.5, ok!") == ("the", "answer", "-4.5", "ok")


def test_answer_at_a_fixed_spot_leaks() -> None:
    cases = [
        (single(s, str(40 + s)), f"Hello player {s * 7}! The secret is {40 + s}. Go.")
        for s in range(8)
    ]
    leak = observation_leak(cases, 0.75)
    assert leak is not None and len(leak.seeds) == 8
    assert leak.rule == "the words after the first 'is'"


def test_multiple_choice_options_do_not_leak() -> None:
    letters = "ABCD"
    cases = []
    for s in range(8):
        values = [s + 1, s + 5, s + 9, s + 13]
        options = " ".join(f"{letters[i]}) {v}" for i, v in enumerate(values))
        cases.append((single(s, letters[(s * 3) % 4]), f"Which is the prime? {options}"))
    assert observation_leak(cases, 0.75) is None


def test_answer_among_numbers_in_varying_position_does_not_leak() -> None:
    cases = []
    for s in range(8):
        nums = [3 + s, 90 + s, 17 + s]
        nums = nums[s % 3 :] + nums[: s % 3]
        cases.append((single(s, str(90 + s)), f"Which is largest: {', '.join(map(str, nums))}?"))
    assert observation_leak(cases, 0.75) is None


def test_leak_needs_three_instances() -> None:
    cases = [(single(s, "x1"), "the code is x1") for s in range(2)]
    assert observation_leak(cases, 0.75) is None


def test_solution_sequence_and_final_action() -> None:
    found = answers_of(3, ["up", "left", "left"], "game")
    assert [a.sequence for a in found] == [True, False]
    assert found[0].tokens == ("up", "left", "left")
    assert final_is_move([["up", "left", "left"], ["left", "up"]])
    assert not final_is_move([["50", "25", "37"], ["50", "75", "62"]])
    tool = answers_of(1, [{"name": "f", "arguments": {}}, "Refunded."], "tool")
    assert tool[0].text == "Refunded." and not tool[0].sequence


def test_hint_with_constant_answer_leaks_but_coincidence_does_not() -> None:
    constant = [single(s, "42") for s in range(8)]
    assert hint_leaks("The Answer is   42.", constant, min_fraction=0.5) is not None
    varying = [single(s, str(s)) for s in range(8)]
    assert hint_leaks("Step 1: think. Step 2: answer.", varying, min_fraction=0.5) is None
    sequence = answers_of(0, ["north", "east", "east"], "game")
    assert hint_leaks("Go NORTH, east, east!", sequence, min_fraction=0.5) is not None
    assert hint_leaks("Go north first, then east.", sequence[:1], min_fraction=0.5) is None


def test_a_fixed_final_command_is_not_the_answer() -> None:
    solutions = [["swap 0 2", "submit"], ["swap 1 3", "swap 0 1", "Submit "], ["guess 7", "submit"]]
    assert command_suffix(solutions) == 1
    found = answers_of(0, solutions[0], "game", commands=1)
    assert [(a.text, a.sequence) for a in found] == [("swap 0 2 submit", True), ("swap 0 2", False)]
    assert command_suffix([["go", "look", "done", "quit"], ["run", "done", "quit"]]) == 2
    # one action always stays; a single solution or single actions prove nothing
    assert command_suffix([["submit", "submit"], ["submit", "submit"]]) == 1
    assert command_suffix([["guess 4", "submit"]]) == 0
    assert command_suffix([["7"], ["7"], ["9"]]) == 0
    assert command_suffix([["12", "13"], ["15", "16"]]) == 0


def test_numbers_lose_their_thousands_separators() -> None:
    from spade.validate._leaks import plain_numbers, tokens

    assert plain_numbers("Balance 12,345 and 1'000'000 or 7\u202f500.") == (
        "Balance 12345 and 1000000 or 7500.")
    assert plain_numbers("x 12,345.6 y") == "x 12345.6 y"
    for text in ("pick 1,2,3", "3,14", "1,000,00", "12,3456"):
        assert plain_numbers(text) == text  # lists and decimals are not grouped numbers
    assert tokens("The total is 12,345.") == ("the", "total", "is", "12345")


def test_the_hint_audit_spells_out_what_a_hint_can_hide() -> None:
    from spade.validate._hint_strings import candidates

    found = dict(candidates("Think hard. Between friends: hsifdrows, b3BlbnNlc2FtZQ== "
                            "and 4000 plus 321; 'swordfish' works too."))
    assert found["swordfish"] == "plain" and found["hsifdrows"] == "plain"
    assert found["opensesame"] == "base64"
    assert found["4321"] == "arithmetic" and found["3999"] == "arithmetic"
    assert len(found) <= 72
    assert "think" not in {t.lower() for t in found}  # stop words and the like are no codes


def test_the_hint_audit_reads_acrostics_joins_rot13_and_spelled_digits() -> None:
    from spade.validate._hint_strings import candidates

    found = dict(candidates("Start With Ordinary Reduction; Divide First, Inspect Shortcuts "
                            "Here."))
    assert found["swordfish"] == "acrostic"
    assert dict(candidates("First 'sword', then 'fish'."))["swordfish"] == "joined"
    assert dict(candidates("Key (rot13): fjbeqsvfu"))["swordfish"] == "rot13"
    assert dict(candidates("The code is four three two one."))["4321"] == "spelled digits"


def test_token_search_finds_every_start_as_the_plain_definition_does() -> None:
    """``_find`` searches tokens as text (a long repeated answer in an observation at the
    size cap once cost the parent seconds); it must find what slicing finds."""
    import random

    from spade.validate._leaks import _find

    rng = random.Random(7)
    for _ in range(3000):
        hay = tuple(rng.choice(["a", "b", "ab", "7"]) for _ in range(rng.randint(0, 14)))
        needle = tuple(rng.choice(["a", "b", "ab", "7"]) for _ in range(rng.randint(0, 4)))
        plain = [i for i in range(len(hay) - len(needle) + 1)
                 if hay[i:i + len(needle)] == needle] if needle else []  # fmt: skip
        assert _find(hay, needle) == plain, (hay, needle)
