"""The cluster backend: SPADE self-play on OpenRLHF (Ray + vLLM + DeepSpeed).

OpenRLHF owns the engines, the update and its own checkpoints; SPADE plugs in as an
``AgentExecutor`` (``train.openrlhf.agent``) that executes the same role-tagged tickets,
with the same rollout core, as the TRL backend (``train._rollout``), against the vLLM
engine it is handed. Pieces:

- ``_flags``: the ``train_ppo_ray`` command of a recipe, keyed by OpenRLHF version, and the
  recipe fields this backend refuses;
- ``_cli`` / ``_probe``: the installed version, and a check of a command against the
  installed CLI's own parser (no GPU needed);
- ``_shared``: the run state every rollout actor shares (SQLite WAL + file locks);
- ``_executor``: the executor logic (``TicketExecutor``), importable without OpenRLHF;
- ``_launch``: run directory files, dry run, local launch, ``ray job submit``, publishing
  OpenRLHF's HF exports as ``RUN_DIR/checkpoints/step-N``.

See docs/cluster.md for installing, launching and resuming.
"""

from __future__ import annotations

from train.openrlhf._executor import SlotLabel, TicketExecutor, openrlhf_sample
from train.openrlhf._flags import (
    SUPPORTED,
    Layout,
    check_recipe,
    command,
    placement,
    unsupported,
)
from train.openrlhf._launch import dry_run_report, launch, make_plan, publish_ready, read_run

__all__ = [
    "SUPPORTED",
    "Layout",
    "SlotLabel",
    "TicketExecutor",
    "check_recipe",
    "command",
    "dry_run_report",
    "launch",
    "make_plan",
    "openrlhf_sample",
    "placement",
    "publish_ready",
    "read_run",
    "unsupported",
]
