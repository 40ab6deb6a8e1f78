"""`spade regress`: exit codes on controlled score patterns, and the statistics behind them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from _runfactory import write_run
from hypothesis import given, settings
from hypothesis import strategies as st
from spade.eval._runs import load_run
from spade.eval.regress import (
    GateConfig,
    bootstrap_ci,
    compare_runs,
    holm,
    sampling_noise_se,
    sign_flip_pvalue,
)

from spade.cli import main
from spade.errors import UserError


def _bernoulli_items(
    rng: random.Random, n: int, k: int, p_of: dict[int, float] | float
) -> dict[str, list[float]]:
    items = {}
    for i in range(n):
        p = p_of if isinstance(p_of, float) else p_of[i]
        items[f"q{i}"] = [1.0 if rng.random() < p else 0.0 for _ in range(k)]
    return items


@pytest.fixture
def base_items() -> dict[str, dict[str, list[float]]]:
    rng = random.Random(1)
    difficulty = {i: rng.random() for i in range(40)}
    return {
        "aime24": _bernoulli_items(rng, 40, 8, difficulty),
        "gpqa_diamond": _bernoulli_items(rng, 40, 4, 0.6),
    }


def _gate(ref: Path, cand: Path, *extra: str) -> int:
    return main(["regress", "--reference", str(ref), "--candidate", str(cand), *extra])


def test_identical_runs_pass(tmp_path, base_items, capsys):
    ref = write_run(tmp_path, "ref", base_items)
    cand = write_run(tmp_path, "cand", base_items)
    assert _gate(ref, cand) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and out.count("no significant change") == 2


def test_clearly_worse_candidate_fails(tmp_path, base_items, capsys):
    ref = write_run(tmp_path, "ref", base_items)
    worse = dict(base_items)
    worse["aime24"] = {i: [0.0] * len(s) for i, s in base_items["aime24"].items()}
    cand = write_run(tmp_path, "cand", worse)
    assert _gate(ref, cand) == 1
    out = capsys.readouterr().out
    assert "WORSE" in out and "FAIL: candidate is worse on aime24" in out
    # Gating only the unchanged suite passes.
    assert _gate(ref, cand, "--suites", "gpqa_diamond") == 0


def test_a_reference_at_the_floor_is_named_as_having_no_headroom(tmp_path, capsys):
    zero = {"gpqa_diamond": {f"q{i}": [0.0] for i in range(30)}}
    ref, cand = write_run(tmp_path, "ref", zero), write_run(tmp_path, "cand", zero)
    assert _gate(ref, cand) == 0
    out = capsys.readouterr().out
    assert "gpqa_diamond: no headroom: the reference scores 0.0%" in out
    some = {"gpqa_diamond": {f"q{i}": [float(i % 3 == 0)] for i in range(30)}}
    assert _gate(write_run(tmp_path, "ref2", some), write_run(tmp_path, "cand2", some)) == 0
    assert "no headroom" not in capsys.readouterr().out


def test_tiny_noisy_difference_passes(tmp_path, base_items):
    ref = write_run(tmp_path, "ref", base_items)
    rng = random.Random(7)
    noisy = {
        suite: {
            i: [s if rng.random() > 0.05 else 1.0 - s for s in samples]
            for i, samples in items.items()
        }
        for suite, items in base_items.items()
    }
    cand = write_run(tmp_path, "cand", noisy)
    result = compare_runs(load_run(ref), load_run(cand))
    assert all(abs(c.delta or 0) < 0.08 for c in result.comparisons)
    assert result.passed
    assert _gate(ref, cand) == 0


def test_better_candidate_passes_one_sided(tmp_path, base_items, capsys):
    ref = write_run(tmp_path, "ref", base_items)
    better = dict(base_items)
    better["gpqa_diamond"] = {i: [1.0] * len(s) for i, s in base_items["gpqa_diamond"].items()}
    assert _gate(ref, write_run(tmp_path, "cand", better)) == 0
    out = capsys.readouterr().out
    assert "WORSE" not in out and "no significant change" in out  # only "worse?" is tested


def test_missing_suite_fails_unless_allowed(tmp_path, base_items, capsys):
    ref = write_run(tmp_path, "ref", base_items)
    cand = write_run(
        tmp_path,
        "cand",
        {"aime24": base_items["aime24"]},
        extra_suites={"gpqa_diamond": {"status": "missing", "missing_file": "gpqa.jsonl"}},
    )
    assert _gate(ref, cand) == 1
    assert "gpqa_diamond (missing)" in capsys.readouterr().out
    assert _gate(ref, cand, "--allow-missing") == 0


def test_min_effect_threshold(tmp_path):
    # 20 items, candidate loses exactly one of four samples on every item: -25 points,
    # zero within-item noise in the reference, significant at any sensible alpha.
    ref_items = {"aime24": {f"q{i}": [1.0] * 4 for i in range(20)}}
    cand_items = {"aime24": {f"q{i}": [1.0, 1.0, 1.0, 0.0] for i in range(20)}}
    ref = load_run(write_run(tmp_path, "ref", ref_items))
    cand = load_run(write_run(tmp_path, "cand", cand_items))
    assert not compare_runs(ref, cand, GateConfig(min_effect=0.10)).passed
    assert compare_runs(ref, cand, GateConfig(min_effect=0.30)).passed


def test_json_output(tmp_path, base_items, capsys):
    ref = write_run(tmp_path, "ref", base_items)
    assert _gate(ref, ref, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is True
    for suite in doc["suites"]:
        assert 0.0 <= suite["p_value"] <= 1.0 and suite["delta"] == 0.0
        assert suite["n_paired"] == 40


def test_pairing_uses_only_common_items(tmp_path, base_items):
    ref = write_run(tmp_path, "ref", base_items)
    fewer = {s: dict(list(items.items())[:25]) for s, items in base_items.items()}
    cand = load_run(write_run(tmp_path, "cand", fewer))
    with pytest.raises(UserError, match="covers 25 items, the reference 40"):
        compare_runs(load_run(ref), cand)
    result = compare_runs(load_run(ref), cand, GateConfig(allow=("fewer-items",)))
    comp = result.comparisons[0]
    assert any("allowed difference (fewer-items)" in n for n in comp.notes)
    assert comp.n_paired == 25 and comp.n_reference_only == 15
    assert comp.delta == pytest.approx(0.0)
    assert any("paired on 25 items" in n for n in comp.notes)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing_dir", "no such run directory"),
        ("no_overlap", "no items in common"),
        ("schema", "schema_version"),
        ("unknown_suite", "not in the reference run"),
        ("no_samples", "no samples file"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, base_items, capsys, case, message):
    ref = write_run(tmp_path, "ref", base_items)
    cand_items = base_items
    if case == "no_overlap":
        cand_items = {
            s: {f"other-{i}": v for i, v in items.items()} for s, items in base_items.items()
        }
    cand = write_run(tmp_path, "cand", cand_items)
    extra: list[str] = []
    if case == "missing_dir":
        cand = tmp_path / "nowhere"
    elif case == "schema":
        doc = json.loads((cand / "results.json").read_text())
        doc["schema_version"] = 99
        (cand / "results.json").write_text(json.dumps(doc))
    elif case == "unknown_suite":
        extra = ["--suites", "aime24,livecodebench"]
    elif case == "no_samples":
        (cand / "samples" / "aime24.jsonl").unlink()
    assert _gate(ref, cand, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_swapping_runs_flips_the_delta(tmp_path, base_items):
    rng = random.Random(3)
    other = {
        s: {i: [1.0 if rng.random() < 0.4 else 0.0 for _ in v] for i, v in items.items()}
        for s, items in base_items.items()
    }
    a = load_run(write_run(tmp_path, "a", base_items))
    b = load_run(write_run(tmp_path, "b", other))
    ab, ba = compare_runs(a, b), compare_runs(b, a)
    for x, y in zip(ab.comparisons, ba.comparisons, strict=True):
        assert x.delta == pytest.approx(-(y.delta or 0.0))
        # one-sided: P(S <= s) + P(S >= s) = 1 + P(S = s) (Monte Carlo: about 1)
        assert (x.p_value or 0) + (y.p_value or 0) >= 0.98
        assert "worse" not in {x.verdict, y.verdict} or x.verdict != y.verdict


# ---- statistics -------------------------------------------------------------------------

diffs_strategy = st.lists(
    st.floats(min_value=-1, max_value=1, allow_nan=False).map(lambda x: round(x, 3)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(diffs_strategy)
def test_sign_flip_is_symmetric_and_a_probability(diffs):
    p = sign_flip_pvalue(diffs, n_flips=2000)
    assert 0.0 < p <= 1.0
    assert sign_flip_pvalue([-d for d in diffs], n_flips=2000) == pytest.approx(p)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=10, max_value=60),
    st.floats(min_value=0.3, max_value=1.0),
    st.integers(min_value=0, max_value=2**16),
)
def test_large_constant_shift_is_detected(n, shift, seed):
    rng = np.random.default_rng(seed)
    diffs = -shift + rng.normal(0.0, 0.05, size=n)
    assert sign_flip_pvalue(diffs, n_flips=5000, seed=seed) < 0.01
    lo, hi = bootstrap_ci(diffs, seed=seed)
    assert hi < 0 and lo <= float(np.mean(diffs)) <= hi


def test_exact_p_values():
    assert sign_flip_pvalue([0.0, 0.0]) == 1.0
    assert sign_flip_pvalue([-1.0] * 8) == pytest.approx(2 / 256)
    assert sign_flip_pvalue([-1.0, 1.0]) == 1.0
    # Monte Carlo agrees with the exact enumeration.
    d = np.random.default_rng(0).normal(-0.2, 0.5, size=14)
    exact = sign_flip_pvalue(d)
    approx = sign_flip_pvalue(d, exact_max=0, n_flips=40_000, seed=1)
    assert abs(exact - approx) < 0.01


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=-8, max_value=8), min_size=2, max_size=12),
       st.sampled_from(["less", "two-sided"]))
def test_exact_sign_flip_is_scipys_permutation_test(counts, alternative):
    """Where the gate enumerates every sign pattern (few non-zero differences), its p-value
    is scipy's exact paired randomisation test to the last bit, on differences of 8-sample
    means such as the gate sees."""
    from scipy import stats

    d = np.array(counts) / 8
    theirs = stats.permutation_test(
        (d,), lambda x, axis: np.sum(x, axis=axis), vectorized=True,
        permutation_type="samples", n_resamples=np.inf, alternative=alternative).pvalue
    assert sign_flip_pvalue(d, alternative=alternative) == theirs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=1, max_size=10))
def test_holm_properties(ps):
    adj = holm(ps)
    assert all(a >= p - 1e-12 and a <= 1.0 for a, p in zip(adj, ps, strict=True))
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    assert all(adj[order[i]] <= adj[order[i + 1]] + 1e-12 for i in range(len(ps) - 1))
    assert min(adj) == pytest.approx(min(1.0, len(ps) * min(ps)))


def test_bootstrap_ci_is_seeded_and_mirrors():
    d = np.random.default_rng(5).normal(0.1, 0.3, size=30)
    assert bootstrap_ci(d, seed=4) == bootstrap_ci(d, seed=4)
    lo, hi = bootstrap_ci(d, seed=4)
    nlo, nhi = bootstrap_ci(-d, seed=4)
    assert (nlo, nhi) == pytest.approx((-hi, -lo))


def test_sampling_noise_se():
    assert sampling_noise_se([None], [1], [0.0], [4]) is None
    # 4 items, each with variance 0.25 over 4 samples in both runs: sqrt(4 * 0.125) / 4
    se = sampling_noise_se([0.25] * 4, [4] * 4, [0.25] * 4, [4] * 4)
    assert se == pytest.approx(np.sqrt(4 * 0.125) / 4)


# ---- one-sided gate and refusals ----------------------------------------------------------


def _aime_pair(rng: random.Random) -> tuple[dict, dict]:
    """30 items x 8 samples; the candidate loses 6 items (0.6 -> 0.0) on each suite."""
    ref, cand = {}, {}
    for suite in ("aime24", "aime25"):
        items = {f"{suite}-{i}": [1.0 if rng.random() < 0.5 else 0.0 for _ in range(8)]
                 for i in range(30)}
        lost = list(items)[:6]
        for item in lost:
            items[item] = [1.0] * 5 + [0.0] * 3  # 0.625, about 0.6
        ref[suite] = items
        cand[suite] = {i: ([0.0] * 8 if i in lost else s) for i, s in items.items()}
    return ref, cand


def test_the_issue_example_fails_the_gate(tmp_path, capsys):
    """6 of 30 items 0.6 -> 0.0 on each of AIME 24 and 25 (a ~12-point drop) is a regression."""
    ref_items, cand_items = _aime_pair(random.Random(5))
    ref = write_run(tmp_path, "ref", ref_items)
    cand = write_run(tmp_path, "cand", cand_items)
    assert _gate(ref, cand) == 1
    assert capsys.readouterr().out.count("WORSE") >= 2
    # the same drop seen two-sided with Holm could not reach 0.05 (1/32 per suite, x2)
    assert sign_flip_pvalue([-0.625] * 6, alternative="two-sided") * 2 > 0.05
    assert sign_flip_pvalue([-0.625] * 6, alternative="less") * 2 < 0.05


@pytest.mark.parametrize(
    ("kind", "change", "message"),
    [
        ("unfinished", {"top": {"finished": False}}, "did not finish"),
        ("partial", {"status": "partial"}, "partial"),
        ("fewer-items", {"limit": 4}, "covers 4 items"),
        ("samples", {"samples": 4}, "4 samples per item"),
        ("protocol", {"protocol": {"temperature": 0.6}}, "different protocol"),
        ("data", {"data": "1" * 64}, "different data files"),
        ("template", {"template": ("a", "b")}, "different prompt template"),
    ],
)
def test_unlike_candidates_are_refused_unless_allowed(tmp_path, capsys, kind, change, message):
    rng = random.Random(2)
    items = {f"q{i}": [1.0 if rng.random() < 0.5 else 0.0 for _ in range(8)] for i in range(30)}
    cand_items = dict(items)
    if "limit" in change:  # a partial candidate: 4 of 30 items, all wrong
        cand_items = {i: [0.0] * 8 for i in list(items)[: change["limit"]]}
    if "samples" in change:
        cand_items = {i: s[: change["samples"]] for i, s in items.items()}
    ref = write_run(tmp_path, "ref", {"aime24": items})
    cand = write_run(tmp_path, "cand", {"aime24": cand_items}, top=change.get("top"))
    for path, template in zip((ref, cand), change.get("template", (None, None)), strict=True):
        doc = json.loads((path / "results.json").read_text())
        e = doc["suites"]["aime24"]
        if path == cand:
            e["status"] = change.get("status", e["status"])
            e["protocol"].update(change.get("protocol", {}))
            if "data" in change:
                e["data"][0]["sha256"] = change["data"]
        if template is not None:
            e["template_sha256"] = template
        (path / "results.json").write_text(json.dumps(doc))
    assert _gate(ref, cand) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and f"--allow {kind}" in err[0]
    allowed = ["partial", "fewer-items"] if kind == "partial" else [kind]
    if kind == "fewer-items":
        allowed = ["fewer-items"]
    rc = _gate(ref, cand, "--allow", *allowed, "--json")
    assert rc in (0, 1)
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["allowed_differences"] == allowed
    assert verdict["test"].startswith("one-sided")


def test_the_gate_decides_through_compare_items(tmp_path, base_items):
    """What simulations call (item statistics in, verdict out) is the gate's own decision."""
    from spade.eval._runs import load_item_scores
    from spade.eval.regress._gate import compare_items, decide

    worse = {"aime24": {i: [*s[:-1], 0.0] for i, s in base_items["aime24"].items()}}
    ref = load_run(write_run(tmp_path, "ref", {"aime24": base_items["aime24"]}))
    cand = load_run(write_run(tmp_path, "cand", worse))
    [gated] = compare_runs(ref, cand).comparisons
    items = [load_item_scores(run, "aime24") for run in (ref, cand)]
    assert decide([compare_items("aime24", *items, GateConfig())], 0.05) == [gated]
    assert gated.delta is not None and gated.delta < 0
