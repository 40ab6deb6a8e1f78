"""Result records fit to commit: the files a report or the gate reads, with paths portable.

An evaluation run records where its data and model were (``data_dir``, the model's local
directory) as absolute paths of the machine that ran it. Identity is carried by the sha256
values, not the paths, so a committed copy says ``.`` for the project, ``..`` for the folder
beside it and ``~`` for the home directory instead. Only ``results.json``, ``run.json`` and
the per-sample scores (``samples/``, without the completions) are copied: the inspect-ai
export holds whole prompts, a completion may quote its question, and benchmark questions are
never committed. What the gate needs of a sample (item, sample, prompt hash, score) stays.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from spade.paths import project_root
from spade.textfile import atomic_write_text, fresh_stage, read_jsonl, swap_in, write_jsonl

__all__ = ["copy_run", "portable"]

RUN_FILES = ("results.json", "run.json")
#: the fields of a sample record that are kept (scores and identity, no model text)
SAMPLE_FIELDS = ("suite", "id", "sample", "prompt_hash", "score", "seed", "finish_reason",
                 "time_s")


def _prefixes() -> list[tuple[str, str]]:
    root = project_root().resolve()
    # the default data folder first: where ../shared is a link, it resolves elsewhere
    shared = (root.parent / "shared").resolve()
    return [(str(shared), "../shared"), (str(root), "."), (str(root.parent), ".."),
            (str(Path.home().resolve()), "~")]


def _text(value: str, prefixes: list[tuple[str, str]]) -> str:
    for prefix, short in prefixes:
        if prefix in ("", "/"):
            continue
        value = value.replace(prefix + "/", short + "/")
        if value == prefix or value.endswith(":" + prefix):
            value = value[: len(value) - len(prefix)] + short
    return value


def portable(doc: Any, prefixes: list[tuple[str, str]] | None = None) -> Any:
    """``doc`` with every machine path in its strings made relative (see the module doc)."""
    prefixes = _prefixes() if prefixes is None else prefixes
    if isinstance(doc, str):
        return _text(doc, prefixes)
    if isinstance(doc, dict):
        return {portable(k, prefixes): portable(v, prefixes) for k, v in doc.items()}
    if isinstance(doc, list):
        return [portable(v, prefixes) for v in doc]
    return doc


def copy_run(run: Path, target: Path, *, samples: bool = True) -> Path:
    """Copy an evaluation run's records into ``target``, paths made portable; ``target``
    is replaced only once the copy is complete."""
    stage = fresh_stage(target)
    try:
        for name in RUN_FILES:
            if (run / name).is_file():
                doc = json.loads((run / name).read_text(encoding="utf-8"))
                atomic_write_text(stage / name,
                                  json.dumps(portable(doc), indent=2, sort_keys=True) + "\n")
        if samples and (run / "samples").is_dir():
            (stage / "samples").mkdir()
            for path in sorted((run / "samples").glob("*.jsonl")):
                _scores_only(path, stage / "samples" / path.name)
        swap_in(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target


def _scores_only(source: Path, target: Path) -> None:
    write_jsonl(target, ({k: rec[k] for k in SAMPLE_FIELDS if k in rec}
                         for rec in read_jsonl(source)), sort_keys=True)
