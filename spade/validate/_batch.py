"""Validating a batch of environments: a few validations side by side on one sandbox.

One validation spends about half its time waiting for its two workers, and its workers
wait for it, so a lone validation leaves CPUs idle. Running a few at once fills them: on
two cores three at a time validate about 40% more environments per second than one after
another. Each validation keeps its own workers, time budget and watchdog, so a verdict is
the one it gets alone; only a time limit sits closer on a busy machine, which is why a
verdict a time limit decided is taken again alone.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from spade.validate._config import ValidationConfig
from spade.validate._validator import validate_env
from spade.validate._verdict import Verdict

if TYPE_CHECKING:
    from spade.sandbox import Sandbox

#: At most this many validations at once by default: the validator's own Python work
#: shares one interpreter lock, so more stop paying off.
MAX_DEFAULT_CONCURRENCY = 8


def default_concurrency() -> int:
    """Validations in flight by default: one more than the CPUs, at most 8."""
    return max(1, min(MAX_DEFAULT_CONCURRENCY, (os.cpu_count() or 1) + 1))


def validate_batch(
    items: Sequence[tuple[str, str | None]],
    *,
    sandbox: Sandbox,
    config: ValidationConfig | None = None,
    concurrency: int | None = None,
    progress: Callable[[int, Verdict], None] | None = None,
    seeds: Sequence[int] | None = None,
) -> list[Verdict]:
    """The verdict of each ``(source, hint)`` pair, in order, ``concurrency`` at a time
    (default :func:`default_concurrency`).

    A verdict a time limit decided (:attr:`Verdict.timed_out`) is taken again with the
    environment validated alone, once the others are done: side by side, an environment
    that loads a heavy library next to others that burn CPU can miss a limit it meets on
    its own. ``progress(done, verdict)`` is called in the caller's thread for each final
    verdict. A :class:`spade.sandbox.SandboxError` from any validation stops the batch
    (validations not started are dropped, running ones finish) and is raised. ``seeds``
    gives each validation its own base seed (a run derives them, so they are recorded and
    replayable yet differ per design); without it each follows ``config.seed``.
    """
    k = default_concurrency() if concurrency is None else concurrency
    if k < 1:
        raise ValueError(f"concurrency must be at least 1, got {k}")
    base = config or ValidationConfig()
    if seeds is not None and len(seeds) != len(items):
        raise ValueError(f"{len(seeds)} seeds for {len(items)} environments")
    configs = ([dataclasses.replace(base, seed=int(s)) for s in seeds] if seeds is not None
               else [base] * len(items))  # fmt: skip
    report = _Reporter(progress)
    if k == 1 or len(items) <= 1:
        verdicts = []
        for (source, hint), cfg in zip(items, configs, strict=True):
            verdicts.append(validate_env(source, hint=hint, sandbox=sandbox, config=cfg))
            report(verdicts[-1])
        return verdicts
    verdicts = _side_by_side(items, sandbox, configs, min(k, len(items)), report)
    for i, verdict in enumerate(verdicts):
        if verdict.timed_out:
            source, hint = items[i]
            verdicts[i] = validate_env(source, hint=hint, sandbox=sandbox, config=configs[i])
            report(verdicts[i])
    return verdicts


class _Reporter:
    """Counts final verdicts and hands each to ``progress``."""

    def __init__(self, progress: Callable[[int, Verdict], None] | None) -> None:
        self.progress, self.done = progress, 0

    def __call__(self, verdict: Verdict) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, verdict)


def _side_by_side(items: Sequence[tuple[str, str | None]], sandbox: Sandbox,
                  configs: Sequence[ValidationConfig], k: int, report: _Reporter
                  ) -> list[Verdict]:  # fmt: skip
    """Every item validated ``k`` at a time; verdicts a time limit decided not reported."""
    with ThreadPoolExecutor(k, thread_name_prefix="spade-validate") as pool:
        futures = [pool.submit(validate_env, source, hint=hint, sandbox=sandbox, config=cfg)
                   for (source, hint), cfg in zip(items, configs, strict=True)]  # fmt: skip
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    verdict = future.result()  # raises the validation's SandboxError
                    if not verdict.timed_out:
                        report(verdict)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return [f.result() for f in futures]
