"""The self-play cycle: one typed call a trainer can make from its rollout hook.

    roles = build_roles(config)                      # policies per role (or your own)
    ctx = CycleContext(config, roles, sandbox, make_embedder("auto"))
    state = fresh_state(config)                      # memory, corpus cursor, run RNG
    result = run_cycle(ctx, state, cycle)            # CycleResult: designs, plays, metrics
    # result.designs[i].prompt_ids / .generation.token_ids / .advantage  -> designer loss
    # result.plays[j].trajectory.token_ids / .loss_mask / .advantage    -> agent loss

``run_selfplay`` is the multi-cycle loop behind ``spade selfplay`` (run store, resume,
metrics.jsonl, exported environment pool); ``scripted_roles`` the model-free test double.
"""

from __future__ import annotations

from spade.cycle._agent_play import AgentPlays, PlayedGroup, play_groups
from spade.cycle._cycle import CycleContext, run_cycle
from spade.cycle._export import ExportedEnv, export_pool, load_pool
from spade.cycle._metrics import without_timing
from spade.cycle._run import (
    METRICS,
    RunSummary,
    check_run_dir,
    fresh_state,
    run_selfplay,
    store_identity,
)
from spade.cycle._scripted import (
    BREAKS,
    ScriptedAgent,
    ScriptedDesigner,
    ScriptedRoles,
    break_source,
    design_reply,
    scripted_roles,
)
from spade.cycle._setup import Roles, build_roles
from spade.cycle._types import (
    PARSE,
    PLAY_FAULT,
    VALID,
    AgentSample,
    CycleResult,
    CycleState,
    DesignSample,
)
from spade.seeds import derive_seed

__all__ = [
    "BREAKS",
    "METRICS",
    "PARSE",
    "PLAY_FAULT",
    "VALID",
    "AgentPlays",
    "AgentSample",
    "CycleContext",
    "CycleResult",
    "CycleState",
    "DesignSample",
    "ExportedEnv",
    "PlayedGroup",
    "Roles",
    "RunSummary",
    "ScriptedAgent",
    "ScriptedDesigner",
    "ScriptedRoles",
    "break_source",
    "build_roles",
    "check_run_dir",
    "derive_seed",
    "design_reply",
    "export_pool",
    "fresh_state",
    "load_pool",
    "play_groups",
    "run_cycle",
    "run_selfplay",
    "scripted_roles",
    "store_identity",
    "without_timing",
]
