"""Reasoning Gym item generation in a child process with a fixed ``PYTHONHASHSEED``.

Several ``reasoning-gym`` generators iterate over sets of strings (word lists, letters,
symbols) while drawing from their seeded RNG, so the items they make depend on the
process's string-hash randomisation: two processes made different items from the same
seed, a killed run could not resume and two runs paired different problems. Generating
in a child whose ``PYTHONHASHSEED`` is fixed (``HASH_SEED``) makes the items a function of
the split file and the package version only; the child also seeds the global ``random``
and numpy generators per item, which a few generators' sample programs draw from. The
child returns the entries by pickle
through a temporary file (its stdout carries the generators' progress dots).

Run as ``python -m eval.suites._rg_generate SPLIT.yaml LIMIT OUT.pickle [DATASET,...]``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.errors import UserError

HASH_SEED = "0"


@dataclass(frozen=True)
class Generated:
    """One dataset's generated entries (index -> entry) and the indices that failed."""

    category: str
    dataset: str
    seed: int
    size: int
    params: dict[str, Any]
    entries: list[tuple[int, dict[str, Any]]]
    failures: list[dict[str, Any]]


def _specs(path: Path) -> list[tuple[str, str, int, int, dict[str, Any]]]:
    import yaml

    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    try:
        seed0, size0 = int(cfg["default_seed"]), int(cfg["default_size"])
        return [
            (cat["category"], spec["dataset"], int(spec.get("seed", seed0)),
             int(spec.get("size", size0)), dict(spec.get("params") or {}))
            for cat in cfg["categories"] for spec in cat["datasets"]
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{path}: not a Reasoning Gym split file ({exc})") from exc


#: The wall clock generation sees (a fixed instant; each reading advances it by
#: ``_TICK_S``, so a generator that waits on the clock still finishes).
_EPOCH_S = 1_767_225_600.0  # 2026-01-01T00:00:00Z
_TICK_S = 1e-3


def _fix_clock(value: int) -> None:
    """Some sample programs (codeio) put ``time.time()`` into an item's input; in this
    generation-only child the clock is a deterministic counter that starts from a per-item
    instant, so those items repeat across processes too."""
    import itertools
    import time

    ticks = itertools.count()
    start = _EPOCH_S + (value % 86_400)

    def now() -> float:
        return start + next(ticks) * _TICK_S

    time.time = now
    time.time_ns = lambda: int(now() * 1e9)


def _seed_global_rngs(seed: int, name: str, idx: int) -> None:
    """Some generators (codeio's sample programs) draw from the global ``random`` or numpy
    generator, or read the wall clock; seed both and fix the clock per item so those items
    are reproducible too."""
    import random

    from spade.seeds import derive_seed

    value = derive_seed(seed, f"reasoning_gym/{name}", idx, bits=32)
    random.seed(value)
    _fix_clock(value)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(value)


def _generate_here(path: Path, limit: int | None, only: set[str] | None) -> list[Generated]:
    import reasoning_gym

    out = []
    for category, name, seed, size, params in _specs(path):
        if only is not None and name not in only:
            continue
        ds = reasoning_gym.create_dataset(name, seed=seed, size=size, **params)
        n = len(ds) if limit is None else min(limit, len(ds))
        entries, failures = [], []
        for idx in range(n):
            _seed_global_rngs(seed, name, idx)
            try:
                entries.append((idx, ds[idx]))
            except Exception as exc:  # the package's own generator gave up
                failures.append({"dataset": name, "index": idx, "error": str(exc)[:200]})
        out.append(Generated(category, name, seed, size, params, entries, failures))
    return out


def generate(path: Path, limit: int | None, only: set[str] | None = None) -> list[Generated]:
    """Every dataset of the split file (or ``only`` those), generated with ``HASH_SEED``."""
    _specs(path)  # a malformed file fails here with one line, not in the child
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="spade-rg-") as tmp:
        target = Path(tmp) / "items.pickle"
        cmd = [sys.executable, "-m", "spade.eval.suites._rg_generate", str(path),
               "none" if limit is None else str(limit), str(target)]
        if only is not None:
            cmd.append(",".join(sorted(only)))
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not target.is_file():
            lines = [x for x in (done.stderr or "").strip().splitlines() if x.strip(". ")]
            last = lines[-1] if lines else f"exit status {done.returncode}"
            raise UserError(f"{path}: Reasoning Gym generation failed: {last[:300]}")
        with target.open("rb") as fh:
            rows: list[dict[str, Any]] = pickle.load(fh)
    return [Generated(**row) for row in rows]


def main(argv: list[str]) -> int:
    path, limit_text, target = Path(argv[0]), argv[1], Path(argv[2])
    only = set(argv[3].split(",")) if len(argv) > 3 and argv[3] else None
    limit = None if limit_text == "none" else int(limit_text)
    with contextlib.redirect_stdout(sys.stderr):  # some generators print progress dots
        result = _generate_here(path, limit, only)
    with target.open("wb") as fh:  # plain dicts: this module is __main__ in the child
        pickle.dump([vars(g) for g in result], fh, protocol=pickle.HIGHEST_PROTOCOL)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UserError as exc:
        print(str(exc), file=sys.stderr)
        sys.exit(2)
