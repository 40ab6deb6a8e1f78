"""The regret-annotated memory of validated environments.

    memory = Memory(MemoryConfig(capacity=200))
    memory.add(MemoryEntry(env_id=..., source=code, hint=..., skill="logic", doc_id=...,
                           solve_rate_hinted=0.75, solve_rate_unhinted=0.25, regret=0.5,
                           cycle=3, summary=summarize_env(code, first_observation=obs)))
    shown = memory.sample(k=2, rng=random.Random(seed))   # positives + negatives
    state = memory.to_dict()                              # persisted by spade.store
    memory = Memory.from_dict(state)
"""

from __future__ import annotations

from spade.memory._entry import MemoryEntry, Standing
from spade.memory._memory import Memory, MemoryConfig, MemorySample, Negative
from spade.memory._summary import summarize_env

__all__ = [
    "Memory",
    "MemoryConfig",
    "MemoryEntry",
    "MemorySample",
    "Negative",
    "Standing",
    "summarize_env",
]
