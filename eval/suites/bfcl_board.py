"""bfcl-eval's own leaderboard aggregation of per-category accuracies; runs inside the
bfcl-eval venv (loaded by ``bfcl_worker.py`` from its own folder, never imported by the
project)."""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any


def leaderboard(categories: dict[str, dict[str, Any]], model: str
                ) -> dict[str, dict[str, Any]]:
    """bfcl-eval's own leaderboard aggregation (``generate_leaderboard_csv``) of
    per-category ``{"accuracy", "total_count"}``: every table it writes, as the rows it
    writes them from (numbers unrounded, ``"N/A"`` where it shows N/A)."""
    from bfcl_eval.eval_checker import eval_runner_helper as helper

    tables: dict[str, dict[str, Any]] = {}
    write = helper.write_score_csv_file

    def capture(data: list[list[Any]], file_path: Any, header: list[str],
                *args: Any, **kwargs: Any) -> None:
        tables[Path(file_path).stem] = dict(zip(header, copy.deepcopy(data[0]),
                                                strict=True))
        write(data, file_path, header, *args, **kwargs)

    model = model.replace("/", "_")
    table = {model: {c: {"accuracy": float(v["accuracy"]),
                         "total_count": int(v["total_count"])}
                     for c, v in categories.items()}}
    os.environ.pop("WANDB_BFCL_PROJECT", None)
    helper.write_score_csv_file = capture
    try:
        with tempfile.TemporaryDirectory(prefix="spade-bfcl-board-") as tmp:
            helper.generate_leaderboard_csv(table, Path(tmp))
    finally:
        helper.write_score_csv_file = write
    return tables
