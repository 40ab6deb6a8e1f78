"""The agent's environment pool: which environments agent tickets play, per generation.

Generation 0 is the bundled example environments of the setting (or the ones the recipe
names). Each regeneration step's designer tickets produce the next generation from their
VALID environments; it replaces the current pool when the step ends. A regeneration that
yields no valid environment keeps the current pool (counted as ``pool_kept``). So the
agent trains on each generation for ``regenerate_every`` steps, starting the step after
it was designed. With ``pool.source: fixed`` generation 0 never changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from spade.envs.examples import list_examples
from spade.errors import UserError
from spade.store import EnvRecord

__all__ = ["EnvPool", "PoolEnv", "initial_pool"]


@dataclass(frozen=True)
class PoolEnv:
    """One playable environment: its id, source, privileged hint and generation."""

    env_id: str
    source: str
    hint: str
    generation: int
    skill: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EnvPool:
    """The current generation of environments (never empty)."""

    generation: int
    envs: tuple[PoolEnv, ...]

    def __post_init__(self) -> None:
        if not self.envs:
            raise ValueError("an environment pool needs at least one environment")

    def pick(self, slot: int) -> PoolEnv:
        return self.envs[slot % len(self.envs)]

    def advance(self, new: Sequence[PoolEnv]) -> tuple[EnvPool, bool]:
        """The next generation from ``new`` (kept as is when ``new`` is empty)."""
        if not new:
            return self, False
        return EnvPool(self.generation + 1, tuple(new)), True

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "envs": [e.to_json() for e in self.envs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EnvPool:
        return cls(int(data["generation"]), tuple(PoolEnv(**e) for e in data["envs"]))


def initial_pool(setting: str, names: Sequence[str] = ()) -> EnvPool:
    """Generation 0: the bundled examples of ``setting``, or exactly ``names`` (bundled
    examples or the trainer's own check environments in ``train.envs``)."""
    from train.envs import LEARNING_ENVS, learning_env_source

    kind = "game" if setting == "games" else "tool"
    examples = {e.name: e for e in list_examples()}
    if not names:
        return EnvPool(0, tuple(PoolEnv(f"g0000-{e.name}", e.source(), e.hint, 0, e.skill)
                                for e in examples.values() if e.kind == kind))
    unknown = [n for n in names if n not in examples and n not in LEARNING_ENVS]
    if unknown:
        raise UserError(f"pool.examples: unknown environments {unknown}; known: "
                        f"{sorted([*examples, *LEARNING_ENVS])}")
    envs = []
    for n in names:
        if n in examples:
            e = examples[n]
            envs.append(PoolEnv(f"g0000-{n}", e.source(), e.hint, 0, e.skill))
        else:
            envs.append(PoolEnv(f"g0000-{n}", learning_env_source(n), "", 0, None))
    return EnvPool(0, tuple(envs))


def pool_records(pool: EnvPool, step: int) -> list[EnvRecord]:
    """Run-store rows for generation-0 environments (designed ones are stored as designed)."""
    return [EnvRecord(env_id=e.env_id, cycle=step, source=e.source, valid=True, hint=e.hint,
                      skill=e.skill, extra={"origin": "bundled example", "generation": 0})
            for e in pool.envs]
