"""Run suites against a provider into a run directory (resumable), and aggregate results."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spade.eval import _protocol
from spade.eval._progress import Progress
from spade.eval._stats import summarize
from spade.eval._twin import Twins
from spade.eval.data import DataDir, MissingData, project_root
from spade.eval.providers._base import (
    Completion,
    Provider,
    ProviderOptions,
    Request,
    make_provider,
)
from spade.eval.providers._identity import bound_identity, describe_change
from spade.eval.store import EvalStore
from spade.eval.suites import SUITES
from spade.eval.suites._base import Item, Scored, SingleTurnSuite

import spade
from spade.errors import UserError
from spade.seeds import derive_seed

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class EvalConfig:
    """Everything that defines a run (all but ``label``, ``quiet`` must match on resume)."""

    model: str
    suites: tuple[str, ...]
    out: Path
    data_dir: Path
    seed: int = 0
    label: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # suite options, e.g. lcb_files
    batch_size: int | None = None
    device: str | None = None
    dtype: str | None = None
    quiet: bool = False
    #: Name of the protocol preset the overrides came from ("paper" or a smaller one).
    preset: str = "paper"
    #: Finished runs whose samples a model with the same identity may take over
    #: (:mod:`spade.eval._twin`); not part of the run's identity.
    twins: tuple[Path, ...] = ()

    def identity(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "suites": list(self.suites),
            "data_dir": str(self.data_dir),
            "seed": self.seed,
            "overrides": {k: v for k, v in sorted(self.overrides.items()) if v is not None},
            "extra": dict(sorted(self.extra.items())),
            "preset": self.preset,
        }


def prompt_hash(messages: Sequence[Mapping[str, Any]]) -> str:
    blob = json.dumps(list(messages), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def code_version() -> dict[str, Any]:
    root = project_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root, capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return {"spade": spade.__version__, "git_commit": None, "git_dirty": None}
    sha = commit.stdout.strip() if commit.returncode == 0 else None
    return {
        "spade": spade.__version__,
        "git_commit": sha or None,
        "git_dirty": bool(dirty.stdout.strip()) if sha else None,
    }


def _item_means(
    items: Sequence[Item], done: Mapping[tuple[str, int], Mapping[str, Any]], samples: int
) -> dict[str, float]:
    """Mean score per item over its samples; items with any sample missing are left out."""
    out: dict[str, float] = {}
    for item in items:
        scores = [done.get((item.key, s)) for s in range(samples)]
        if all(r is not None for r in scores):
            out[item.key] = sum(float(r["score"]) for r in scores if r is not None) / samples
    return out


def _suite_entry(
    suite: SingleTurnSuite,
    items: Sequence[Item],
    done: Mapping[tuple[str, int], Mapping[str, Any]],
    base: dict[str, Any],
    status: str,
) -> dict[str, Any]:
    p = suite.protocol
    means = _item_means(items, done, p.samples)
    s = summarize([means[i.key] for i in items if i.key in means])
    if s.n == 0:  # nothing was scored: no score, not 0.0
        return _nothing_scored(suite, items, done, base, status)
    entry = {
        "status": status,
        "score": s.score,
        "stderr": s.stderr,
        "ci95": list(s.ci95),
        "n_items": s.n,
        "n_samples": p.samples,
        "metric": f"avg@{p.samples}",
        **base,
        "comparable": suite.comparable() and status == "ok" and not _mismatched(base),
        "timing_s": round(sum(float(r.get("time_s", 0.0)) for r in done.values()), 4),
    }
    too_long = sum(1 for r in done.values() if r.get("finish_reason") == "prompt_too_long")
    if too_long:
        entry["prompt_too_long"] = too_long  # samples whose prompt filled the window
    observe = getattr(suite, "observe", None)  # suites whose roll-up needs record details
    if callable(observe):
        for rec in done.values():
            observe(rec)
    entry.update(suite.rollup(means, items))
    return entry


def _nothing_scored(
    suite: SingleTurnSuite,
    items: Sequence[Item],
    done: Mapping[tuple[str, int], Mapping[str, Any]],
    base: dict[str, Any],
    status: str,
) -> dict[str, Any]:
    """The entry of a suite without one item whose samples were all scored: ``missing``
    with the reason, so no report or gate reads a score from nothing."""
    keys = {i.key for i in items}
    kept = sum(1 for key, _ in done if key in keys)
    if not items:
        reason = "no item to score (the data or the --limit slice is empty)"
    elif status == "partial" and not kept:
        reason = "interrupted before its first scored sample"
    elif status == "partial":
        reason = (f"interrupted before any item had all its {suite.protocol.samples} "
                  f"samples scored ({kept} sample(s) kept for a resume)")
    else:
        reason = "no item had all its samples scored"
    return {"status": "missing", "missing_reason": reason, **base, "n_items": 0,
            "n_samples": suite.protocol.samples, "comparable": False}


def _mismatched(base: Mapping[str, Any]) -> list[str]:
    """Data files whose bytes differ from the data directory's manifest."""
    return [d["path"] for d in base.get("data", []) if d.get("manifest") == "mismatch"]


def _describe_data(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return "data file " + ", ".join(
        f"{k} (sha256 {str(old.get(k))[:12]} -> {str(new.get(k))[:12]})" for k in changed[:3])


def _prompt_chars(request: Request) -> int:
    """A prompt's length in characters: batches of similar length waste little on padding
    (one long prompt would otherwise pad a whole batch to its length). Each request's seed
    depends on its item and sample only, so the order changes no sampled token beyond the
    last bits a batch's padding may move."""
    return sum(len(str(m.get("content") or "")) for m in request.messages)


def _run_suite(
    suite: SingleTurnSuite,
    items: list[Item],
    provider: Provider,
    store: EvalStore,
    progress: Progress,
) -> dict[tuple[str, int], dict[str, Any]]:
    sid, p = suite.id, suite.protocol
    done = store.load_samples(sid)
    wanted = {(i.key, s) for i in items for s in range(p.samples)}
    done = {k: v for k, v in done.items() if k in wanted}
    by_key = {i.key: i for i in items}
    for (key, s), rec in done.items():
        if rec.get("prompt_hash") != prompt_hash(suite.prompt(by_key[key], s)):
            raise UserError(
                f"{store.samples_path(sid)}: id={key} sample={s} was made from a different "
                "prompt (data or template changed); use a new --out"
            )
    pending = [
        Request(suite, i, s, suite.prompt(i, s),
                p.sampling(derive_seed(suite.seed, sid, i.key, s)))
        for i in items for s in range(p.samples) if (i.key, s) not in done
    ]
    pending.sort(key=_prompt_chars)  # stable: ties keep item order
    progress.start(sid, len(wanted), len(wanted) - len(pending))
    if pending:
        provider.prepare(suite, [(r.item, r.sample) for r in pending])
    step = max(1, provider.batch_size)
    for start in range(0, len(pending), step):
        chunk = pending[start : start + step]
        t0 = time.monotonic()
        completions, scored = _answer(suite, provider, chunk, progress)
        records = []
        per = (time.monotonic() - t0) / len(chunk)
        for r, c, sc in zip(chunk, completions, scored, strict=True):
            rec = {
                "suite": sid,
                "id": r.item.id,
                "sample": r.sample,
                "prompt_hash": prompt_hash(r.messages),
                "completion": c.text,
                "extracted": sc.extracted,
                "score": sc.score,
                "seed": r.params.seed,
                "time_s": round(per, 6),
            }
            reason = c.finish_reason
            if reason != "stop":  # "length", or "prompt_too_long": nothing was generated
                rec["finish_reason"] = reason
            if sc.details:
                rec["details"] = dict(sc.details)
            records.append(rec)
            done[(r.item.key, r.sample)] = rec
        store.append(sid, records)
    return done


def _answer(
    suite: SingleTurnSuite, provider: Provider, requests: list[Request], progress: Progress
) -> tuple[list[Completion], list[Scored]]:
    """Completions and their scores; agentic suites play whole episodes themselves."""
    if suite.kind == "agentic":
        played: list[tuple[str, Scored]] = suite.play(requests, provider)  # type: ignore[attr-defined]
        progress.advance(len(played))
        return [Completion(c) for c, _ in played], [sc for _, sc in played]
    completions = provider.generate(requests)
    if len(completions) != len(requests):
        raise RuntimeError(f"provider returned {len(completions)} of {len(requests)}")
    scored = []
    for r, c in zip(requests, completions, strict=True):
        scored.append(suite.score(r.item, r.sample, c.text))
        progress.advance(1)  # per item, so the rate moves while a batch is scored
    return completions, scored


def run_eval(cfg: EvalConfig, provider: Provider | None = None) -> dict[str, Any]:
    """Evaluate ``cfg.suites`` and return (and write) the results document."""
    classes = {sid: SUITES.get(sid) for sid in cfg.suites}  # unknown ids fail here
    protocols = {sid: _protocol.build(sid, dict(cfg.overrides), cfg.extra) for sid in cfg.suites}
    progress = Progress(quiet=cfg.quiet)
    store = EvalStore(cfg.out)
    own_provider = provider is None
    if provider is None:
        provider = make_provider(
            cfg.model,
            ProviderOptions(batch_size=cfg.batch_size, device=cfg.device, dtype=cfg.dtype),
        )
    try:
        resuming = store.open(cfg.identity())
        if resuming:
            progress.note(f"resuming the run in {cfg.out}")
        ident = provider.identity()
        model_id = bound_identity(ident)
        store.bind("model", model_id, describe_change)
        ident = {**ident, **model_id}
        trained = ident.get("method") or {}  # a training checkpoint's recipe label and kind
        current = code_version()
        versions = store.code_versions(current)
        results: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": cfg.out.name,
            "created": store.created(),
            "finished": False,
            "model": ident,
            "method": cfg.label or trained.get("label") or ident.get("name") or cfg.model,
            **({"method_kind": trained["kind"]} if trained.get("kind") and not cfg.label else {}),
            # the code that made the run; every later one that resumed it is listed too
            "code_version": versions[0],
            **({"code_versions": versions} if len(versions) > 1 else {}),
            "seed": cfg.seed,
            "preset": cfg.preset,
            "data_dir": str(cfg.data_dir),
            "suites": {},
        }
        data = DataDir(cfg.data_dir)
        progress.begin(list(classes))
        twins = Twins(cfg.twins, model_id, current if versions == [current] else {})
        for sid, cls in classes.items():
            suite = cls(protocols[sid], cfg.seed)
            try:
                results["suites"][sid] = _evaluate_suite(suite, data, provider, store, progress,
                                                         twins)
                _mark_mismatch(results["suites"][sid])
            except _SuiteAborted as aborted:
                results["suites"][sid] = aborted.entry
                store.write_results(results)
                cause = aborted.__cause__
                raise (cause if cause is not None else aborted) from None
            store.write_results(results)
        missing = {sid: e.get("missing_file") or e.get("missing_reason")
                   for sid, e in results["suites"].items() if e.get("status") == "missing"}
        results["finished"] = not missing
        results["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        store.write_results(results)
        if missing:
            raise MissingSuites(missing, cfg.out)
        return results
    finally:
        progress.end()
        if own_provider:
            provider.close()


class MissingSuites(UserError):
    """Requested suites had no data; the others were run and kept (exit 2, one line)."""

    def __init__(self, missing: Mapping[str, str | None], out: Path) -> None:
        what = "; ".join(f"{sid}: {path}" for sid, path in missing.items())
        super().__init__(f"missing data for {len(missing)} suite(s) ({what}); the other "
                         f"suites' results are in {out}; add the data and rerun to resume")
        self.missing = dict(missing)


def _mark_mismatch(entry: dict[str, Any]) -> None:
    bad = _mismatched(entry)
    if bad:
        entry["not_comparable"] = f"data differs from the manifest: {', '.join(bad)}"


class _SuiteAborted(Exception):
    """Carries the partial entry of a suite whose run was interrupted (cause attached)."""

    def __init__(self, entry: dict[str, Any]) -> None:
        super().__init__("suite aborted")
        self.entry = entry


def _evaluate_suite(
    suite: SingleTurnSuite, data: DataDir, provider: Provider, store: EvalStore,
    progress: Progress, twins: Twins | None = None,
) -> dict[str, Any]:
    base: dict[str, Any] = {"protocol": suite.protocol.as_record()}
    try:
        with progress.loading(suite.id):
            loaded = suite.load(data)
    except MissingData as exc:
        progress.finish(f"[{suite.id}] MISSING: {exc.path} ({exc.reason})")
        return {"status": "missing", "missing_file": str(exc.path),
                "missing_reason": exc.reason, **base,
                "n_items": 0, "n_samples": suite.protocol.samples, "comparable": False}
    base["data"] = [data.record(f).as_record() for f in loaded.files]
    store.bind(f"data/{suite.id}", {d["path"]: d["sha256"] for d in base["data"]},
               _describe_data)
    base["template_sha256"] = suite.template_sha256()
    if loaded.notes:
        base["notes"] = loaded.notes
    if not loaded.items:  # a file with no records in it: name it, score nothing
        where = ", ".join(map(str, loaded.files)) or "the data directory"
        progress.finish(f"[{suite.id}] MISSING: no items in {where}")
        return {"status": "missing", "missing_reason": f"no items in {where}",
                **({"missing_file": str(loaded.files[0])} if loaded.files else {}), **base,
                "n_items": 0, "n_samples": suite.protocol.samples, "comparable": False}
    items = suite.select(suite.take_fewshot(loaded.items))
    if twins is not None:
        twins.take(store, suite.id, progress.note)
    if (twin := store.samples_from(suite.id)) is not None:
        base["samples_from"] = twin
    done: dict[tuple[str, int], dict[str, Any]] = {}
    try:
        done = _run_suite(suite, items, provider, store, progress)
    except BaseException as exc:
        done = store.load_samples(suite.id)
        raise _SuiteAborted(_suite_entry(suite, items, done, base, "partial")) from exc
    finally:
        suite.close()
    entry = _suite_entry(suite, items, done, base, "ok")
    if entry["status"] == "missing":
        progress.finish(f"[{suite.id}] MISSING: {entry['missing_reason']}")
        return entry
    progress.finish(
        f"[{suite.id}] {entry['metric']} = {entry['score']:.4f} ± {entry['stderr']:.4f} "
        f"over {entry['n_items']} items"
    )
    return entry
