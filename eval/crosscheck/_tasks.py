"""lm-eval task YAMLs over the LOCAL benchmark files, written at run time into a work dir.

lm-eval's own ``aime24``/``aime25``/``gpqa_diamond_cot_zeroshot`` tasks load their data
from the hub. We write a task file per suite that ``include:``s lm-eval's shipped YAML (so
its prompt, stop sequences, filters and ``process_results`` are used unchanged) and only
swaps the dataset for the shared data file through the offline ``json``/``csv`` builders.

Two flavours:

- ``stock``: lm-eval's task as shipped, data swapped. The prompt is lm-eval's
  (``Question: ...\\nAnswer:`` for AIME; its own CoT wording and a global-RNG shuffle
  for GPQA), normally without a chat template.
- ``matched``: the user turn is exactly OUR suite's message (for GPQA with our recorded
  sample-0 permutation), to be run with the chat template, so greedy completions of
  both harnesses can be compared token for token; scoring stays lm-eval's. The docs for
  this flavour are derived from the data file into the work dir (never into the repo).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from spade.eval.data import DataDir
from spade.eval.suites import SUITES
from spade.eval.suites._base import Item, SingleTurnSuite

from spade.errors import UserError
from spade.textfile import jsonl_text

FLAVOURS = ("stock", "matched")

#: Our suite id -> (lm-eval task YAML relative to ``lm_eval/tasks``, our data file, format).
_STOCK: dict[str, tuple[str, str, str]] = {
    "aime24": ("aime/aime24.yaml", "aime/aime24.jsonl", "json"),
    "aime25": ("aime/aime25.yaml", "aime/aime25.jsonl", "json"),
    "gpqa_diamond": (
        "gpqa/cot_zeroshot/gpqa_diamond_cot_zeroshot.yaml", "gpqa/gpqa_diamond.csv", "csv"),
}
SUPPORTED = tuple(_STOCK)


@dataclass(frozen=True)
class LocalTask:
    """One generated lm-eval task: its name, our suite and flavour, and the field that
    holds our item id in each lm-eval doc."""

    name: str
    suite: str
    flavour: str
    yaml_path: Path
    id_field: str


def lmeval_tasks_dir() -> Path:
    """Where the installed lm-eval keeps its task YAMLs."""
    try:
        import lm_eval.tasks
    except ImportError as exc:
        raise UserError("lm-eval is not installed: pip install 'spade-rl[crosscheck]'") from exc
    return Path(lm_eval.tasks.__file__).parent


def _suite(suite_id: str, seed: int) -> SingleTurnSuite:
    from spade.eval._protocol import build

    return SUITES.get(suite_id)(build(suite_id, {"samples": 1}), seed)


def _split_keys(split: str = "train") -> dict[str, Any]:
    """Every split lm-eval might look at points at the single local split."""
    return {"training_split": split, "validation_split": split, "fewshot_split": split,
            "test_split": split}


def _stock_config(suite_id: str, data: DataDir, cache: Path) -> tuple[dict[str, Any], str]:
    rel_yaml, rel_data, builder = _STOCK[suite_id]
    cfg: dict[str, Any] = {
        "include": str(lmeval_tasks_dir() / rel_yaml),
        "dataset_path": builder,
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"train": str(data.require(rel_data))},
                           "cache_dir": str(cache)},
        **_split_keys(),
    }
    if suite_id == "aime24":
        # lm-eval's aime24 reads a hub copy with capitalised columns; ours are lower-case.
        cfg["doc_to_text"] = "Question: {{problem}}\nAnswer:"
        cfg["doc_to_target"] = "{{answer}}"
    id_field = "Record ID" if suite_id == "gpqa_diamond" else "id"
    return cfg, id_field


def _matched_docs(suite_id: str, data: DataDir, seed: int, out: Path) -> Path:
    """Our sample-0 prompt (the user turn) and lm-eval's target form, one doc per item."""
    suite = _suite(suite_id, seed)
    rows = []
    for item in suite.load(data).items:
        row: dict[str, Any] = {"id": item.key, "prompt": _user_turn(suite, item),
                               "answer": _target(suite, item)}
        if suite_id == "gpqa_diamond":  # lm-eval's flexible filter also matches choice text
            options = [item.data[c] for c in ("Correct Answer", "Incorrect Answer 1",
                                              "Incorrect Answer 2", "Incorrect Answer 3")]
            order = suite.permutation(item, 0)  # type: ignore[attr-defined]
            row["choices"] = [options[i] for i in order]
        rows.append(row)
    out.write_text(jsonl_text(rows, ensure_ascii=False), encoding="utf-8")
    return out


def _user_turn(suite: SingleTurnSuite, item: Item) -> str:
    messages = suite.messages(item, 0)
    if len(messages) != 1 or messages[0]["role"] != "user":
        raise UserError(f"{suite.id}: the matched flavour needs a single user message")
    return str(messages[0]["content"])


def _target(suite: SingleTurnSuite, item: Item) -> str:
    if suite.id == "gpqa_diamond":
        letter = suite.correct_letter(item, 0)  # type: ignore[attr-defined]
        return f"({letter})"  # the form lm-eval's GPQA filters and metric expect
    return str(item.data["answer"])


def _matched_config(
    suite_id: str, data: DataDir, seed: int, work: Path, cache: Path
) -> dict[str, Any]:
    docs = _matched_docs(suite_id, data, seed, work / f"{suite_id}_matched_docs.jsonl")
    return {
        "include": str(lmeval_tasks_dir() / _STOCK[suite_id][0]),
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"train": str(docs)}, "cache_dir": str(cache)},
        **_split_keys(),
        "process_docs": None,  # the docs are already in our order and permutation
        "doc_to_text": "prompt",
        "doc_to_target": "answer",
        "description": "",
        # Our harness stops at end-of-turn only; lm-eval adds the EOS token itself.
        "generation_kwargs": {"until": [], "do_sample": False, "temperature": 0.0},
    }


def write_task(
    suite_id: str, flavour: str, data: DataDir, work: Path, *, seed: int = 0
) -> LocalTask:
    """Write one task YAML (and, for ``matched``, its docs) under ``work``."""
    if suite_id not in _STOCK:
        raise UserError(f"no lm-eval cross-check for suite {suite_id!r} "
                        f"(supported: {', '.join(SUPPORTED)})")
    if flavour not in FLAVOURS:
        raise UserError(f"unknown cross-check flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "hf_datasets_cache"
    name = f"spade_{suite_id}_{flavour}"
    if flavour == "stock":
        cfg, id_field = _stock_config(suite_id, data, cache)
    else:
        cfg, id_field = _matched_config(suite_id, data, seed, work, cache), "id"
    cfg = {"task": name, **cfg}
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return LocalTask(name, suite_id, flavour, path, id_field)
