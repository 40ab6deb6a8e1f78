"""The oracle gets full marks wherever a reference exists (scorer self-check)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evalrun import cli, data_dir, results, samples


@pytest.mark.parametrize(
    ("suite", "n_items"), [("aime24", 30), ("aime25", 30), ("gpqa_diamond", 198)]
)
def test_oracle_full_marks(tmp_path: Path, suite: str, n_items: int) -> None:
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", suite, "--samples", "2", "--out", str(out),
               "--data-dir", str(data_dir())) == 0
    entry = results(out)["suites"][suite]
    assert entry["status"] == "ok"
    assert entry["score"] == 1.0 and entry["n_items"] == n_items and entry["n_samples"] == 2
    assert entry["protocol"]["name"] == "custom" and entry["comparable"] is False
    assert entry["data"][0]["manifest"] == "ok" and len(entry["data"][0]["sha256"]) == 64
    recs = samples(out, suite)
    assert len(recs) == 2 * n_items and all(r["score"] == 1.0 for r in recs)


def test_gpqa_shuffles_per_sample_with_recorded_seed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "gpqa_diamond", "--samples", "4", "--limit", "20",
               "--out", str(out), "--data-dir", str(data_dir())) == 0
    recs = samples(out, "gpqa_diamond")
    targets = {r["details"]["target"] for r in recs}
    assert targets == set("ABCD")  # the correct answer moves around
    per_item = {}
    for r in recs:
        per_item.setdefault(r["id"], set()).add(r["details"]["order"])
    assert any(len(v) > 1 for v in per_item.values())  # differs between samples of one item
    # same seed -> same permutation; another seed -> different ones
    out2, out3 = tmp_path / "again", tmp_path / "seed1"
    cli("--model", "oracle", "--suites", "gpqa_diamond", "--samples", "4", "--limit", "20",
        "--out", str(out2), "--data-dir", str(data_dir()))
    cli("--model", "oracle", "--suites", "gpqa_diamond", "--samples", "4", "--limit", "20",
        "--out", str(out3), "--data-dir", str(data_dir()), "--seed", "1")
    orders = lambda o: [r["details"]["order"] for r in samples(o, "gpqa_diamond")]  # noqa: E731
    assert orders(out) == orders(out2) != orders(out3)


@pytest.mark.slow  # ~20 s of item generation (knight_swap alone takes ~10 s)
def test_oracle_reasoning_gym_all_100_datasets(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "reasoning_gym", "--samples", "1", "--limit", "2",
               "--out", str(out), "--data-dir", str(data_dir())) == 0
    entry = results(out)["suites"]["reasoning_gym"]
    assert entry["status"] == "ok" and entry["score"] == 1.0
    assert len(entry["per_dataset"]) == 100
    assert all(d["score"] == 1.0 for d in entry["per_dataset"].values())
    assert set(entry["categories"]) == {"Math", "Algorithmic", "Cognition", "Logic"}
    assert sum(c["n_items"] for c in entry["categories"].values()) == entry["n_items"] == 200
    assert entry["protocol"]["limit_mode"] == "per_dataset"


def test_oracle_refuses_livecodebench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli("--model", "oracle", "--suites", "livecodebench", "--limit", "1",
             "--out", str(tmp_path / "run"), "--data-dir", str(data_dir()))
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reference solutions" in err[0]


SMALL_SPLIT = """\
default_size: 3
default_seed: 45
categories:
- category: arithmetic
  datasets:
  - dataset: basic_arithmetic
- category: algorithmic
  datasets:
  - dataset: jugs
    params: {num_jugs: 4, difficulty: 10}
- category: games
  datasets:
  - dataset: rush_hour
    params: {min_moves: 25, max_moves: 50}
- category: cognition
  datasets:
  - dataset: rubiks_cube
    params: {cube_size: 5, min_scramble_steps: 25, max_scramble_steps: 50}
- category: graphs
  datasets:
  - dataset: graph_color
"""


def _copy_mapping(data: Path) -> None:
    src = data_dir() / "reasoning_gym" / "paper_categories.yaml"
    (data / "reasoning_gym" / "paper_categories.yaml").write_text(src.read_text())


def test_oracle_reasoning_gym_derived_references(tmp_path: Path) -> None:
    """Datasets without a usable stored answer get solver-derived ones the scorer accepts."""
    data = tmp_path / "data"
    (data / "reasoning_gym").mkdir(parents=True)
    (data / "reasoning_gym" / "hard_split_params.yaml").write_text(SMALL_SPLIT)
    _copy_mapping(data)
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "reasoning_gym", "--samples", "1",
               "--out", str(out), "--data-dir", str(data)) == 0
    entry = results(out)["suites"]["reasoning_gym"]
    assert entry["score"] == 1.0 and entry["n_items"] == 15
    assert entry["data"][0]["manifest"] == "no-manifest"
    # the paper's columns: jugs and graph_color are Algorithmic, rush_hour and rubiks_cube
    # Cognition (no Logic dataset in this small split)
    assert set(entry["categories"]) == {"Math", "Algorithmic", "Cognition"}
    assert entry["categories"]["Algorithmic"]["n_items"] == 6
    assert entry["categories"]["Cognition"]["n_episodes"] == 6
    assert [d["manifest"] for d in entry["data"]] == ["no-manifest", "no-manifest"]


def test_wrong_answers_score_below_one(tmp_path: Path) -> None:
    """The rolled-up numbers move when answers are wrong (the oracle test can fail)."""
    from spade.eval._protocol import build
    from spade.eval.data import DataDir
    from spade.eval.suites import SUITES

    data = tmp_path / "data"
    (data / "reasoning_gym").mkdir(parents=True)
    (data / "reasoning_gym" / "hard_split_params.yaml").write_text(SMALL_SPLIT)
    _copy_mapping(data)
    suite = SUITES.get("reasoning_gym")(build("reasoning_gym", {"samples": 1}), 0)
    items = suite.load(DataDir(data)).items
    assert all(suite.score(i, 0, suite.oracle(i, 0)).score == 1.0 for i in items)
    assert all(suite.score(i, 0, "<answer>nonsense</answer>").score < 1.0 for i in items)
    assert all(suite.score(i, 0, suite.oracle(i, 0).replace("<answer>", "")).score < 1.0
               for i in items)
    # a column is wins / played episodes pooled over its datasets; partial credit is no win
    recs = [{"id": i.key, "sample": k, "score": [1.0, 0.5, 0.0, 1.0][k]} for i in items
            for k in range(4)]
    for r in recs:
        suite.observe(r)
    means = {i.key: 0.625 for i in items}
    roll = suite.rollup(means, items)
    assert roll["categories"]["Math"]["score"] == 0.5
    assert roll["categories"]["Math"]["n_episodes"] == 12
    assert roll["per_dataset"]["basic_arithmetic"]["score"] == 0.625
