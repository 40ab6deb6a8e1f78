"""Where a fixed-environment baseline's problems come from: RLVE, Reasoning Gym, a static
pool, the starter environment families.

A *problem* is an environment id plus a seed; a GRPO group plays one problem G times (same
seed, different samples). Each source draws the problem of one ticket, turns an environment
id into its sandbox source, hears how the plays went, and keeps its own state (difficulty
windows, counters) as plain JSON for the run's checkpoint. A draw depends only on the run
seed, the ticket (step, index in the step, global slot) and, for RLVE, the difficulty
windows at that moment; not on the order of earlier draws. So a backend that executes
tickets one at a time draws what a whole-step backend does (up to windows that move within
a step), and a resumed run draws what an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from spade.baselines._rg import RgDataset, rg_source
from spade.baselines._rlve import parse_rlve_env_id, rlve_env_id, rlve_source
from spade.baselines._window import SlidingWindow, WindowConfig
from spade.cycle import load_pool
from spade.cycle._export import INDEX, POOL_DIR
from spade.errors import UserError
from spade.seeds import derive_seed


@dataclass(frozen=True)
class Problem:
    """One problem: G plays of it form one GRPO group."""

    env_id: str
    seed: int


class ProblemSource(Protocol):
    """What the baseline rollout needs from a problem family."""

    #: ``fixed`` method family name recorded in metrics (rlve | reasoning_gym | static_pool).
    name: str

    def problem(self, step: int, index: int, slot: int) -> Problem: ...

    def source(self, env_id: str) -> str: ...

    def observe(self, problem: Problem, wins: Sequence[bool]) -> None: ...

    def metrics(self) -> dict[str, Any]: ...

    def state(self) -> dict[str, Any]: ...

    def restore(self, state: Mapping[str, Any]) -> None: ...


def draw(source: ProblemSource, step: int, n: int) -> list[Problem]:
    """The problems of a whole step of ``n`` tickets (slots ``step * n + i``)."""
    return [source.problem(step, i, step * n + i) for i in range(n)]


def _round_robin(seed: int, name: str, step: int, index: int, names: Sequence[str]
                 ) -> tuple[str, random.Random]:
    """Ticket ``index``'s entry of a per-step shuffle, and the ticket's own generator."""
    order = list(names)
    random.Random(derive_seed(seed, f"{name}-order", step)).shuffle(order)
    rng = random.Random(derive_seed(seed, f"{name}-problem", step, index))
    return order[index % len(order)], rng


class RlveProblems:
    """RLVE environments, each at a difficulty drawn from its sliding window."""

    name = "rlve"

    def __init__(self, environments: Sequence[str], window: WindowConfig, seed: int) -> None:
        self.environments = tuple(environments)
        for env in self.environments:
            rlve_source(env, 0)  # unknown ids fail here, before any training
        self.controller = SlidingWindow(self.environments, window)
        self.seed = seed

    def problem(self, step: int, index: int, slot: int) -> Problem:
        """Environments round-robin over a per-step shuffle; difficulty from the window."""
        env, rng = _round_robin(self.seed, self.name, step, index, self.environments)
        difficulty = self.controller.sample(env, rng)
        return Problem(rlve_env_id(env, difficulty), rng.randrange(2**31))

    def source(self, env_id: str) -> str:
        return rlve_source(*parse_rlve_env_id(env_id))

    def observe(self, problem: Problem, wins: Sequence[bool]) -> None:
        env, difficulty = parse_rlve_env_id(problem.env_id)
        for won in wins:
            self.controller.record(env, difficulty, won)

    def metrics(self) -> dict[str, Any]:
        return {"difficulty": {e: {"low": w.low, "high": w.high,
                                   "attempts_at_high": w.attempts}
                               for e, w in self.controller.windows.items()}}

    def state(self) -> dict[str, Any]:
        return {"controller": self.controller.state()}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.controller = SlidingWindow.restore(state["controller"])


class RgProblems:
    """Reasoning Gym items: a dataset per group (round-robin), an item index as the seed."""

    name = "reasoning_gym"

    def __init__(self, datasets: Sequence[RgDataset], seed: int) -> None:
        if not datasets:
            raise UserError("the Reasoning Gym pool needs at least one dataset")
        self.datasets = {d.env_id: d for d in datasets}
        if len(self.datasets) != len(datasets):
            raise UserError("the Reasoning Gym pool names a dataset twice")
        self.seed = seed
        self.drawn: Counter[str] = Counter()

    def problem(self, step: int, index: int, slot: int) -> Problem:
        env_id, rng = _round_robin(self.seed, self.name, step, index, list(self.datasets))
        return Problem(env_id, rng.randrange(self.datasets[env_id].size))

    def source(self, env_id: str) -> str:
        if env_id not in self.datasets:
            raise UserError(f"not a dataset of this Reasoning Gym pool: {env_id}")
        return rg_source(self.datasets[env_id])

    def observe(self, problem: Problem, wins: Sequence[bool]) -> None:
        self.drawn[problem.env_id] += 1

    def metrics(self) -> dict[str, Any]:
        return {"problems_drawn": dict(sorted(self.drawn.items()))}

    def state(self) -> dict[str, Any]:
        return {"drawn": dict(self.drawn)}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.drawn = Counter({str(k): int(v) for k, v in state["drawn"].items()})


class FamilyProblems:
    """The starter environment families' modules (``spade.families``), round-robin over a
    per-step shuffle, each problem on a training seed (below 2**31: the families' held-out
    seeds, which the ``families`` evaluation suite plays, lie above)."""

    name = "families"

    def __init__(self, families: Sequence[str], seed: int) -> None:
        from spade.families import all_instances, families_version

        self.sources = {i.name: i.source for i in all_instances(tuple(families))}
        self.env_ids = list(self.sources)
        self.version = families_version()
        self.seed = seed
        self.drawn: Counter[str] = Counter()

    def problem(self, step: int, index: int, slot: int) -> Problem:
        env_id, rng = _round_robin(self.seed, self.name, step, index, self.env_ids)
        return Problem(env_id, rng.randrange(2**31))

    def source(self, env_id: str) -> str:
        if env_id not in self.sources:
            raise UserError(f"not a module of these environment families: {env_id}")
        return self.sources[env_id]

    def observe(self, problem: Problem, wins: Sequence[bool]) -> None:
        self.drawn[problem.env_id.split("/")[0]] += 1

    def metrics(self) -> dict[str, Any]:
        return {"problems_drawn": dict(sorted(self.drawn.items()))}

    def state(self) -> dict[str, Any]:
        return {"drawn": dict(self.drawn), "version": self.version}

    def restore(self, state: Mapping[str, Any]) -> None:
        if state.get("version", self.version) != self.version:
            raise UserError("the environment families changed version since the run started")
        self.drawn = Counter({str(k): int(v) for k, v in state["drawn"].items()})


def pool_sha256(path: str | Path) -> str:
    """sha256 of a pool's index (which names every environment file's own sha256)."""
    root = Path(path)
    index = root / POOL_DIR / INDEX if (root / POOL_DIR / INDEX).is_file() else root / INDEX
    try:
        return hashlib.sha256(index.read_bytes()).hexdigest()
    except OSError:
        raise UserError(f"no environment pool at {root} (missing {POOL_DIR}/{INDEX})") from None


class StaticProblems:
    """An exported pool, drawn without replacement (a fresh shuffle once it is used up)."""

    name = "static_pool"

    def __init__(self, path: str | Path, seed: int, expected_sha256: str | None = None) -> None:
        self.path = Path(path)
        self.sha256 = pool_sha256(self.path)
        if expected_sha256 is not None and expected_sha256 != self.sha256:
            raise UserError(f"pool {self.path} has sha256 {self.sha256[:12]}..., "
                            f"the recipe expects {expected_sha256[:12]}...")
        envs = load_pool(self.path)
        if not envs:
            raise UserError(f"pool {self.path} holds no environments")
        self.sources = {e.env_id: e.source for e in envs}
        self.env_ids = sorted(self.sources)
        self.seed = seed
        self.slots = 0  # one past the highest slot drawn: the pool's progress

    def _order(self, epoch: int) -> list[str]:
        order = list(self.env_ids)
        random.Random(derive_seed(self.seed, f"{self.name}-order", epoch)).shuffle(order)
        return order

    def problem(self, step: int, index: int, slot: int) -> Problem:
        """Slot ``k`` is entry ``k mod n`` of pass ``k div n``'s shuffle: each pass draws
        every environment exactly once (consecutive slots never repeat one)."""
        epoch, position = divmod(slot, len(self.env_ids))
        env_id = self._order(epoch)[position]
        self.slots = max(self.slots, slot + 1)
        return Problem(env_id, derive_seed(self.seed, f"{self.name}-play", epoch, env_id,
                                           bits=31))

    def source(self, env_id: str) -> str:
        if env_id not in self.sources:
            raise UserError(f"not an environment of pool {self.path}: {env_id}")
        return self.sources[env_id]

    def observe(self, problem: Problem, wins: Sequence[bool]) -> None:
        """Nothing to adapt: a static pool is drawn in a fixed order."""

    @property
    def coverage(self) -> float:
        """Share of the pool drawn at least once."""
        return min(1.0, self.slots / len(self.env_ids))

    def metrics(self) -> dict[str, Any]:
        return {"pool": {"size": len(self.env_ids), "drawn": self.slots,
                         "passes": self.slots / len(self.env_ids), "coverage": self.coverage,
                         "sha256": self.sha256}}

    def state(self) -> dict[str, Any]:
        return {"slots": self.slots, "sha256": self.sha256}

    def restore(self, state: Mapping[str, Any]) -> None:
        if state.get("sha256") != self.sha256:
            raise UserError(f"pool {self.path} changed since the run started (sha256)")
        self.slots = int(state["slots"])
