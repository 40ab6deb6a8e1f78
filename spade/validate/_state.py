"""What the stages share: the loaded env's facts, the probe episodes, the second worker.

The probe plan is fixed before anything runs: ``episodes_per_policy`` episodes of every
probe policy, interleaved, one seed each (seeds derived from a secret base, spread over
training's range). The first ``instance_seeds`` episodes also record ``solution()`` from
a fresh reset after the episode was played: their first observations and solutions are
the "instances" that the variety, leak and solution checks compare. The second worker (a
different hash seed, a shifted clock) plays a few of the same episodes with the same probe
RNGs, before it ever calls ``solution()`` -- in a thread, in parallel with the first; the
determinism stage compares the two recordings. (The hint audit has fresh workers of its
own, see :mod:`spade.validate._hint_audit`.)
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade.rewards import is_win
from spade.sandbox._types import EnvInfo
from spade.seeds import derive_seed
from spade.validate._calls import Calls, StepResult
from spade.validate._config import ValidationConfig
from spade.validate._failure import CheckFailed
from spade.validate._leaks import Answer
from spade.validate._probes import (
    GAME_POLICIES,
    TOOL_POLICIES,
    Episode,
    Move,
    apply,
    play,
    policy_rng,
    sweep,
)
from spade.validate._verdict import Stage

EPS = 1e-9
#: Probe policies whose episodes the second worker replays, most telling first.
_DETERMINISM_POLICIES = {
    "game": ("random_number", "echo", "random_text", "empty", "zero", "one"),
    "tool": ("random_tools", "echo", "answer_trivial", "answer_empty"),
}


@dataclass(frozen=True)
class Instance:
    """One seed's instance: first observation and (normalised) solution."""

    seed: int
    first: str
    solution: list[Any] | None


@dataclass
class State:
    """Everything the stages share."""

    cfg: ValidationConfig
    hint: str | None
    info: EnvInfo
    a: Calls
    tools: list[dict[str, Any]]
    episodes: list[Episode] = field(default_factory=list)
    #: Episodes beyond the plan, played by the too-easy stage to firm up its rates.
    extra_episodes: list[Episode] = field(default_factory=list)
    second: SecondWorker | None = None
    #: Base of every seed of this validation (the config's, or a secret one).
    base_seed: int = 0
    #: Answers found by playing (environments without ``solution()``): leak checks use them.
    found_answers: list[Answer] = field(default_factory=list)
    #: Edge actions (see the rewards stage) that turned an episode into a win.
    edge_wins: list[str] = field(default_factory=list)
    #: Starts a new worker of this environment whose answers arrive the given seconds
    #: after each observation (its calls; the caller closes its handle).
    fresh_calls: Callable[[float], Calls] | None = None
    _plan: tuple[tuple[int, str], ...] | None = field(default=None, init=False, repr=False)

    def seed(self, stream: str, k: int) -> int:
        """Seed ``k`` of the named stream: spread over training's seed range, so no
        environment can single out validation seeds by their size."""
        return derive_seed(self.base_seed, "validate", stream, k, bits=31)

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def turns(self) -> int:
        """Turns a probe episode may take: the env's max_turns, capped by the config."""
        return max(1, min(self.info.max_turns, self.cfg.max_turns_cap))

    @property
    def instances(self) -> list[Instance]:
        count = min(self.cfg.instance_seeds, len(self.episodes))
        return [Instance(e.seed, e.first, e.solution) for e in self.episodes[:count]]

    def win(self, total: float) -> bool:
        return is_win(total, self.info.success_threshold)

    def plan(self) -> tuple[tuple[int, str], ...]:
        """(seed, policy) of every probe episode, policies interleaved. Worked out once:
        each probe looks its entry up, and a seed is a keyed hash."""
        if self._plan is None:
            names = list(TOOL_POLICIES if self.kind == "tool" else GAME_POLICIES)
            self._plan = tuple(
                (self.seed("probe", j * len(names) + p), name)
                for j in range(self.cfg.episodes_per_policy)
                for p, name in enumerate(names)
            )
        return self._plan

    def determinism_indices(self) -> list[int]:
        """Plan indices the second worker replays (the first episode of telling policies)."""
        plan = self.plan()
        first_of: dict[str, int] = {}
        for index, (_, name) in enumerate(plan):
            first_of.setdefault(name, index)
        order = _DETERMINISM_POLICIES[self.kind]
        return [first_of[n] for n in order if n in first_of][: self.cfg.determinism_episodes]


def probe(state: State, calls: Calls, index: int, *, solve: bool = True) -> Episode:
    """Play plan entry ``index`` on ``calls``; for instance episodes (when ``solve``) then
    ask ``solution()`` from a fresh reset. The episode is played before ``solution()`` is
    ever called for it: an environment cannot learn from that call that it is being
    validated before it is played."""
    seed, name = state.plan()[index]
    first = calls.reset(seed)
    policies = TOOL_POLICIES if state.kind == "tool" else GAME_POLICIES
    episode = play(
        calls,
        seed,
        name,
        policies[name],
        rng=policy_rng(state.base_seed, name, index),
        max_turns=state.turns,
        tools=state.tools,
        first=first,
    )
    if solve and state.info.has_solution and index < state.cfg.instance_seeds:
        again = calls.reset(seed)
        if again != first:
            raise CheckFailed(
                Stage.DETERMINISM,
                f"same seed and actions gave different results: reset(seed={seed}) called "
                f"again (after an episode on it) gave another first observation: "
                f"{again!r:.60} vs {first!r:.60}",
            )
        episode.solution = normalise_solution(calls.solution(seed), state.kind, seed)
    return episode


def extra_probe(state: State, name: str, j: int) -> Episode:
    """Episode ``j`` (beyond the plan) of policy ``name``, on a seed the plan never used."""
    names = list(TOOL_POLICIES if state.kind == "tool" else GAME_POLICIES)
    index = j * len(names) + names.index(name)
    seed = state.seed("probe", index)
    policies = TOOL_POLICIES if state.kind == "tool" else GAME_POLICIES
    return play(
        state.a,
        seed,
        name,
        policies[name],
        rng=policy_rng(state.base_seed, name, index),
        max_turns=state.turns,
        tools=state.tools,
        first=state.a.reset(seed),
    )


def play_probes(state: State, stop: int) -> None:
    """Play the plan on the first worker up to (not including) index ``stop``."""
    for index in range(len(state.episodes), min(stop, len(state.plan()))):
        episode = probe(state, state.a, index)
        check_return(
            state,
            episode.total,
            f"seed {episode.seed}, policy {episode.policy!r}, {episode.turns} turns",
        )
        state.episodes.append(episode)


#: Fresh seeds each worker plays the determinism sweep on.
SWEEP_SEEDS = 3


def play_sweeps(state: State, calls: Calls) -> list[Episode]:
    """Games: episodes of spread-out guesses (``_probes.SWEEP``) on ``SWEEP_SEEDS`` fresh
    seeds. Both workers play them; a hidden secret that the seed does not fix
    (``os.urandom``, an unseeded generator) answers them differently (two secrets of 1-100
    fall in one eighth after seven guesses with a chance of 1/8 per seed), where the
    probes' small random guesses often get the same feedback from any secret."""
    if state.kind != "game":
        return []
    episodes = []
    for k in range(SWEEP_SEEDS):
        seed = state.seed("sweep", k)
        first = calls.reset(seed)
        episodes.append(play(calls, seed, "sweep", sweep, max_turns=state.turns,
                             rng=policy_rng(state.base_seed, "sweep", k), tools=state.tools,
                             first=first))  # fmt: skip
    return episodes


def check_return(state: State, total: float, where: str) -> None:
    """Every episode's return (sum of rewards) must lie in the configured range."""
    low, high = state.cfg.return_range
    if not low - EPS <= total <= high + EPS:
        raise CheckFailed(
            Stage.REWARDS,
            f"episode return {total:g} is outside [{low:g}, {high:g}] ({where})",
        )


class SecondWorker:
    """Plays the determinism episodes in a worker with another hash seed, in a thread, and
    only then asks ``solution()`` of the instance seeds.

    The worker is loaded by the caller's thread: the sandbox ties its processes to the
    thread that started them, so only the calls happen in this short-lived thread.
    """

    def __init__(self, state: State, calls: Calls | None, error: BaseException | None = None,
                 done: Callable[[], None] | None = None):  # fmt: skip
        self.state = state
        self.calls = calls
        self.done = done  # called once the worker is closed
        self.indices = state.determinism_indices()
        self.episodes: dict[int, Episode] = {}
        #: seed -> (first observation, normalised solution) of every instance seed.
        self.instances: dict[int, tuple[str, list[Any] | None]] = {}
        #: (seed, return) of the first instance's ``solution()`` played here, where every
        #: answer comes ``clock_gap_s`` after the observation (a slow player).
        self.slow_solution: tuple[int, float] | None = None
        #: The determinism sweeps (see :func:`play_sweeps`) as this worker played them.
        self.sweeps: list[Episode] = []
        self.error = error
        self.thread = threading.Thread(target=self._run, name="spade-validate-b", daemon=True)
        if calls is not None:
            self.thread.start()

    def _run(self) -> None:
        assert self.calls is not None
        try:
            for index in self.indices:  # still no solution() before these
                self.episodes[index] = probe(self.state, self.calls, index, solve=False)
            self.sweeps = play_sweeps(self.state, self.calls)
            self._instances()
            for k in range(self.state.cfg.repeat_seeds):  # the first worker resets them too
                self.calls.reset(self.state.seed("repeat", k))
            self._play_solution()
        except BaseException as exc:  # handed to the main thread at the determinism stage
            self.error = exc
        finally:
            with contextlib.suppress(Exception):  # in parallel with the first worker's work
                self.calls.handle.close()
                if self.done is not None:
                    self.done()

    def _instances(self) -> None:
        """Every instance seed of the plan, so an instance that depends on the hash seed or
        the pid is seen even when the replayed episodes happen not to show it."""
        assert self.calls is not None
        state, calls = self.state, self.calls
        for seed, _ in state.plan()[: state.cfg.instance_seeds]:
            first = calls.reset(seed)
            solution = None
            if state.info.has_solution:
                solution = normalise_solution(calls.solution(seed), state.kind, seed)
            self.instances[seed] = (first, solution)

    def _play_solution(self) -> None:
        """Play the first instance's ``solution()`` once, as a slow player would."""
        assert self.calls is not None
        state, calls = self.state, self.calls
        found = next(((s, sol) for s, (_, sol) in self.instances.items() if sol), None)
        if found is None:
            return
        seed, solution = found
        if len(solution) > state.info.max_turns:
            return  # the solution stage names it
        moves: list[Move]
        if state.kind == "tool":
            *tool_calls, final = solution
            moves = [("tool", c["name"], c.get("arguments", {})) for c in tool_calls]
            moves.append(("step", final))
        else:
            moves = [("step", a) for a in solution]
        calls.reset(seed)
        total = 0.0
        for turn, move in enumerate(moves, start=1):
            result = apply(calls, move, f"at turn {turn} (seed {seed}, slow solution replay)")
            if isinstance(result, StepResult):
                total += result.reward
                if result.ended:
                    break
        self.slow_solution = (seed, total)

    def join(self, timeout: float | None) -> bool:
        """Wait for the thread; True when it has finished (or never started)."""
        if self.thread.ident is not None:
            self.thread.join(timeout)
        return not self.running

    @property
    def running(self) -> bool:
        return self.thread.is_alive()


def check_info(info: EnvInfo, cfg: ValidationConfig, class_name: str, kind: str) -> dict[str, Any]:
    """LOAD: the loaded class is the one the source defines, with sane class attributes."""
    if info.class_name != class_name:
        raise CheckFailed(
            Stage.LOAD,
            f"the sandbox loaded class {info.class_name!r} but the source defines {class_name!r}",
        )
    if info.kind != kind:
        raise CheckFailed(
            Stage.LOAD,
            f"{class_name} behaves as a {info.kind} environment but its source declares a "
            f"{kind} environment",
        )
    turns = info.max_turns
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise CheckFailed(Stage.LOAD, f"max_turns must be a positive integer, got {turns!r}")
    threshold = info.success_threshold
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or (isinstance(threshold, int) and abs(threshold) > 10**6)
        or not math.isfinite(threshold)
    ):
        raise CheckFailed(
            Stage.LOAD, f"success_threshold must be a finite number, got {threshold!r}"
        )
    if threshold > cfg.return_range[1] + EPS:
        raise CheckFailed(
            Stage.LOAD,
            f"success_threshold {threshold:g} is above the highest allowed return "
            f"{cfg.return_range[1]:g}; no episode could win",
        )
    return {
        "class_name": info.class_name,
        "kind": info.kind,
        "max_turns": turns,
        "success_threshold": threshold,
        "has_solution": info.has_solution,
    }


def normalise_solution(value: Any, kind: str, seed: int) -> list[Any] | None:
    """``solution()``'s value checked against the contract (game actions become strings)."""
    where = f"solution() after reset(seed={seed})"
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise CheckFailed(
            Stage.SOLUTION, f"{where} must return a list or None, got {type(value).__name__}"
        )
    if not value:
        raise CheckFailed(Stage.SOLUTION, f"{where} returned an empty list")
    if kind == "tool":
        *calls, final = value
        if not isinstance(final, str):
            raise CheckFailed(
                Stage.SOLUTION,
                f"{where}: the last item must be the final answer string, got "
                f"{type(final).__name__}",
            )
        for call in calls:
            if not (
                isinstance(call, dict)
                and isinstance(call.get("name"), str)
                and isinstance(call.get("arguments", {}), dict | str)
            ):
                raise CheckFailed(
                    Stage.SOLUTION,
                    f"{where}: tool calls must be {{'name': str, 'arguments': dict}}, got "
                    f"{call!r:.80}",
                )
        return list(value)
    actions = []
    for action in value:
        if isinstance(action, bool) or not isinstance(action, str | int | float):
            raise CheckFailed(
                Stage.SOLUTION, f"{where}: actions must be strings, got {type(action).__name__}"
            )
        actions.append(action if isinstance(action, str) else str(action))
    return actions
