"""The whole cross-check: lm-eval on local tasks, our scorer on its completions, our run.

Steps, all under one output directory:
1. write the lm-eval task YAMLs (``tasks/``) for each suite and flavour;
2. run lm-eval (greedy, ``limit`` items, ``max_tokens``) once per flavour — ``stock``
   without, ``matched`` with the chat template — and keep its per-item log;
3. feed its completions to OUR harness through the ``replay`` provider
   (``replay_<flavour>.jsonl`` → ``ours_replay_<flavour>/``) and compare per-item scores
   with lm-eval's own metric;
4. run our harness with ``hf:`` on the same items, greedy, same budget
   (``ours_hf/``), and compare prompts and completions;
5. write ``report.json`` (per item and per suite/flavour summary, wall times).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from spade.eval.crosscheck._lmeval import (
    LmSample,
    compare,
    load_lm,
    run_lmeval,
    summarize_comparisons,
)
from spade.eval.crosscheck._tasks import FLAVOURS, write_task
from spade.eval.data import DataDir
from spade.eval.suites._extract import choice_letter

from spade.errors import UserError
from spade.textfile import atomic_write_text, read_jsonl, write_jsonl

Key = tuple[str, str]


def _overrides(limit: int, max_tokens: int) -> dict[str, Any]:
    return {"samples": 1, "temperature": 0.0, "top_p": 1.0, "top_k": 0,
            "max_tokens": max_tokens, "limit": limit}


def _read_samples(run_dir: Path, suite: str) -> list[dict[str, Any]]:
    path = run_dir / "samples" / f"{suite}.jsonl"
    return read_jsonl(path)


def _ours_on_lm(
    samples: Sequence[LmSample], flavour: str, suites: Sequence[str], out: Path,
    data_dir: Path, seed: int, limit: int, max_tokens: int,
) -> dict[Key, tuple[str | None, float]]:
    """Our scorer on lm-eval's completions, through the real replay provider."""
    from spade.eval._runner import EvalConfig, run_eval

    result: dict[Key, tuple[str | None, float]] = {}
    # In the stock flavour lm-eval shuffles GPQA choices with its own RNG, so our
    # permutation's letter is meaningless there: apply our extraction rule to its target.
    replayed = []
    for s in samples:
        if flavour == "stock" and s.suite == "gpqa_diamond":
            got = choice_letter(s.completion)
            result[(s.suite, s.id)] = (got, float(got is not None and f"({got})" == s.target))
        else:
            replayed.append(s)
    if not replayed:
        return result
    replay = out / f"replay_{flavour}.jsonl"
    write_jsonl(replay, ({"suite": s.suite, "id": s.id, "sample": 0,
                          "completion": s.completion} for s in replayed))
    run_suites = tuple(sid for sid in suites if any(s.suite == sid for s in replayed))
    run_dir = out / f"ours_replay_{flavour}"
    run_eval(EvalConfig(model=f"replay:{replay}", suites=run_suites, out=run_dir,
                       data_dir=data_dir, seed=seed, overrides=_overrides(limit, max_tokens),
                       quiet=True))
    for sid in run_suites:
        for rec in _read_samples(run_dir, sid):
            result[(sid, str(rec["id"]))] = (rec["extracted"], float(rec["score"]))
    return result


def _ours_hf(
    model_dir: Path, suites: Sequence[str], out: Path, data_dir: Path, seed: int,
    limit: int, max_tokens: int,
) -> tuple[dict[Key, tuple[str, float]], dict[Key, str], float]:
    """Our own greedy hf run, plus the exact prompt text our chat template produces."""
    from spade.eval._protocol import build
    from spade.eval._runner import EvalConfig, run_eval
    from spade.eval.providers._base import ProviderOptions, make_provider
    from spade.eval.suites import SUITES

    spec = f"hf:{model_dir}"
    provider = make_provider(spec, ProviderOptions(batch_size=1, device="cpu", dtype="float32"))
    run_dir = out / "ours_hf"
    try:
        start = time.perf_counter()
        run_eval(EvalConfig(model=spec, suites=tuple(suites), out=run_dir, data_dir=data_dir,
                           seed=seed, overrides=_overrides(limit, max_tokens), batch_size=1,
                           device="cpu", dtype="float32", quiet=True), provider)
        wall = time.perf_counter() - start
        policy = provider.policy  # type: ignore[attr-defined]
        prompts: dict[Key, str] = {}
        for sid in suites:
            suite = SUITES.get(sid)(build(sid, _overrides(limit, max_tokens)), seed)
            for item in suite.load(DataDir(data_dir)).items[:limit]:
                ids = policy.render(suite.messages(item, 0))
                prompts[(sid, item.key)] = policy.decode(ids)
    finally:
        provider.close()
    gens = {(sid, str(r["id"])): (str(r["completion"]), float(r["score"]))
            for sid in suites for r in _read_samples(run_dir, sid)}
    return gens, prompts, wall


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for pkg in ("lm_eval", "transformers", "torch", "datasets"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def crosscheck(
    model_dir: Path,
    suites: Sequence[str],
    out: Path,
    data_dir: Path,
    *,
    flavours: Sequence[str] = FLAVOURS,
    limit: int = 3,
    max_tokens: int = 32,
    seed: int = 0,
    run_ours: bool = True,
    threads: int | None = 2,
) -> dict[str, Any]:
    """Run the cross-check and return (and write to ``out/report.json``) its report."""
    if limit < 1 or max_tokens < 1:
        raise UserError("--limit and --max-tokens must be at least 1")
    if out.exists() and any(out.iterdir()):
        raise UserError(f"cross-check output dir is not empty: {out}")
    if threads:
        import torch

        torch.set_num_threads(threads)
    out.mkdir(parents=True, exist_ok=True)
    data = DataDir(data_dir)
    lm = load_lm(model_dir)
    rows = []
    wall: dict[str, float] = {}
    aggregates: dict[str, Any] = {}
    ours_hf, prompts = None, None
    if run_ours:
        ours_hf, prompts, wall["ours_hf"] = _ours_hf(model_dir, suites, out, data_dir, seed,
                                                     limit, max_tokens)
    for flavour in flavours:
        tasks = [write_task(sid, flavour, data, out / "tasks", seed=seed) for sid in suites]
        run = run_lmeval(lm, tasks, limit=limit, max_tokens=max_tokens,
                         chat_template=flavour == "matched", seed=seed)
        wall[f"lm_eval_{flavour}"] = round(run.wall_s, 2)
        aggregates[flavour] = run.aggregate
        scored = _ours_on_lm(run.samples, flavour, suites, out, data_dir, seed, limit,
                             max_tokens)
        rows.extend(compare(run.samples, scored, our_prompts=prompts, ours_hf=ours_hf))
        write_jsonl(out / f"lm_eval_samples_{flavour}.jsonl",
                    (asdict(s) for s in run.samples), ensure_ascii=False)
    report = {
        "model": str(model_dir), "suites": list(suites), "flavours": list(flavours),
        "limit": limit, "max_tokens": max_tokens, "seed": seed, "threads": threads,
        "versions": _versions(), "wall_s": {k: round(v, 2) for k, v in wall.items()},
        "summary": summarize_comparisons(rows), "lm_eval_aggregate": aggregates,
        "items": [asdict(r) for r in rows],
    }
    atomic_write_text(out / "report.json", json.dumps(report, indent=2, default=str) + "\n")
    return report
