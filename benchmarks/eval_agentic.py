"""Throughput of the tool-use suites with the replay provider; prints ONE JSON object.

For every tool-use suite that is registered (BFCL v4, tau2-bench, ACEBench) and whose data
and upstream code are present:

1. the oracle plays the first ``--limit`` items (per the suite's own ``--limit`` rule),
   one trial each, into a scratch run directory;
2. the episodes it recorded are turned into a replay file (a run's samples replay it), and
   the same items are run again with ``replay:FILE`` - the timed run;
3. a second replay run under a time-weighted sampling profiler (SIGALRM every
   ``--interval-ms``, see :class:`StackSampler`) attributes wall time to upstream code (the
   ACEBench checkout, the ``tau2`` package, and the bfcl-eval worker, which runs BFCL's
   backends and checker in its own venv and is waited on through
   ``spade.eval.suites.bfcl_bridge``) or to our harness (agent loop, parsing, store, statistics);
   a stack counts as upstream when any of its frames is. Harness time is broken down by
   the innermost project module (``harness_hotspots``).

tau2 runs with ``user_model: gold`` (its user side replays the gold user actions), so no
user model is needed. ``items_per_s`` = scored episodes per second of the replay run;
``upstream_share`` + ``harness_share`` = 1. Baseline in the same run: the single-turn
harness on AIME 24 with the replay provider. Suites that cannot run are listed under
``unavailable`` with why.

    python benchmarks/eval_agentic.py [--limit N] [--suites bfcl_v4,tau2,acebench]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade.eval._runner import EvalConfig, run_eval  # noqa: E402
from spade.eval.data import resolve_data_dir  # noqa: E402
from spade.eval.inspect_export import export_run  # noqa: E402
from spade.eval.suites import SUITES  # noqa: E402

from spade.errors import UserError  # noqa: E402
from spade.textfile import read_jsonl  # noqa: E402

TOOL_USE = ("bfcl_v4", "tau2", "acebench")
#: Our process-side modules whose time is spent waiting on upstream code in a subprocess.
UPSTREAM_MODULES = ("spade.eval.suites.bfcl_bridge",)


def upstream_roots() -> list[str]:
    """Source directories of upstream code imported into this process."""
    roots: list[str] = []
    spec = importlib.util.find_spec("tau2")
    if spec is not None and spec.submodule_search_locations:
        roots.extend(str(Path(p).resolve()) for p in spec.submodule_search_locations)
    try:
        from spade.eval.suites._acebench_upstream import resolve_dir
    except ImportError:
        return roots
    roots.append(str(Path(resolve_dir()).resolve()))
    return roots


def _is_project(filename: str) -> bool:
    """Our own source (the checkout), not an installed library (a venv may live inside it)."""
    return filename.startswith(str(ROOT)) and not filename.startswith(sys.prefix)


class StackSampler:
    """Time-weighted stack sampling of the main thread on a SIGALRM interval timer.

    The handler runs in the main thread between bytecodes, so a signal that arrives during
    a long C call or a wait (a subprocess pipe, a lock) is handled right after it, in the
    frame that made the call; each sample is weighted by the wall time since the previous
    one, so a slice is never lost when the handler is late.
    """

    def __init__(self, is_upstream: Callable[[FrameType], bool], interval: float) -> None:
        self.is_upstream = is_upstream
        self.interval = interval
        self.samples = 0
        self.total_s = 0.0
        self.upstream_s = 0.0
        self.harness_s: dict[str, float] = {}
        self._last = 0.0

    def _handler(self, _signum: int, frame: FrameType | None) -> None:
        now = time.perf_counter()
        dt, self._last = now - self._last, now
        self.samples += 1
        self.total_s += dt
        ours = None
        while frame is not None:
            if self.is_upstream(frame):
                self.upstream_s += dt
                return
            if ours is None and _is_project(frame.f_code.co_filename):
                ours = str(frame.f_globals.get("__name__"))
            frame = frame.f_back
        key = ours or "(outside the project: stdlib, libraries)"
        self.harness_s[key] = self.harness_s.get(key, 0.0) + dt

    @contextmanager
    def running(self) -> Iterator[StackSampler]:
        old = signal.signal(signal.SIGALRM, self._handler)
        self._last = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
        try:
            yield self
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, old)

    @property
    def upstream_share(self) -> float | None:
        return self.upstream_s / self.total_s if self.total_s > 0 else None

    def hotspots(self, n: int = 5) -> dict[str, float]:
        """Our modules' shares of the sampled wall time (the harness time, broken down)."""
        total = self.total_s or 1.0
        top = sorted(self.harness_s.items(), key=lambda kv: -kv[1])[:n]
        return {m: round(t / total, 4) for m, t in top}


def classifier(roots: list[str]) -> Callable[[FrameType], bool]:
    cache: dict[str, bool] = {}

    def is_upstream(frame: FrameType) -> bool:
        name = frame.f_code.co_filename
        hit = cache.get(name)
        if hit is None:
            hit = any(name.startswith(r) for r in roots)
            cache[name] = hit
        return hit or frame.f_globals.get("__name__") in UPSTREAM_MODULES

    return is_upstream


#: Suite options for a self-contained run: tau2's user side replays the gold user actions.
SUITE_EXTRA = {"tau2": {"user_model": "gold"}}


def _run(model: str, suite: str, out: Path, data: Path, limit: int) -> tuple[dict[str, Any], float]:
    cfg = EvalConfig(
        model=model,
        suites=(suite,),
        out=out,
        data_dir=data,
        overrides={"limit": limit, "samples": 1},
        extra=SUITE_EXTRA.get(suite, {}),
        quiet=True,
    )
    began = time.perf_counter()
    results = run_eval(cfg)
    return results["suites"][suite], time.perf_counter() - began


def _replay_file(run: Path, suite: str, path: Path) -> int:
    lines = []
    for rec in read_jsonl(run / "samples" / f"{suite}.jsonl"):
        lines.append(
            json.dumps(
                {
                    "suite": suite,
                    "id": rec["id"],
                    "sample": rec["sample"],
                    "completion": rec["completion"],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def bench_suite(suite: str, data: Path, tmp: Path, limit: int, interval: float) -> dict[str, Any]:
    oracle, oracle_s = _run("oracle", suite, tmp / f"oracle-{suite}", data, limit)
    if oracle.get("status") != "ok":
        raise UserError(
            f"oracle run status {oracle.get('status')}: "
            f"{oracle.get('missing_file') or oracle.get('notes')}"
        )
    replay = tmp / f"{suite}.replay.jsonl"
    n_records = _replay_file(tmp / f"oracle-{suite}", suite, replay)
    entry, wall = _run(f"replay:{replay}", suite, tmp / f"replay-{suite}", data, limit)
    sampler = StackSampler(classifier(upstream_roots()), interval)
    with sampler.running():  # a second, profiled run: the timed one ran without the sampler
        _run(f"replay:{replay}", suite, tmp / f"profiled-{suite}", data, limit)
    t0 = time.perf_counter()
    export_run(tmp / f"replay-{suite}")
    export_s = time.perf_counter() - t0
    share = sampler.upstream_share
    return {
        "items": entry.get("n_items"),
        "episodes": n_records,
        "wall_s": round(wall, 3),
        "items_per_s": round(n_records / wall, 3) if wall > 0 else None,
        "score": entry.get("score"),
        "oracle_score": oracle.get("score"),
        "oracle_wall_s": round(oracle_s, 3),
        "upstream_share": None if share is None else round(share, 4),
        "harness_share": None if share is None else round(1 - share, 4),
        "profiler_samples": sampler.samples,
        "harness_hotspots": sampler.hotspots(),
        "inspect_export_s": round(export_s, 3),
    }


def baseline(data: Path, tmp: Path) -> dict[str, Any]:
    """The single-turn harness on all 30 AIME 24 items, replayed from an oracle run."""
    _run("oracle", "aime24", tmp / "oracle-aime24", data, 30)
    replay = tmp / "aime24.replay.jsonl"
    n = _replay_file(tmp / "oracle-aime24", "aime24", replay)
    entry, wall = _run(f"replay:{replay}", "aime24", tmp / "replay-aime24", data, 30)
    return {
        "suite": "aime24",
        "items": entry.get("n_items"),
        "wall_s": round(wall, 3),
        "items_per_s": round(n / wall, 3) if wall > 0 else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=5, help="items per suite (its --limit rule)")
    ap.add_argument("--suites", default=",".join(TOOL_USE), help="comma-separated suite ids")
    ap.add_argument("--interval-ms", type=float, default=2.0, help="profiler sampling interval")
    ap.add_argument("--data-dir", type=Path, help="benchmark data (default: as spade eval)")
    args = ap.parse_args()
    if args.limit < 1 or args.interval_ms <= 0:
        print("eval_agentic: --limit must be >= 1 and --interval-ms > 0", file=sys.stderr)
        return 2
    data = resolve_data_dir(args.data_dir)
    wanted = [s.strip() for s in args.suites.split(",") if s.strip()]
    registered = set(SUITES.names())
    out: dict[str, Any] = {
        "limit": args.limit,
        "trials": 1,
        "provider": "replay",
        "suite_options": SUITE_EXTRA,
        "suites": {},
        "unavailable": {},
    }
    with tempfile.TemporaryDirectory(prefix="spade-bench-agentic-") as tmp_name:
        tmp = Path(tmp_name)
        out["baseline_single_turn"] = baseline(data, tmp)
        for suite in wanted:
            if suite not in registered:
                out["unavailable"][suite] = "suite not registered in eval.suites"
                continue
            try:
                out["suites"][suite] = bench_suite(
                    suite, data, tmp, args.limit, args.interval_ms / 1000
                )
            except UserError as exc:
                out["unavailable"][suite] = str(exc)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
