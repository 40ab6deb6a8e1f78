"""The agent's environment pool: which environments agent tickets play, per generation.

Generation 0 is the bundled example environments of the setting (or the ones the recipe
names). Each regeneration step's designer tickets produce the next generation from their
VALID environments; it replaces the current pool when the step ends. A regeneration that
yields no valid environment keeps the current pool (counted as ``pool_kept``). So the
agent trains on each generation for ``regenerate_every`` steps, starting the step after
it was designed. With ``pool.source: fixed`` generation 0 never changes.

Every environment says where it came from: ``origin`` ``"starter"`` (a bundled reference
environment, as in generation 0) or ``"designed"`` (a valid design of this run). While the
designer produces too few valid environments, ``pool.min_designed`` tops a generation up:
a regeneration with at least one but fewer than ``min_designed`` valid designs becomes
those designs plus starter environments (taken in turn, a different start each generation)
until the generation holds ``min_designed`` environments or the starters run out. ``0``
(the default) never tops up. Starters keep their generation-0 ids and ``generation`` 0.
(Pools saved before this name say ``"seed"``; they read as ``"starter"``.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from spade.envs.examples import list_examples
from spade.errors import UserError
from spade.memory import MemoryEntry
from spade.store import EnvRecord

__all__ = ["EnvPool", "Origin", "PoolEnv", "initial_pool"]

#: Where a pool environment came from (metrics count plays and pool entries by it):
#: ``designed`` by this run's designer, or ``starter``: anything else (bundled examples,
#: the trainer's check games, a fixed-environment baseline's problems).
Origin = Literal["starter", "designed"]
ORIGINS: tuple[Origin, ...] = ("designed", "starter")
#: The origin a starter environment had in pools saved before it was named so.
_OLD_STARTER = "seed"


@dataclass(frozen=True)
class PoolEnv:
    """One playable environment: its id, source, privileged hint, generation and origin."""

    env_id: str
    source: str
    hint: str
    generation: int
    skill: str | None = None
    origin: Origin = "starter"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PoolEnv:
        """A saved entry; one saved before origins existed is a starter iff it has a
        generation-0 id."""
        data = dict(data)
        if "origin" not in data:
            data["origin"] = ("starter" if str(data["env_id"]).startswith("g0000-")
                              else "designed")
        if data["origin"] == _OLD_STARTER:
            data["origin"] = "starter"
        if data["origin"] not in ORIGINS:
            raise ValueError(f"unknown pool origin {data['origin']!r}")
        return cls(**data)


@dataclass(frozen=True)
class EnvPool:
    """The current generation of environments (never empty), and the top-up rule: the
    starter environments and the generation size ``min_designed`` they fill up to."""

    generation: int
    envs: tuple[PoolEnv, ...]
    starters: tuple[PoolEnv, ...] = ()
    min_designed: int = 0

    def __post_init__(self) -> None:
        if not self.envs:
            raise ValueError("an environment pool needs at least one environment")

    def pick(self, slot: int) -> PoolEnv:
        return self.envs[slot % len(self.envs)]

    def advance(self, new: Sequence[PoolEnv]) -> tuple[EnvPool, bool]:
        """The next generation from ``new``, topped up with starters while ``new`` is
        smaller than ``min_designed`` (kept as is when ``new`` is empty)."""
        if not new:
            return self, False
        generation = self.generation + 1
        envs = list(new)
        missing = min(self.min_designed - len(envs), len(self.starters))
        for k in range(max(0, missing)):
            envs.append(self.starters[(generation + k) % len(self.starters)])
        return EnvPool(generation, tuple(envs), self.starters, self.min_designed), True

    def by_origin(self) -> dict[str, int]:
        """How many environments of this generation are designed and how many starters."""
        return {o: sum(1 for e in self.envs if e.origin == o) for o in ORIGINS}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"generation": self.generation,
                                "envs": [e.to_json() for e in self.envs]}
        if self.min_designed:
            data["starters"] = [e.to_json() for e in self.starters]
            data["min_designed"] = self.min_designed
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EnvPool:
        return cls(int(data["generation"]),
                   tuple(PoolEnv.from_json(e) for e in data["envs"]),
                   tuple(PoolEnv.from_json(e) for e in
                         data.get("starters", data.get(_OLD_STARTER + "s", ()))),
                   int(data.get("min_designed", 0)))


def initial_pool(setting: str, names: Sequence[str] = (), *, min_designed: int = 0) -> EnvPool:
    """Generation 0: the bundled examples of ``setting``, or exactly ``names`` (bundled
    examples, starter-family modules ``<family>/<index>`` or the trainer's own check
    environments in ``spade.train.envs``); with
    ``min_designed`` > 0 they are also the starters that top up thin generations."""
    first = _starter_envs(setting, names)
    return EnvPool(0, first, first if min_designed else (), min_designed)


def _starter_envs(setting: str, names: Sequence[str]) -> tuple[PoolEnv, ...]:
    from spade.train.envs import LEARNING_ENVS, learning_env_source

    kind = "game" if setting == "games" else "tool"
    examples = {e.name: e for e in list_examples()}
    if not names:
        return tuple(PoolEnv(f"g0000-{e.name}", e.source(), e.hint, 0, e.skill)
                     for e in examples.values() if e.kind == kind)
    starters = _family_instances([n for n in names if "/" in n])
    unknown = [n for n in names if n not in examples and n not in LEARNING_ENVS
               and n not in starters]
    if unknown:
        raise UserError(f"pool.examples: unknown environments {unknown}; known: "
                        f"{sorted([*examples, *LEARNING_ENVS])} and family modules "
                        "<family>/<index> (python -m spade.families.measure lists them)")
    envs = []
    for n in names:
        if n in examples:
            e = examples[n]
            envs.append(PoolEnv(f"g0000-{n}", e.source(), e.hint, 0, e.skill))
        elif n in starters:
            f = starters[n]
            envs.append(PoolEnv(f"g0000-{n.replace('/', '-')}", f.source, f.hint, 0, f.skill))
        else:
            envs.append(PoolEnv(f"g0000-{n}", learning_env_source(n), "", 0, None))
    return tuple(envs)


def _family_instances(names: Sequence[str]) -> dict[str, Any]:
    """The starter-family modules among ``names`` (``<family>/<index>``), by name."""
    if not names:
        return {}
    from spade.families import all_instances

    wanted = set(names)
    families = tuple(sorted({n.split("/", 1)[0] for n in wanted}))
    try:
        found = all_instances(families)
    except UserError:
        return {}
    return {i.name: i for i in found if i.name in wanted}


def starter_memory(names: Sequence[str]) -> list[MemoryEntry]:
    """Memory entries for the starter-family modules among ``names``, annotated with their
    family's measured solve rates (``spade/families/solve_rates.json``), so a run's first
    designer prompts show modules at the agent's scale as the warm start's prompts do."""
    from spade.families.measure import bundled_rate_pairs
    from spade.memory import summarize_env

    rates = bundled_rate_pairs()
    out = []
    for name, inst in _family_instances([n for n in names if "/" in n]).items():
        if inst.family not in rates:
            continue
        hinted, unhinted = rates[inst.family]
        out.append(MemoryEntry(
            env_id=f"g0000-{name.replace('/', '-')}", source=inst.source, hint=inst.hint,
            skill=inst.skill, doc_id=None, solve_rate_hinted=hinted,
            solve_rate_unhinted=unhinted, regret=max(0.0, hinted - unhinted), cycle=0,
            summary=summarize_env(inst.source)))
    return out


def pool_records(pool: EnvPool, step: int) -> list[EnvRecord]:
    """Run-store rows for generation-0 environments (designed ones are stored as designed)."""
    return [EnvRecord(env_id=e.env_id, cycle=step, source=e.source, valid=True, hint=e.hint,
                      skill=e.skill, extra={"origin": "bundled example", "generation": 0})
            for e in pool.envs]
