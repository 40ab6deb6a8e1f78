"""`spade regress` on suites with repeated trials: pass^k per item, paired across runs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from _runfactory import write_run
from spade.eval._runs import load_run
from spade.eval.regress import GateConfig, compare_runs
from spade.eval.regress._passk import item_trials, pass_hat_k, suite_pass_k

from spade.cli import main


@pytest.mark.parametrize(("n", "c", "k"), [(4, 0, 1), (4, 2, 2), (4, 3, 2), (4, 4, 4), (5, 3, 3)])
def test_pass_hat_k_is_the_chance_that_k_distinct_trials_all_succeed(n: int, c: int, k: int):
    trials = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    brute = sum(all(trials[i] for i in s) for s in subsets) / len(subsets)
    assert pass_hat_k(c, n, k) == pytest.approx(brute)
    with pytest.raises(ValueError):
        pass_hat_k(c, n, n + 1)


def _tau2_run(root: Path, name: str, trials: dict[str, list[float]], **kw) -> Path:
    out = write_run(root, name, {"tau2": trials, "aime24": {"a0": [1.0] * 4, "a1": [0.0] * 4}},
                    **kw)
    doc = json.loads((out / "results.json").read_text())
    ks = range(1, 5)
    doc["suites"]["tau2"]["pass_k"] = {f"pass^{k}": suite_pass_k(trials, k) for k in ks}
    (out / "results.json").write_text(json.dumps(doc))
    return out


def test_consistency_drop_fails_on_pass4_though_pass1_is_unchanged(tmp_path: Path, capsys):
    # reference: half the tasks always solved; candidate: every task solved 2 times in 4
    ref = {f"t{i}": [1.0] * 4 if i % 2 else [0.0] * 4 for i in range(40)}
    cand = {f"t{i}": [1.0, 0.0, 1.0, 0.0] for i in range(40)}
    r, c = _tau2_run(tmp_path, "ref", ref), _tau2_run(tmp_path, "cand", cand)
    assert suite_pass_k(ref, 1) == suite_pass_k(cand, 1) == 0.5
    assert suite_pass_k(ref, 4) == 0.5 and suite_pass_k(cand, 4) == 0.0
    result = compare_runs(load_run(r), load_run(c), GateConfig())
    by = {x.suite: x for x in result.comparisons}
    assert list(by) == ["tau2", "tau2 pass^4", "aime24"]  # aime24 reports no pass^k
    assert by["tau2"].verdict == "no significant change" and by["tau2"].delta == 0.0
    assert by["tau2 pass^4"].verdict == "worse" and by["tau2 pass^4"].delta == pytest.approx(-0.5)
    assert by["tau2 pass^4"].n_paired == 40 and by["tau2 pass^4"].samples == (4, 4)
    assert not result.passed
    assert compare_runs(load_run(r), load_run(c), GateConfig(pass_k=False)).passed
    assert main(["regress", "--reference", str(r), "--candidate", str(c), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [s["suite"] for s in doc["suites"] if s["verdict"] == "worse"] == ["tau2 pass^4"]


def test_pass_k_pairs_items_and_uses_the_trials_both_runs_have(tmp_path: Path):
    ref = {f"t{i}": [1.0, 1.0, 1.0, 1.0] for i in range(12)}
    cand = {f"t{i}": [1.0, 1.0] for i in range(2, 12)} | {"extra": [0.0, 0.0]}
    r, c = _tau2_run(tmp_path, "ref", ref), _tau2_run(tmp_path, "cand", cand)
    # fewer items and trials than the reference: refused unless allowed (then recorded)
    allow = GateConfig(allow=("fewer-items", "samples"))
    by = {x.suite: x for x in compare_runs(load_run(r), load_run(c), allow).comparisons}
    assert "tau2 pass^2" in by and by["tau2 pass^2"].n_paired == 10
    assert by["tau2 pass^2"].n_reference_only == 2 and by["tau2 pass^2"].n_candidate_only == 1
    assert by["tau2 pass^2"].delta == 0.0  # both solve every paired task in every trial
    assert item_trials(load_run(c), "tau2")["t2"] == [1.0, 1.0]


def test_fractional_trial_scores_get_no_pass_k(tmp_path: Path):
    ref = {f"t{i}": [0.5, 1.0, 1.0, 1.0] for i in range(8)}
    r, c = _tau2_run(tmp_path, "ref", ref), _tau2_run(tmp_path, "cand", ref)
    names = [x.suite for x in compare_runs(load_run(r), load_run(c)).comparisons]
    assert names == ["tau2", "aime24"]
