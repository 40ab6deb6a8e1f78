"""The SPADE trainer: GRPO self-play on shared weights, backend-independent core.

Building blocks (every backend uses these; none imports an ML framework at import time)::

    recipe = load_recipe("train/recipes/cpu_demo.yaml")   # typed, extends:, unknown keys refused
    tickets = plan_step(recipe, step)                     # role-tagged, one GRPO group each
    store = TrainStore.open(run_dir, recipe, resume=...)  # run state in the run store
    state, next_step = store.load()                       # memory, corpus cursor, RNG, pool
    rollout = Rollout(recipe.selfplay, generator, sandbox, embedder)
    results = rollout.execute(state, tickets)             # TicketResult per ticket
    # results[i].samples: Sample(prompt_ids, completion_ids, env_mask, logprobs,
    #                            reward, advantage)  -> the loss of one GRPO group
    changed = finish_step(state, results)                 # a regeneration becomes the pool
    store.commit(step, state, results, metrics, first_pool)

``Generator`` is the token-in/token-out ``spade.policy.TokenPolicy``: the TRL backend wraps
the trainer's live model in ``spade.policy.HFPolicy``; an async engine (OpenRLHF's vLLM
``await llm_engine.generate(prompt_token_ids, sampling_params)``) fits through
``AsyncEngineGenerator``, which runs the (synchronous) rollout in a worker thread and
forwards each request to the engine's event loop.

A designer ticket = one designer prompt, ``group_size`` designs; its reward is computed as
it runs, from the matched hinted/unhinted plays of each valid design by the current
weights (see ``spade.train._rollout``). An agent ticket = ``group_size`` unhinted plays of one
pool environment. Checkpoints: ``RUN_DIR/checkpoints/step-<N>/`` (``spade.train._checkpoint``).
Backends: ``spade.train.trl`` (one machine, CPU default); ``spade.train.openrlhf`` (clusters).
"""

from __future__ import annotations

from spade.train._checkpoint import checkpoint_steps, step_dir
from spade.train._pool import EnvPool, PoolEnv, initial_pool
from spade.train._rollout import (
    Generator,
    Rollout,
    RolloutState,
    Sample,
    TicketResult,
    finish_step,
)
from spade.train._tickets import Role, Ticket, plan_step, plan_steps
from spade.train.recipe import TrainRecipe, load_recipe

__all__ = [
    "EnvPool",
    "Generator",
    "PoolEnv",
    "Role",
    "Rollout",
    "RolloutState",
    "Sample",
    "Ticket",
    "TicketResult",
    "TrainRecipe",
    "checkpoint_steps",
    "finish_step",
    "initial_pool",
    "load_recipe",
    "plan_step",
    "plan_steps",
    "step_dir",
]
