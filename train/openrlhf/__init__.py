"""The cluster backend: SPADE self-play on OpenRLHF (Ray + vLLM + DeepSpeed).

OpenRLHF owns the engines, the update and its own checkpoints; SPADE plugs in as an
``AgentExecutor`` (``spade.train.openrlhf.agent``) that executes the same role-tagged tickets,
with the same rollout core, as the TRL backend (``spade.train._rollout``), against the vLLM
engine it is handed. Pieces:

- ``_flags``: the ``train_ppo_ray`` command of a recipe, keyed by OpenRLHF version, and the
  recipe fields this backend refuses;
- ``_cli`` / ``_probe``: the installed version, and a check of a command against the
  installed CLI's own parser (no GPU needed);
- ``_shared``: the run state every rollout actor shares (SQLite WAL + file locks);
- ``_executor``: the executor logic (``TicketExecutor``), importable without OpenRLHF;
- ``_launch``: run directory files, dry run, local launch, publishing OpenRLHF's HF
  exports as ``RUN_DIR/checkpoints/step-N`` (moved, rotated as on TRL);
- ``_job``: a run prepared here for ``ray job submit`` and its entrypoint on the cluster;
- ``_memory``: per-GPU memory and disk of a recipe (shown by the dry run);
- ``_preflight``: the sandbox on every node and the run directory's filesystem, checked
  before OpenRLHF starts.

See docs/cluster.md for installing, launching and resuming.
"""

from __future__ import annotations

from spade.train.openrlhf._executor import SlotLabel, TicketExecutor, openrlhf_sample
from spade.train.openrlhf._flags import (
    SUPPORTED,
    Layout,
    check_recipe,
    command,
    placement,
    unsupported,
)
from spade.train.openrlhf._job import prepare_job
from spade.train.openrlhf._launch import dry_run_report, launch, make_plan, publish_ready, read_run
from spade.train.openrlhf._memory import disk_estimate, memory_estimate

__all__ = [
    "SUPPORTED",
    "Layout",
    "SlotLabel",
    "TicketExecutor",
    "check_recipe",
    "command",
    "disk_estimate",
    "dry_run_report",
    "launch",
    "make_plan",
    "memory_estimate",
    "openrlhf_sample",
    "placement",
    "prepare_job",
    "publish_ready",
    "read_run",
    "unsupported",
]
