"""The multi-cycle self-play loop with a crash-safe run store and ``--resume``.

Layout of a run directory::

    state.db        the run store (pool, plays, memory, corpus cursor, RNG, metrics)
    metrics.jsonl   one line per completed cycle, re-derived from state.db
    envs/           every valid environment: <env_id>.py, <env_id>.json, envs.jsonl

A cycle's results are committed in one transaction; ``metrics.jsonl`` and ``envs/`` are
rewritten from the store after every commit and when a run starts. So a run killed at any
moment and resumed produces the same files as an uninterrupted one (timings aside).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.config import RunConfig
from spade.corpus import Corpus, CorpusSampler, SamplerState, load_corpus
from spade.cycle._cycle import CycleContext, run_cycle
from spade.cycle._export import INDEX, POOL_DIR, export_pool
from spade.cycle._setup import Roles, build_roles, sandbox_limits
from spade.cycle._types import CycleResult, CycleState
from spade.diversity import make_embedder
from spade.errors import UserError
from spade.memory import Memory
from spade.rundir import START_OVER, claim_run_dir
from spade.sandbox import IsolationUnavailable, Sandbox
from spade.store import DB_NAME, RunStore, random_state, restore_random

METRICS = "metrics.jsonl"
#: Names a run directory may hold before its store exists (a run killed very early).
_OWN_NAMES = {DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal",
              ".state.lock", METRICS, POOL_DIR}


def store_identity(config: RunConfig) -> dict[str, Any]:
    """What a run directory is bound to: the config without the cycle count (extendable)."""
    data = config.model_dump(mode="json")
    data.pop("cycles", None)
    return data


def check_run_dir(run_dir: Path, resume: bool | None = None, new_run: bool = False,
                  say: Callable[[str], None] | None = None) -> bool:
    """Apply the run-directory rule (``spade.rundir``); True when a run is resumed.

    ``resume=None`` resumes implicitly when the directory holds a run, ``True`` insists on
    it, ``False`` refuses a directory that already holds one.
    """
    holds = claim_run_dir(run_dir, holds_run=lambda d: (d / DB_NAME).is_file(),
                          own_names=_OWN_NAMES, resume=bool(resume), new_run=new_run, say=say)
    if holds and resume is False:
        raise UserError(f"run directory {run_dir} already holds a run; {START_OVER}")
    return holds


@dataclass
class RunSummary:
    """What one invocation did."""

    run_dir: Path
    cycles_run: list[int] = field(default_factory=list)
    last_cycle: int | None = None
    results: list[CycleResult] = field(default_factory=list, repr=False)

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / METRICS

    @property
    def pool_index(self) -> Path:
        return self.run_dir / POOL_DIR / INDEX


def fresh_state(config: RunConfig, corpus: Corpus | None = None) -> CycleState:
    """The state before cycle 0 (a trainer's starting point): empty memory, a corpus
    sampler (loaded from the config unless given; none with ``use_corpus: false``) and the
    run RNG seeded from ``config.seed``."""
    sampler = None
    if config.designer.use_corpus:
        corpus = corpus or load_corpus(config.corpus.path or config.designer.setting)
        sampler = CorpusSampler(corpus, seed=config.seed)
    return CycleState(Memory(config.memory), sampler, random.Random(config.seed))


def _restore(config: RunConfig, store: RunStore, corpus: Corpus | None
             ) -> tuple[CycleState, int]:
    """The state after the last completed cycle (or a fresh one) and the next cycle."""
    saved = store.load_state()
    sampler: CorpusSampler | None = None
    if corpus is not None:
        sampler = (CorpusSampler(corpus, seed=config.seed) if saved is None or saved.sampler is None
                   else CorpusSampler.restore(corpus, SamplerState.from_json(saved.sampler)))
    if saved is None:
        return fresh_state(config, corpus), 0
    memory = Memory.from_dict(saved.memory)
    return CycleState(memory, sampler, restore_random(saved.rng["run"])), saved.cycle + 1


def _printer(stream: Any = None) -> Callable[[str], None]:
    out = stream or sys.stderr

    def say(text: str) -> None:
        print(f"[spade selfplay] {text}", file=out, flush=True)

    return say


def run_selfplay(
    config: RunConfig,
    run_dir: str | os.PathLike[str],
    *,
    resume: bool | None = None,
    new_run: bool = False,
    progress: Callable[[str], None] | None = None,
    roles: Roles | None = None,
    keep_results: bool = False,
) -> RunSummary:
    """Run cycles until ``config.cycles`` are complete in ``run_dir``.

    The run directory follows ``spade.rundir``: ``resume=None`` continues a run already in
    ``run_dir`` (same config) or starts one, ``True`` insists on continuing, ``new_run``
    moves an existing directory aside first. ``progress`` receives one-line status texts
    (default: stderr). ``roles`` overrides the
    policies built from ``config.policy`` (tests, trainers). ``keep_results`` keeps every
    :class:`CycleResult` (trajectories included) in the summary.
    """
    say = progress or _printer()
    directory = Path(run_dir)
    resuming = check_run_dir(directory, resume, new_run, say)
    summary = RunSummary(directory)
    # Bad input fails before a new run directory is touched; an existing run is checked
    # against the config before a model is loaded for it.
    corpus = (load_corpus(config.corpus.path or config.designer.setting)
              if config.designer.use_corpus else None)
    with contextlib.ExitStack() as stack:
        existing = (directory / DB_NAME).is_file()

        def open_store() -> RunStore:
            return stack.enter_context(
                RunStore.open(directory, store_identity(config), resume=resuming))

        store = open_store() if existing else None
        last = store.last_completed_cycle() if store is not None else None
        if store is not None and last is not None and last + 1 >= config.cycles:
            _rederive(store)
            summary.last_cycle = store.last_completed_cycle()
            say(f"all {config.cycles} cycles already complete in {directory}")
            return summary
        sandbox = stack.enter_context(_open_sandbox(config))  # fails before a model loads
        say(f"loading policy {config.policy.spec}")
        roles = roles or build_roles(config)
        embedder = make_embedder(config.diversity.embedder)
        store = store or open_store()
        state, start = _restore(config, store, corpus)
        _rederive(store)
        summary.last_cycle = store.last_completed_cycle()
        if start:
            say(f"resuming after cycle {start} of {config.cycles}")
        ctx = CycleContext(config, roles, sandbox, embedder)
        for cycle in range(start, config.cycles):
            result = _one_cycle(ctx, store, state, cycle, say)
            summary.cycles_run.append(cycle)
            summary.last_cycle = cycle
            if keep_results:
                summary.results.append(result)
    return summary


def _open_sandbox(config: RunConfig) -> Sandbox:
    """The run's sandbox; an unavailable isolation level is explained in config terms."""
    try:
        return Sandbox(config.sandbox.isolation, sandbox_limits(config),
                       allow_weak=config.sandbox.allow_weak)
    except IsolationUnavailable as exc:
        text = str(exc)
        for api, cfg in _CONFIG_TERMS:
            text = text.replace(api, cfg)
        raise UserError(f"sandbox: {text}") from None


#: The sandbox speaks its Python API; a self-play user writes the run config.
_CONFIG_TERMS = (
    ("isolation='rlimits' (or 'none') and allow_weak=True",
     "sandbox.isolation: rlimits (or none) and sandbox.allow_weak: true in the run config"),
    ("isolation='none' and allow_weak=True",
     "sandbox.isolation: none and sandbox.allow_weak: true in the run config"),
    ("pass allow_weak=True", "set sandbox.allow_weak: true in the run config"),
    ("isolation=", "sandbox.isolation "),
)


def _rederive(store: RunStore) -> None:
    """metrics.jsonl and the exported pool, from the store (after every commit and on start)."""
    run_dir = store.path.parent
    store.write_metrics_jsonl(run_dir / METRICS)
    export_pool(store, run_dir)


def _one_cycle(ctx: CycleContext, store: RunStore, state: CycleState, cycle: int,
               say: Callable[[str], None]) -> CycleResult:
    """Run, commit (atomically), then re-derive metrics.jsonl and the exported pool."""
    total = ctx.config.cycles
    with _Heartbeat(lambda text: say(f"cycle {cycle + 1}/{total} | {text}")) as tell:
        result = run_cycle(dataclasses.replace(ctx, progress=tell), state, cycle)
    t = time.perf_counter()
    store.commit_cycle(
        cycle, result.env_records, result.play_records, state.memory.to_dict(),
        state.sampler.state.to_json() if state.sampler else None,
        {"run": random_state(state.rng)}, result.metrics,
    )
    commit_s = time.perf_counter() - t
    store.update_metrics(cycle, {"timing_s": {
        **result.metrics.get("timing_s", {}), "store_write_s": round(commit_s, 6)}})
    _rederive(store)
    m = result.metrics
    tell(f"done: {m['counts']['valid']}/{m['counts']['designs']} valid, "
         f"{m['counts']['episodes']} episodes, solve rate hinted "
         f"{_pct(m['solve_rate_hinted'])} / unhinted {_pct(m['solve_rate_unhinted'])}")
    return result


class _Heartbeat:
    """Progress lines with elapsed time; repeats the current stage every ``every`` seconds
    while a long step (a model generating) says nothing, so the user sees it is alive."""

    def __init__(self, say: Callable[[str], None], every: float = 30.0) -> None:
        self._say, self._every = say, every
        self._began = time.perf_counter()
        self._stage = "starting"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __call__(self, text: str) -> None:
        self._stage = text
        self._say(f"{text} | {time.perf_counter() - self._began:.1f}s")

    def _beat(self) -> None:
        while not self._done.wait(self._every):
            self._say(f"{self._stage} (still working) | {time.perf_counter() - self._began:.1f}s")

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"
