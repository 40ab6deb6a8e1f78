"""Few-shot prompting: demonstrations are set aside, answered by the reference, recorded."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import ClassVar

import pytest
from _evalrun import cli, data_dir, results, samples
from spade.eval import _protocol
from spade.eval._runner import prompt_hash
from spade.eval.data import DataDir
from spade.eval.suites import SUITES
from spade.eval.suites._base import Item, Scored, SingleTurnSuite
from spade.eval.suites._extract import choice_letter

from spade.errors import UserError
from spade.policy._types import Message


def _gpqa(fewshot: int, limit: int | None = None) -> SingleTurnSuite:
    protocol = _protocol.build("gpqa_diamond", {"fewshot": fewshot, "limit": limit})
    return SUITES.get("gpqa_diamond")(protocol, 0)


def test_the_protocol_records_fewshot_only_when_it_is_used() -> None:
    assert "fewshot" not in _protocol.build("gpqa_diamond", {}).as_record()
    assert _protocol.build("gpqa_diamond", {"fewshot": 0}).name == "paper"
    shot = _protocol.build("gpqa_diamond", {"fewshot": 2})
    assert shot.name == "custom" and shot.as_record()["fewshot"] == 2
    with pytest.raises(UserError, match="--fewshot must be 0 or more"):
        _protocol.build("gpqa_diamond", {"fewshot": -1})


def test_gpqa_demonstrations_are_the_first_items_answered_correctly() -> None:
    suite = _gpqa(2, limit=3)
    loaded = suite.load(DataDir(data_dir()))
    items = suite.select(suite.take_fewshot(loaded.items))
    with (data_dir() / "gpqa" / "gpqa_diamond.csv").open(encoding="utf-8", newline="") as fh:
        file_ids = [row["Record ID"] for row in csv.DictReader(fh)]
    assert [i.key for i in items] == file_ids[2:5]  # the shots are not scored
    prompt = suite.prompt(items[0], 0)
    assert [m["role"] for m in prompt] == ["user", "assistant"] * 2 + ["user"]
    assert prompt[-1] == suite.messages(items[0], 0)[-1]
    for k, shot in enumerate(loaded.items[:2]):
        assert prompt[2 * k] == suite.messages(shot, 0)[0]
        assert choice_letter(str(prompt[2 * k + 1]["content"])) == suite.correct_letter(shot, 0)
    # the same items asked zero-shot have other prompt hashes: the runs never pair
    zero = _gpqa(0)
    assert prompt_hash(zero.prompt(items[0], 0)) != prompt_hash(prompt)
    assert zero.prompt(items[0], 0) == zero.messages(items[0], 0)


class _Grouped(SingleTurnSuite):
    """Items in two groups with a system prompt, like Reasoning Gym's datasets."""

    id: ClassVar[str] = "grouped"

    def messages(self, item: Item, sample: int) -> list[Message]:
        return [{"role": "system", "content": "be brief"},
                {"role": "user", "content": f"q{item.id}"}]

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        return Scored(completion, float(completion == f"a{item.id}"))

    def oracle(self, item: Item, sample: int) -> str:
        return f"a{item.id}"


def _grouped(fewshot: int) -> _Grouped:
    return _Grouped(_protocol.Protocol("custom", 1, 0.0, 1.0, 0, 8, fewshot=fewshot), 0)


def test_each_group_gets_its_own_demonstrations_after_the_system_prompt() -> None:
    items = [Item(n, {}, group="even" if n % 2 == 0 else "odd") for n in range(8)]
    suite = _grouped(1)
    rest = suite.take_fewshot(items)
    assert [i.id for i in rest] == [2, 3, 4, 5, 6, 7]
    assert suite.prompt(rest[0], 0) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"},
        {"role": "user", "content": "q2"},
    ]
    assert suite.prompt(rest[1], 0)[1:3] == [{"role": "user", "content": "q1"},
                                             {"role": "assistant", "content": "a1"}]
    with pytest.raises(UserError, match="grouped: --fewshot 4 leaves no item of group 'even'"):
        _grouped(4).take_fewshot(items)


def test_a_fewshot_run_scores_the_items_after_the_shots(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "gpqa_diamond", "--limit", "3", "--samples",
               "1", "--fewshot", "2", "--out", str(out), "--data-dir", str(data_dir())) == 0
    entry = results(out)["suites"]["gpqa_diamond"]
    assert entry["score"] == 1.0 and entry["n_items"] == 3
    assert entry["protocol"]["fewshot"] == 2 and entry["protocol"]["name"] == "custom"
    suite = _gpqa(2, limit=3)
    items = suite.select(suite.take_fewshot(suite.load(DataDir(data_dir())).items))
    recs = samples(out, "gpqa_diamond")
    assert [str(r["id"]) for r in recs] == [i.key for i in items]
    assert [r["prompt_hash"] for r in recs] == [prompt_hash(suite.prompt(i, 0)) for i in items]


def test_suites_without_reference_answers_refuse_fewshot(tmp_path: Path, capsys) -> None:
    assert cli("--model", "oracle", "--suites", "livecodebench", "--limit", "1", "--fewshot",
               "1", "--out", str(tmp_path / "lcb"), "--data-dir", str(data_dir())) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fewshot needs reference answers" in err[0]


def test_agentic_suites_refuse_fewshot() -> None:
    protocol = _protocol.build("tau2", {"fewshot": 1})
    suite = SUITES.get("tau2")(protocol, 0)
    with pytest.raises(UserError, match="tau2: --fewshot applies to single-turn suites"):
        suite.take_fewshot([Item("t", {})])
