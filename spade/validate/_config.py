"""Knobs of the validation battery: probe sizes, thresholds and the time budget."""

from __future__ import annotations

from dataclasses import dataclass

from spade.errors import UserError


@dataclass(frozen=True)
class ValidationConfig:
    """How hard the validator probes an environment.

    The defaults keep one validation of a typical environment well under 100 ms with
    bubblewrap isolation while still catching the common failure modes; raise the probe
    sizes for a stricter (slower) check.
    """

    #: Base of every seed the validator uses (recorded in the verdict). ``None``: a secret
    #: base drawn per validation, so an environment cannot know the seeds it will be shown;
    #: every seed is then derived from the base into training's range (31-bit, spread out).
    seed: int | None = None
    #: Seeds whose first observation and ``solution()`` define "instances" (variety, leaks).
    instance_seeds: int = 8
    #: At least this fraction of ``instance_seeds`` must give distinct instances.
    min_distinct_fraction: float = 0.5
    #: Seeds reset beyond ``instance_seeds`` when those repeat an instance, and the distinct
    #: instances needed over all of them (fewer means ~10 or fewer instances per 100 seeds).
    instance_topup: int = 24
    min_distinct_instances: int = 8
    #: Probe episodes per random/trivial policy (too-easy, termination, rewards, types).
    episodes_per_policy: int = 2
    #: The too-easy probe fails when the probe policies' mean win rate exceeds this.
    max_win_rate: float = 0.2
    #: ... or when any single probe policy wins more often than this.
    max_policy_win_rate: float = 0.5
    #: Too-easy: episodes a policy needs before its own win rate is judged; policies that
    #: won at least once (all of them, for cheap envs) are topped up to this many.
    too_easy_episodes: int = 8
    #: Too-easy: top up every policy when that costs at most this many extra steps.
    too_easy_cheap_steps: int = 0
    #: Too-easy: never spend more than this many extra steps on topping up.
    too_easy_max_steps: int = 400
    #: Constant-answer probe: fresh seeds each constant is screened on, and the seeds a
    #: constant that won any of them is judged on (``max_policy_win_rate``).
    constant_screen: int = 3
    constant_episodes: int = 10
    #: Recorded probe episodes replayed in a second worker with a different hash seed.
    determinism_episodes: int = 2
    #: Fresh seeds reset once in each worker (first observations compared), on top of
    #: every seed the battery resets more than once anyway: an instance that is random
    #: on one seed in ``n`` (an unseeded fallback) is seen with a chance of about
    #: ``1 - (1 - 1/n) ** (repeat_seeds + ~10)``.
    repeat_seeds: int = 24
    #: Hash seeds of the first and the second worker (they must differ).
    hash_seeds: tuple[int, int] = (0, 1)
    #: The second worker's wall clock runs this far ahead (1 d 1 h 1 min 1.5 s): an
    #: instance that depends on the date or the time of day differs there.
    clock_offset_s: float = 90_061.5
    #: ... and every clock there (durations included) jumps this far ahead as each call
    #: arrives, as if the player had thought that long (a language model answers seconds
    #: after ``reset``; the validator's calls come back to back): behaviour that depends
    #: on how fast the answer came differs there, and the hint audit, played in that
    #: worker, sees a password that works only for a slow player.
    clock_gap_s: float = 41.3
    #: The hint audit plays in one fresh worker per range, with the first hash seed (the
    #: one training loads with), the real date, and every answer arriving a delay after
    #: its observation drawn log-uniformly from the range by the secret seed (training's
    #: agent is a language model answering seconds later; a gate on latency must open
    #: for the audit as often as for training).
    audit_delays_s: tuple[tuple[float, float], ...] = ((1.5, 8.0), (8.0, 60.0))
    #: A string the hint spells out that wins more than this fraction of twice
    #: ``constant_episodes`` fresh seeds (but not most) is a password unless it is the
    #: answer of the instances it won, by ``solution()``, in a small answer space (their
    #: answers repeat); without ``solution()``, unless an instance it won shows it, it is
    #: an answer an unhinted player types anyway, or the same string a letter or digit
    #: away, or a random string of its shape, wins at least a third as often.
    hint_min_win_rate: float = 0.1
    #: Seeds on which ``solution()`` is replayed and must win.
    solution_seeds: int = 3
    #: Allowed range of an episode's return (sum of rewards).
    return_range: tuple[float, float] = (0.0, 1.0)
    #: An observation longer than this many characters is rejected.
    max_observation_chars: int = 16_384
    #: Source files longer than this are rejected before anything runs.
    max_source_chars: int = 200_000
    #: Environments may not declare a ``max_turns`` above this (probe episodes stop here).
    max_turns_cap: int = 100
    #: A leak needs the answer at one extractable spot in at least this fraction of seeds.
    leak_min_fraction: float = 0.75
    #: Fresh seeds added before an answer-leak rule found on the instance seeds rejects.
    leak_topup: int = 16
    #: A hint leaks when it literally contains the answer for this fraction of seeds.
    hint_leak_min_fraction: float = 0.5
    #: Wall-clock budget for one whole validation; exceeding it makes the env invalid.
    time_budget_s: float = 30.0

    def __post_init__(self) -> None:
        problems = []
        if self.instance_seeds < 2:
            problems.append("instance_seeds must be >= 2")
        if self.repeat_seeds < 0:
            problems.append("repeat_seeds must be >= 0")
        if self.episodes_per_policy < 1:
            problems.append("episodes_per_policy must be >= 1")
        if (
            self.too_easy_episodes < 1
            or min(self.too_easy_cheap_steps, self.too_easy_max_steps) < 0
        ):
            problems.append("too_easy_episodes must be >= 1 and the step budgets >= 0")
        if not 0.0 <= self.max_win_rate <= 1.0 or not 0.0 <= self.max_policy_win_rate <= 1.0:
            problems.append("win-rate thresholds must lie in [0, 1]")
        if not 0.0 <= self.hint_min_win_rate <= self.max_policy_win_rate:
            problems.append("hint_min_win_rate must lie in [0, max_policy_win_rate]")
        if self.hash_seeds[0] == self.hash_seeds[1]:
            problems.append("the two hash seeds must differ")
        if self.return_range[0] > self.return_range[1]:
            problems.append("return_range must be (low, high) with low <= high")
        if not self.audit_delays_s or any(
            not 0 < low <= high for low, high in self.audit_delays_s
        ):
            problems.append("audit_delays_s must be non-empty (low, high) pairs, 0 < low <= high")
        if self.clock_gap_s < 0:
            problems.append("clock_gap_s must be >= 0")
        if self.time_budget_s <= 0:
            problems.append("time_budget_s must be positive")
        if self.max_turns_cap < 1 or self.max_observation_chars < 1:
            problems.append("max_turns_cap and max_observation_chars must be positive")
        if problems:
            raise UserError("invalid ValidationConfig: " + "; ".join(problems))
