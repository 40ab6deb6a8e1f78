"""The verdict on a generated environment: a battery of named checks run in the sandbox.

``validate_env(source, hint=..., sandbox=...)`` returns a :class:`Verdict` naming the first
failed :class:`Stage` with a human-readable reason, plus per-check details and timings. The
source check runs in the parent without executing the code; everything else runs the
environment only through :mod:`spade.sandbox`. Seeds are derived from a base that is secret
and new per validation unless configured (``Verdict.seed`` records it), spread over
training's seed range. The rules, in order (thresholds live in
:class:`ValidationConfig`):

- SOURCE: it parses; exactly one class defined in the module has a name ending in ``Env``
  and it derives from ``TextEnv`` or ``ToolEnv``; the global generators of ``random`` and
  ``numpy.random`` are never seeded *or used* (aliases resolved), since either makes seeds
  meaningless or disturbs other environments. Before that, a static capability scan
  rejects (stage SAFETY) code that reaches for network, processes, native code, signals,
  files outside the sandbox, interpreter/sandbox tampering or the launcher's environment
  -- even dead code (see :mod:`spade.validate._capabilities`).
- LOAD: it imports and constructs in the sandbox; ``max_turns`` is a positive int and the
  success threshold is reachable within the return range.
- TYPES: ``reset`` returns ``(str, dict)``; ``step`` returns ``(str, real number, bool,
  bool, dict)`` (numpy scalars arrive converted; ints or strings as flags do not pass);
  observations stay under ``max_observation_chars``; non-JSON info values are fine.
- REWARDS: rewards are finite; every episode's return lies in ``return_range``, also on
  whole-sentence replies, edge actions (``inf``, ``nan``, huge and negative numbers,
  letters past ``D``) and a won solution's last move repeated.
- DETERMINISM: replaying an episode later in the same worker (and ``solution()`` twice
  on one seed), and playing the same probe episodes in a second worker with another hash
  seed, a shifted clock and no ``solution()`` call before them, give identical
  observations, rewards, flags and ``solution()``.
- VARIETY: over ``instance_seeds`` seeds, at least ``min_distinct_fraction`` give distinct
  instances (first observation plus solution; then full trajectories of fixed probe
  sequences when those tie). When nothing visible differs (hidden-state games), the
  probes only bound the count from below, so only "every seed behaved identically" fails.
- TERMINATION: ``max_turns`` may not exceed ``max_turns_cap``. An episode reaching
  ``max_turns`` unended is truncated by the runner (fine), but at least one episode (a
  probe's, or the ``solution()`` replay) must be ended by the environment itself.
- ANSWER_LEAK: the first observation does not give the answer away, i.e. no rule like "the
  words after the first 'is'" recovers the solution for most seeds (for tool envs only
  when submitting that answer alone would win). A final action that ends every seed's
  solution alike ('submit') is a command, not the answer. Without ``solution()`` the
  answers come from plays: the probes' wins and the observation's own tokens typed as
  answers. Numbers compare without thousands separators.
- TOO_EASY: random and trivial policies (empty, "0", "1", echoes, random numbers and words;
  random tool calls plus a guess) must not win often: their mean win rate stays at most
  ``max_win_rate`` and no policy wins more than ``max_policy_win_rate``, judged once it
  has ``too_easy_episodes`` episodes (policies that won are topped up to that many).
- SOLUTION: ``solution()``, when it returns a value, wins when replayed from a fresh reset
  (probes always reset again after calling ``solution()``, which may consume state).
- HINT_LEAK: the hint audit (:mod:`spade.validate._hint_audit`, in fresh workers that
  look like training's): no string the hint spells out (plain, reversed, base64, hex,
  ROT13, an acrostic, neighbouring words joined, digits spelled in words, simple
  arithmetic of its numbers), typed once or twice or after another first answer, wins
  most fresh seeds as the answer, or more than ``hint_min_win_rate`` of them unless
  ``solution()`` says it is their answer in a small answer space (without it: an
  instance shows it, or its neighbours or random strings of its shape win as often);
  and the hint does not state a whole solution sequence, nor
  the answer of a good share of the seeds (case, spacing and punctuation ignored).
- TOOL_SCHEMA: tool envs have tools with unique identifier names, descriptions and valid
  JSON Schema (Draft 2020-12) parameters, and answer bad calls with text instead of raising.
- SAFETY (any time): a forbidden operation recorded by the sandbox makes the env invalid;
  the reason names the most serious one (network > process > native > signal > files >
  tampering > environment).

:func:`validate_batch` validates many environments a few at a time on one sandbox (the
same verdicts; more of them per second, since one validation leaves CPUs idle while it
waits for its workers).

Faults in environment code make it invalid at the stage where they happened; an error in
the validator itself makes it invalid too (never accepted); only a sandbox failure
(:class:`spade.sandbox.SandboxError`) is raised, because then no verdict is possible.
"""

from __future__ import annotations

from spade.validate._batch import default_concurrency, validate_batch
from spade.validate._config import ValidationConfig
from spade.validate._validator import validate_env
from spade.validate._verdict import CheckResult, Stage, Verdict

__all__ = [
    "CheckResult",
    "Stage",
    "ValidationConfig",
    "Verdict",
    "default_concurrency",
    "validate_batch",
    "validate_env",
]
