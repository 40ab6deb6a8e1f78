"""Run lm-eval on the local tasks and compare it with our harness item by item.

:func:`run_lmeval` calls ``lm_eval.simple_evaluate`` with its ``hf`` model on a local
model directory, greedy, with ``log_samples`` on, and returns one :class:`LmSample` per
document: the exact prompt string lm-eval fed the model, the raw completion, lm-eval's
filtered answer(s) and per-item metric. :func:`compare` lines these up with our harness:
our scorer on lm-eval's very completions (through the ``replay`` provider), and our own
``hf`` run on the same items with the same greedy budget.

Nothing is downloaded: the hub and ``datasets`` run offline; the tasks read local files
(:mod:`spade.eval.crosscheck._tasks`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.eval.crosscheck._tasks import LocalTask

from spade.errors import UserError

#: The lm-eval filter whose metric is the headline per suite (GPQA also logs strict-match).
PRIMARY_FILTER = {"aime24": "none", "aime25": "none", "gpqa_diamond": "flexible-extract"}


@dataclass(frozen=True)
class LmSample:
    """One lm-eval document as logged: prompt, completion, per-filter answer and metric."""

    suite: str
    flavour: str
    id: str
    prompt: str
    completion: str
    target: str
    extracted: Mapping[str, str] = field(default_factory=dict)  # filter -> filtered answer
    scores: Mapping[str, float] = field(default_factory=dict)  # filter -> exact_match

    def primary(self) -> tuple[str, float]:
        key = PRIMARY_FILTER.get(self.suite, "none")
        return self.extracted.get(key, ""), float(self.scores.get(key, 0.0))


@dataclass(frozen=True)
class LmRun:
    samples: list[LmSample]
    wall_s: float
    aggregate: dict[str, Any]


def offline_env() -> None:
    """lm-eval, ``datasets`` and the hub client read these at import time."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ[var] = "1"


def load_lm(model_dir: Path, *, device: str = "cpu", dtype: str = "float32") -> Any:
    """lm-eval's ``hf`` model over a local directory (batch size 1, as our greedy run)."""
    offline_env()
    try:
        from lm_eval.api.registry import get_model
    except ImportError as exc:
        raise UserError("lm-eval is not installed: pip install 'spade-rl[crosscheck]'") from exc
    args = {"pretrained": str(model_dir), "dtype": dtype}
    return get_model("hf").create_from_arg_obj(args, {"batch_size": 1, "device": device})


def run_lmeval(
    lm: Any,
    tasks: Sequence[LocalTask],
    *,
    limit: int,
    max_tokens: int,
    chat_template: bool,
    seed: int = 0,
) -> LmRun:
    """One ``simple_evaluate`` call over ``tasks`` (all of one flavour), greedy."""
    offline_env()
    import lm_eval
    from lm_eval.tasks import TaskManager

    dirs = sorted({str(t.yaml_path.parent) for t in tasks})
    manager = TaskManager(include_path=dirs, include_defaults=False)
    start = time.perf_counter()
    out = lm_eval.simple_evaluate(
        model=lm, tasks=[t.name for t in tasks], limit=limit, task_manager=manager,
        gen_kwargs={"max_gen_toks": max_tokens, "do_sample": False, "temperature": 0.0},
        apply_chat_template=chat_template, log_samples=True, random_seed=seed,
        bootstrap_iters=0,
    )
    wall = time.perf_counter() - start
    if out is None:
        raise UserError("lm-eval returned no results")
    samples = [s for t in tasks for s in _parse(t, out["samples"][t.name])]
    return LmRun(samples, wall, {t.suite: out["results"][t.name] for t in tasks})


def _parse(task: LocalTask, logged: Sequence[Mapping[str, Any]]) -> list[LmSample]:
    """Fold lm-eval's one-record-per-(doc, filter) log into one sample per doc."""
    by_doc: dict[int, dict[str, Any]] = {}
    for rec in logged:
        cur = by_doc.setdefault(int(rec["doc_id"]), {
            "id": str(rec["doc"][task.id_field]),
            "prompt": str(rec["arguments"][0][0]),
            "completion": str(rec["resps"][0][0]),
            "target": str(rec["target"]),
            "extracted": {}, "scores": {},
        })
        flt = str(rec.get("filter", "none"))
        filtered = rec["filtered_resps"]
        cur["extracted"][flt] = str(filtered[0] if isinstance(filtered, list) else filtered)
        cur["scores"][flt] = float(rec["exact_match"])
    return [LmSample(task.suite, task.flavour, **by_doc[k]) for k in sorted(by_doc)]


@dataclass(frozen=True)
class ItemComparison:
    """One item: did prompts and greedy completions match, and do the scorers agree?"""

    suite: str
    flavour: str
    id: str
    same_prompt: bool | None
    same_completion: bool | None  # None: our hf run was not done
    lm_extracted: str
    lm_score: float
    ours_extracted: str | None  # our rule on lm-eval's completion
    ours_score: float  # our scorer on lm-eval's completion
    ours_hf_score: float | None  # our scorer on our own hf completion
    scorer_agree: bool


def compare(
    lm: Sequence[LmSample],
    ours_on_lm: Mapping[tuple[str, str], tuple[str | None, float]],
    *,
    our_prompts: Mapping[tuple[str, str], str] | None = None,
    ours_hf: Mapping[tuple[str, str], tuple[str, float]] | None = None,
) -> list[ItemComparison]:
    """Line up lm-eval's samples with ours, keyed by (suite, item id).

    ``ours_on_lm``: our (extracted, score) on lm-eval's completion; ``our_prompts``: the
    prompt text our harness sends (chat template applied); ``ours_hf``: our own
    (completion, score) for the same item. An item lm-eval has and we lack is an error.
    """
    rows = []
    for s in lm:
        key = (s.suite, s.id)
        if key not in ours_on_lm:
            raise UserError(f"no score of ours for {s.suite} item {s.id}")
        lm_ext, lm_score = s.primary()
        ext, score = ours_on_lm[key]
        same_prompt = None if our_prompts is None else our_prompts.get(key) == s.prompt
        hf = None if ours_hf is None else ours_hf.get(key)
        rows.append(ItemComparison(
            s.suite, s.flavour, s.id, same_prompt,
            None if hf is None else hf[0] == s.completion,
            lm_ext, lm_score, ext, score, None if hf is None else hf[1],
            scorer_agree=score == lm_score,
        ))
    return rows


def summarize_comparisons(rows: Sequence[ItemComparison]) -> dict[str, Any]:
    """Counts per (suite, flavour): items, equal prompts/completions, scorer agreement
    (prompt/completion counts are None when our own run was not done)."""
    out: dict[str, Any] = {}
    for r in rows:
        cur = out.setdefault(f"{r.suite}/{r.flavour}", {
            "n_items": 0, "same_prompt": 0, "same_completion": 0, "scorer_agree": 0,
            "lm_eval_score": 0.0, "ours_on_lm_eval_completions": 0.0, "ours_hf_score": 0.0,
        })
        cur["n_items"] += 1
        cur["same_prompt"] += bool(r.same_prompt)
        cur["same_completion"] += bool(r.same_completion)
        cur["scorer_agree"] += r.scorer_agree
        cur["lm_eval_score"] += r.lm_score
        cur["ours_on_lm_eval_completions"] += r.ours_score
        cur["ours_hf_score"] += r.ours_hf_score or 0.0
    for cur in out.values():
        for k in ("lm_eval_score", "ours_on_lm_eval_completions", "ours_hf_score"):
            cur[k] = round(cur[k] / cur["n_items"], 4)
    if any(r.same_completion is None for r in rows):  # our hf run was skipped
        for cur in out.values():
            cur.update(same_prompt=None, same_completion=None, ours_hf_score=None)
    return out
