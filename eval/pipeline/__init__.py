"""The pipeline users run: train every method of an experiment, score every checkpoint,
write paper-style tables and learning curves (``spade experiment``, ``nox -s train eval``).

See ``spade.eval.pipeline._experiment`` for the experiment file and
``spade.eval.pipeline._steps`` for the layout of runs and results.
"""

from __future__ import annotations

from spade.eval.pipeline._experiment import (
    EvalProtocol,
    Experiment,
    GateSettings,
    HeldoutSlice,
    Method,
    load_experiment,
)
from spade.eval.pipeline._steps import (
    CheckpointEval,
    eval_all,
    scored_runs,
    train_all,
    write_tables,
)

__all__ = [
    "CheckpointEval",
    "EvalProtocol",
    "Experiment",
    "GateSettings",
    "HeldoutSlice",
    "Method",
    "eval_all",
    "load_experiment",
    "scored_runs",
    "train_all",
    "write_tables",
]
