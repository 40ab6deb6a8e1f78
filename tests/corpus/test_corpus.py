"""Corpus loading: formats, ids, errors, the bundled corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade.corpus import CORPORA_ENV, Corpus, default_corpora_dir, load_corpus
from spade.errors import UserError


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_text_and_orig_doc_with_metadata(tmp_path: Path) -> None:
    path = _write(tmp_path / "mini.jsonl", [
        json.dumps({"text": "Alpha beta.", "domain": "math"}),
        "",
        json.dumps({"orig_doc": "Gamma delta.", "id": 42, "source": "x"}),
    ])
    corpus = Corpus(path)
    assert len(corpus) == 2
    a, b = corpus[0], corpus[1]
    assert (a.text, a.line, a.metadata) == ("Alpha beta.", 1, {"domain": "math"})
    assert a.id.startswith("mini:1:") and len(a.id.split(":")[2]) == 12
    assert (b.text, b.line, b.id, b.metadata) == ("Gamma delta.", 3, "42", {"source": "x"})
    assert Corpus(path)[0].id == a.id  # stable
    other = _write(tmp_path / "mini2.jsonl", [json.dumps({"text": "Alpha beta!"})])
    assert Corpus(other)[0].id.split(":")[2] != a.id.split(":")[2]


def test_bad_lines_name_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.jsonl", [
        json.dumps({"text": "ok"}), "{not json", json.dumps({"body": "x"}),
        json.dumps([1]), json.dumps({"text": 3}),
    ])
    corpus = Corpus(path)
    for index, line, words in [(1, 2, "not a JSON"), (2, 3, "no 'text'"), (3, 4, "object"),
                               (4, 5, "string")]:
        with pytest.raises(UserError, match=rf"bad.jsonl:{line}: .*{words}"):
            corpus[index]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"not found: .*nope\.jsonl"):
        load_corpus(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(UserError, match="empty"):
        load_corpus(tmp_path / "empty.jsonl")


def test_env_var_selects_corpora_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CORPORA_ENV, str(tmp_path))
    assert default_corpora_dir() == tmp_path
    with pytest.raises(UserError, match=str(tmp_path / "games.jsonl")):
        load_corpus("games")
    _write(tmp_path / "games.jsonl", [json.dumps({"text": "t"})])
    assert len(load_corpus("games")) == 1


@pytest.mark.parametrize("name", ["games", "tool_use"])
def test_bundled_corpora(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CORPORA_ENV, raising=False)
    path = default_corpora_dir() / f"{name}.jsonl"
    if not path.is_file():
        pytest.skip(f"bundled corpus not present at {path}")
    corpus = load_corpus(name)
    stats = json.loads((path.parent / "stats.json").read_text())
    assert len(corpus) == stats[name]["chunks"]
    ids = {corpus[i].id for i in range(0, len(corpus), 7)}
    assert len(ids) == len(range(0, len(corpus), 7))
    doc = corpus[len(corpus) - 1]
    assert doc.text and {"source", "license", "domain"} <= set(doc.metadata)
