"""``validate_env``: run the battery, stop at the first failure, never accept on error.

Safety comes first: a forbidden operation recorded by the sandbox at any point makes the
environment invalid at stage SAFETY, whatever else happened. A fault in environment code
(exception, timeout, crash) makes it invalid at the stage where it happened. An unexpected
error in the validator itself also makes it invalid, with the error as the reason; only a
failure of the sandbox infrastructure (:class:`SandboxError`) propagates, because then no
verdict about the environment can be given. A time budget bounds every validation: a
watchdog closes the workers when it runs out, which unblocks any call in flight.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spade.sandbox._types import EnvFault, SandboxError
from spade.validate import _stages
from spade.validate._calls import Calls, fault_failure, safety_reason
from spade.validate._config import ValidationConfig
from spade.validate._failure import CheckFailed
from spade.validate._source import SourceFacts, check_source
from spade.validate._tool_schema import check_schemas, flat_tools
from spade.validate._verdict import CheckResult, Stage, Verdict

if TYPE_CHECKING:
    from spade.sandbox import EnvHandle, Sandbox


def validate_env(
    source: str,
    *,
    hint: str | None = None,
    sandbox: Sandbox,
    config: ValidationConfig | None = None,
) -> Verdict:
    """Validate one environment module; the verdict names the first broken rule.

    Raises :class:`spade.sandbox.SandboxError` only when the sandbox itself fails.
    """
    return _Validation(source, hint, sandbox, config or ValidationConfig()).run()


class _Validation:
    def __init__(
        self, source: str, hint: str | None, sandbox: Sandbox, cfg: ValidationConfig
    ) -> None:
        self.source = source
        self.hint = hint
        self.sandbox = sandbox
        self.cfg = cfg
        self.stage = Stage.SOURCE
        self.checks: list[CheckResult] = []
        self.handles: list[EnvHandle] = []
        self.lock = threading.Lock()
        self.expired = False
        self.facts: SourceFacts | None = None
        self.state: _stages.State | None = None
        self.kind: str | None = None
        self.start = time.monotonic()
        self.deadline = self.start + cfg.time_budget_s

    # -- driver -------------------------------------------------------------------------

    def run(self) -> Verdict:
        watchdog = threading.Timer(self.cfg.time_budget_s, self._expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            return self._run_stages()
        finally:
            watchdog.cancel()
            self._close_all()

    def _run_stages(self) -> Verdict:
        plan: list[tuple[Stage, Callable[[], dict[str, Any]]]] = [
            (Stage.SOURCE, self._source),
            (Stage.LOAD, self._load),
            (Stage.TYPES, lambda: _stages.stage_types(self._state())),
            (Stage.REWARDS, lambda: _stages.stage_rewards(self._state())),
            (Stage.DETERMINISM, lambda: _stages.stage_determinism(self._state(), self._second)),
            (Stage.VARIETY, lambda: _stages.stage_variety(self._state())),
            (Stage.TERMINATION, lambda: _stages.stage_termination(self._state())),
            (Stage.ANSWER_LEAK, lambda: _stages.stage_answer_leak(self._state())),
            (Stage.TOO_EASY, lambda: _stages.stage_too_easy(self._state())),
            (Stage.SOLUTION, lambda: _stages.stage_solution(self._state())),
            (Stage.HINT_LEAK, lambda: _stages.stage_hint_leak(self._state())),
            (Stage.TOOL_SCHEMA, lambda: _stages.stage_tool_schema(self._state())),
        ]
        for stage, check in plan:
            self.stage = stage
            for calls in self._calls():
                calls.stage = stage
            began = time.monotonic()
            try:
                details = check()
                self._safety()
                if stage == Stage.DETERMINISM:
                    self._close_second()
            except SandboxError:
                if not self.expired:
                    raise
                return self._fail(self._budget_failure(), began)
            except CheckFailed as failed:
                return self._fail(failed, began)
            except EnvFault as fault:  # a handle call outside Calls (e.g. a second load)
                return self._fail(fault_failure(fault, "a call into the environment", stage), began)
            except Exception as exc:  # never accept on error
                return self._fail(
                    CheckFailed(
                        stage,
                        f"validator error during the {stage} stage: {type(exc).__name__}: {exc}",
                    ),
                    began,
                )
            self.checks.append(CheckResult(stage, True, "", time.monotonic() - began, details))
        return self._verdict(True, Stage.DONE, "all checks passed")

    def _fail(self, failed: CheckFailed, began: float) -> Verdict:
        if self.expired or failed.details.get("budget"):
            failed = self._budget_failure()
        violation = self._violation()
        if violation is not None:
            failed = violation
        details = {k: v for k, v in failed.details.items() if k != "budget"}
        self.checks.append(
            CheckResult(failed.stage, False, failed.reason, time.monotonic() - began, details)
        )
        return self._verdict(False, failed.stage, failed.reason)

    def _verdict(self, valid: bool, stage: Stage, reason: str) -> Verdict:
        return Verdict(
            valid=valid,
            stage=stage,
            reason=reason,
            checks=tuple(self.checks),
            seconds=time.monotonic() - self.start,
            class_name=self.facts.class_name if self.facts else None,
            kind=self.kind or (self.facts.kind if self.facts else None),
        )

    def _budget_failure(self) -> CheckFailed:
        return CheckFailed(
            self.stage,
            f"validation did not finish within its time budget of "
            f"{self.cfg.time_budget_s:g} s (during the {self.stage} stage); the "
            "environment is too slow or hangs",
        )

    # -- safety, workers and the watchdog -----------------------------------------------

    def _violation(self) -> CheckFailed | None:
        for handle in self._handles():
            try:
                violations = tuple(handle.violations)
            except Exception:  # a closed or dead worker keeps no readable record
                continue
            if violations:
                return CheckFailed(
                    Stage.SAFETY,
                    safety_reason(violations),
                    violations=[str(v) for v in violations[:10]],
                )
        return None

    def _safety(self) -> None:
        violation = self._violation()
        if violation is not None:
            raise violation

    def _expire(self) -> None:
        self.expired = True
        self._close_all()

    def _handles(self) -> list[EnvHandle]:
        with self.lock:
            return list(self.handles)

    def _calls(self) -> list[Calls]:
        if self.state is None:
            return []
        return [c for c in (self.state.a, self.state.b) if c is not None]

    def _open(self, hash_seed: int) -> EnvHandle:
        if self.expired:
            raise CheckFailed(self.stage, "time budget exhausted", budget=True)
        handle = self.sandbox.load(self.source, hash_seed=hash_seed)
        with self.lock:
            self.handles.append(handle)
            expired = self.expired
        if expired:
            handle.close()
            raise CheckFailed(self.stage, "time budget exhausted", budget=True)
        return handle

    def _close_all(self) -> None:
        for handle in self._handles():
            with contextlib.suppress(Exception):  # best effort; the sandbox reaps workers
                handle.close()

    def _close_second(self) -> None:
        state = self._state()
        if state.b is not None:
            with contextlib.suppress(Exception):
                state.b.handle.close()

    # -- stages that need the driver ----------------------------------------------------

    def _state(self) -> _stages.State:
        assert self.state is not None, "stage run before LOAD"
        return self.state

    def _source(self) -> dict[str, Any]:
        self.facts = check_source(self.source, max_chars=self.cfg.max_source_chars)
        return {"class_name": self.facts.class_name, "kind": self.facts.kind}

    def _load(self) -> dict[str, Any]:
        assert self.facts is not None
        try:
            handle = self._open(self.cfg.hash_seeds[0])
        except EnvFault as fault:
            raise fault_failure(fault, "loading the module", Stage.LOAD) from None
        info = handle.info
        self.kind = info.kind
        details = _stages.check_info(info, self.cfg, self.facts.class_name, self.facts.kind)
        tools = flat_tools(list(info.tools or []))
        if info.kind == "tool":
            check_schemas(tools)  # the probes call tools, so broken schemas fail first
        calls = Calls(
            handle,
            label="first worker",
            deadline=self.deadline,
            max_obs_chars=self.cfg.max_observation_chars,
        )
        self.state = _stages.State(
            cfg=self.cfg, source=self.source, hint=self.hint, info=info, a=calls, tools=tools
        )
        return details

    def _second(self) -> Calls:
        try:
            handle = self._open(self.cfg.hash_seeds[1])
        except EnvFault as fault:
            raise fault_failure(
                fault,
                "loading the module in a second worker (different hash seed)",
                Stage.DETERMINISM,
            ) from None
        calls = Calls(
            handle,
            label="second worker",
            deadline=self.deadline,
            max_obs_chars=self.cfg.max_observation_chars,
        )
        calls.stage = Stage.DETERMINISM
        self._state().b = calls
        return calls
