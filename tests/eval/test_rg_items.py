"""Reasoning Gym items do not depend on the process's string-hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _evalrun import ROOT, data_dir

pytest.importorskip("reasoning_gym")

#: generators whose items followed PYTHONHASHSEED (set iteration while drawing); the
#: first four are fast, knight_swap and intermediate_integration take minutes for 50 items
FAST = ["isomorphic_strings", "polynomial_multiplication", "ransom_note", "word_ladder"]
SLOW = [*FAST, "intermediate_integration", "knight_swap"]

SUITE_ITEMS = """
import hashlib, json, sys
from pathlib import Path
from spade.eval._protocol import build
from spade.eval.data import DataDir
from spade.eval.suites import SUITES
limit = None if sys.argv[2] == "none" else int(sys.argv[2])
suite = SUITES.get("reasoning_gym")(build("reasoning_gym", {"limit": limit, "samples": 1}), 0)
loaded = suite.load(DataDir(Path(sys.argv[1])))
print(json.dumps({i.key: hashlib.sha256(json.dumps(
    [i.data["entry"]["question"], str(i.data["entry"]["answer"])]).encode()).hexdigest()
    for i in loaded.items}))
"""

IN_PROCESS = """
import hashlib, json, sys
from pathlib import Path
from spade.eval.suites._rg_generate import _generate_here
limit = int(sys.argv[2])
rows = _generate_here(Path(sys.argv[1]) / "reasoning_gym" / "hard_split_params.yaml", limit, None)
print(json.dumps({f"{g.dataset}/{i}": hashlib.sha256(json.dumps(
    [e["question"], str(e["answer"])]).encode()).hexdigest() for g in rows for i, e in g.entries}))
"""


def _split(tmp: Path, names: list[str] | None) -> Path:
    cfg = yaml.safe_load((data_dir() / "reasoning_gym" / "hard_split_params.yaml").read_text())
    if names is not None:
        for cat in cfg["categories"]:
            cat["datasets"] = [d for d in cat["datasets"] if d["dataset"] in names]
        cfg["categories"] = [c for c in cfg["categories"] if c["datasets"]]
    (tmp / "reasoning_gym").mkdir(parents=True)
    (tmp / "reasoning_gym" / "hard_split_params.yaml").write_text(yaml.safe_dump(cfg))
    mapping = data_dir() / "reasoning_gym" / "paper_categories.yaml"
    (tmp / "reasoning_gym" / "paper_categories.yaml").write_text(mapping.read_text())
    return tmp


def _items(code: str, data: Path, limit: str, hash_seed: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code, str(data), limit], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=3600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_items_are_the_same_under_any_hash_seed(tmp_path: Path) -> None:
    data = _split(tmp_path, FAST)
    raw = [_items(IN_PROCESS, data, "5", h) for h in ("1", "2")]
    assert raw[0] != raw[1]  # generated in-process these generators follow the hash seed
    first, second = (_items(SUITE_ITEMS, data, "5", h) for h in ("1", "2"))
    assert len(first) == 20 and first == second


@pytest.mark.slow  # the whole split twice: tens of minutes on two shared cores
def test_the_whole_split_is_the_same_under_any_hash_seed(tmp_path: Path) -> None:
    data = _split(tmp_path, None)
    first, second = (_items(SUITE_ITEMS, data, "none", h) for h in ("1", "2"))
    assert len(first) > 4900 and first == second
    assert {k.split("/")[0] for k in first} >= set(SLOW)
