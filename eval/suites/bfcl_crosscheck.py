"""Cross-check: our BFCL verdicts against ``bfcl evaluate`` run on the same model outputs.

``python -m eval.suites.bfcl_crosscheck RUN_DIR`` writes each scored item's result (the
``bfcl_result`` bfcl-eval's function-calling handler would have stored) into result files
of the model whose handler reads it (native calls: the OpenAI FC model; text: the run's
``tool_format`` model, e.g. Qwen3 FC), runs bfcl-eval's own evaluation entry point on
them in its venv (``bfcl evaluate --partial-eval``), reads back its score files (header
accuracy plus every failed entry) and compares item by item. Sample 0 of each item is checked.

bfcl-eval's multi-turn evaluation runs the recorded calls by ``eval``; records whose calls
use names that were not offered as tools, or argument names that are not identifiers,
are therefore not sent to it (they are listed as ``withheld``).

Where one handler reads every record, the leaderboard tables ``bfcl evaluate`` writes
(``data_overall.csv`` and the group tables, percentages to two decimals) are compared with
the run's recorded ``leaderboard`` (``leaderboard_differ``: the cells that disagree).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from spade.eval.suites.bfcl import MULTI_TURN, TOOL_FORMATS
from spade.eval.suites.bfcl_venv import ensure_python

from spade.errors import UserError
from spade.textfile import read_jsonl

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _reader(rec: Mapping[str, Any]) -> str:
    """The bfcl-eval model whose handler reads this record's result."""
    details = rec.get("details") or {}
    result = details.get("bfcl_result")
    if details.get("category") in MULTI_TURN:
        native = any(isinstance(s, list) for turn in result or [] for s in turn)
    else:
        native = isinstance(result, list)
    fmt = str(details.get("tool_format") or "openai_fc")
    return TOOL_FORMATS["openai_fc" if native or fmt == "openai_fc" else fmt]


def _safe(rec: Mapping[str, Any]) -> bool:
    details = rec.get("details") or {}
    offered = {t.get("function", t)["name"]
               for t in details.get("transcript", {}).get("tools", [])}
    for turn in details.get("transcript", {}).get("turns", []):
        offered |= set(turn.get("added_tools", []))
        for step in turn.get("steps", []):
            for call in step.get("calls", []):
                if call["name"] not in offered or not all(_IDENT.match(k)
                                                          for k in call["arguments"]):
                    return False
    return True


def upstream_verdicts(
    records: Iterable[Mapping[str, Any]], workdir: Path, python: Path | None = None
) -> tuple[dict[str, bool], dict[str, Any]]:
    """``{item id: valid}`` and per-category headers from bfcl-eval's own evaluation."""
    python = python or ensure_python()
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        by_model.setdefault(_reader(rec), []).append(rec)
    verdicts: dict[str, bool] = {}
    headers: dict[str, Any] = {}
    for k, (model, recs) in enumerate(sorted(by_model.items())):
        got, head = _evaluate(model, recs, workdir / f"m{k}", python)
        verdicts.update(got)
        headers.update({f"{model}/{cat}": h for cat, h in head.items()})
        headers[f"{model}/leaderboard"] = _board(workdir / f"m{k}" / "score")
    return verdicts, headers


def _board(scores: Path) -> dict[str, dict[str, str]]:
    """The leaderboard CSVs ``bfcl evaluate`` wrote: table -> column -> cell."""
    out = {}
    for path in sorted(scores.glob("data_*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        if len(rows) == 1:
            out[path.stem] = dict(rows[0])
    return out


def compare_boards(ours: Mapping[str, Mapping[str, Any]],
                   theirs: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Cells of our recorded leaderboard that differ from ``bfcl evaluate``'s CSVs (their
    ``12.34%`` against our fraction, to the CSV's rounding; ``N/A`` against N/A)."""
    differ = []
    for table, row in ours.items():
        for column, value in row.items():
            cell = theirs.get(table, {}).get(column)
            if cell is None or column == "Model":
                continue
            if isinstance(value, int | float) and cell.endswith("%"):
                same = abs(round(float(value) * 100, 2) - float(cell[:-1])) < 1e-9
            else:
                same = str(value) == cell
            if not same:
                differ.append(f"{table}/{column}: ours {value!r}, bfcl evaluate {cell!r}")
    return differ


def _evaluate(model: str, records: Iterable[Mapping[str, Any]], workdir: Path, python: Path
              ) -> tuple[dict[str, bool], dict[str, Any]]:
    """``bfcl evaluate --model MODEL`` over result files holding ``records``."""
    results = workdir / "result" / model.replace("/", "_")
    scores = workdir / "score"
    results.mkdir(parents=True, exist_ok=True)
    by_cat: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        by_cat.setdefault(rec["details"]["category"], []).append(rec)
    for cat, recs in by_cat.items():
        lines = [json.dumps({"id": r["id"], "result": r["details"]["bfcl_result"]})
                 for r in recs]
        (results / f"BFCL_v4_{cat}_result.json").write_text("\n".join(lines) + "\n")
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update(BFCL_PROJECT_ROOT=str(workdir), OPENAI_API_KEY="unused-offline",
               HF_HUB_OFFLINE="1")
    cmd = [str(python), "-m", "bfcl_eval", "evaluate", "--model", model,
           "--test-category", ",".join(by_cat), "--result-dir", str(workdir / "result"),
           "--score-dir", str(scores), "--partial-eval"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir,
                          timeout=3600)
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["?"]
        raise UserError(f"bfcl evaluate failed: {tail[0]}")
    verdicts: dict[str, bool] = {}
    headers: dict[str, Any] = {}
    for cat, recs in by_cat.items():
        found = list(scores.rglob(f"BFCL_v4_{cat}_score.json"))
        if len(found) != 1:
            raise UserError(f"bfcl evaluate wrote {len(found)} score files for {cat}")
        rows = read_jsonl(found[0])
        headers[cat] = rows[0]
        failed = {str(r["id"]) for r in rows[1:]}
        verdicts.update({str(r["id"]): str(r["id"]) not in failed for r in recs})
    return verdicts, headers


def crosscheck(run_dir: Path, python: Path | None = None) -> dict[str, Any]:
    path = run_dir / "samples" / "bfcl_v4.jsonl"
    if not path.is_file():
        raise UserError(f"{path} not found: not a bfcl_v4 run")
    records = read_jsonl(path)
    first = [r for r in records if r.get("sample") == 0]
    withheld = [r["id"] for r in first
                if r["details"]["category"] in MULTI_TURN and not _safe(r)]
    sent = [r for r in first if r["id"] not in set(withheld)]
    with tempfile.TemporaryDirectory(prefix="spade-bfcl-xcheck-") as tmp:
        theirs, headers = upstream_verdicts(sent, Path(tmp), python)
    ours = {str(r["id"]): bool(r["details"]["valid"]) for r in sent}
    differ = sorted(k for k in ours if ours[k] != theirs.get(k))
    report = {"items": len(ours), "agree": len(ours) - len(differ), "differ": differ,
              "withheld": withheld, "upstream_headers": headers}
    boards = [k for k in headers if k.endswith("/leaderboard")]
    results = run_dir / "results.json"
    if len(boards) == 1 and not withheld and results.is_file():
        entry = json.loads(results.read_text()).get("suites", {}).get("bfcl_v4", {})
        recorded = (entry.get("leaderboard") or {}).get("tables")
        if recorded:
            report["leaderboard_differ"] = compare_boards(recorded, headers[boards[0]])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    try:
        report = crosscheck(args.run_dir)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 0 if not report["differ"] and not report.get("leaderboard_differ") else 1


if __name__ == "__main__":
    sys.exit(main())
