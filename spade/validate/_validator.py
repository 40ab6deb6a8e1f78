"""``validate_env``: run the battery, stop at the first failure, never accept on error.

Safety comes first: a forbidden operation recorded by the sandbox at any point makes the
environment invalid at stage SAFETY, whatever else happened. A fault in environment code
(exception, timeout, crash) makes it invalid at the stage where it happened. An unexpected
error in the validator itself also makes it invalid, with the error as the reason; only a
failure of the sandbox infrastructure (:class:`SandboxError`) propagates, because then no
verdict about the environment can be given. A time budget bounds every validation: calls
stop once it is spent, and a watchdog closes the workers, which unblocks a call in flight.

Two workers at most: the first runs every stage; the second (another hash seed) starts once
the first has loaded and replays a few probe episodes in parallel, for determinism.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spade.sandbox._types import EnvFault, SandboxError, Violation
from spade.validate import _behaviour, _task
from spade.validate._calls import Calls, fault_failure, safety_reason
from spade.validate._config import ValidationConfig
from spade.validate._failure import CheckFailed
from spade.validate._probes import Episode
from spade.validate._source import SourceFacts, check_source
from spade.validate._state import SecondWorker, State, check_info
from spade.validate._tool_schema import check_schemas, flat_tools
from spade.validate._verdict import CheckResult, Stage, Verdict

if TYPE_CHECKING:
    from spade.sandbox import EnvHandle, Sandbox


def _storable(text: str) -> str:
    """A reason quoting environment output, as text any file or terminal takes."""
    return text.encode("utf-8", "replace").decode("utf-8")


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
        self.second_handle: EnvHandle | None = None
        self.second_load: threading.Thread | None = None
        self.second_opened: Calls | BaseException | None = None
        self.lock = threading.Lock()
        self.expired = False
        self.facts: SourceFacts | None = None
        self.state: State | None = None
        self.start = time.monotonic()
        self.deadline = self.start + cfg.time_budget_s
        #: The configured base seed, or a secret one drawn for this validation alone.
        self.base_seed = cfg.seed if cfg.seed is not None else secrets.randbits(31)
        #: Every seed's first observation, in whichever worker it was first reset.
        self.firsts: dict[int, tuple[str, str]] = {}

    # -- driver -------------------------------------------------------------------------

    def run(self) -> Verdict:
        watchdog = threading.Timer(self.cfg.time_budget_s, self._expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            return self._run_stages()
        except SandboxError:
            raise
        except Exception as exc:  # never accept on error, never die of an environment
            reason = f"validator error during the {self.stage} stage: {type(exc).__name__}"
            return self._verdict(False, self.stage, reason)
        finally:
            if self.second_load is not None:
                self.second_load.join(max(0.0, self.deadline - time.monotonic()) + 1.0)
            self._join_second()
            watchdog.cancel()
            self._close_all()
            self._restock()

    def _run_stages(self) -> Verdict:
        plan: list[tuple[Stage, Callable[[], dict[str, Any]]]] = [
            (Stage.SOURCE, self._source),
            (Stage.LOAD, self._load),
            (Stage.TYPES, self._types),
            (Stage.REWARDS, lambda: _behaviour.stage_rewards(self._state())),
            (
                Stage.DETERMINISM,
                lambda: _behaviour.stage_determinism(self._state(), self._wait_second),
            ),
            (Stage.VARIETY, lambda: _behaviour.stage_variety(self._state())),
            (Stage.TERMINATION, lambda: _behaviour.stage_termination(self._state())),
            (Stage.ANSWER_LEAK, lambda: _task.stage_answer_leak(self._state())),
            (Stage.TOO_EASY, lambda: _task.stage_too_easy(self._state())),
            (Stage.SOLUTION, lambda: _task.stage_solution(self._state())),
            (Stage.HINT_LEAK, lambda: _task.stage_hint_leak(self._state())),
            (Stage.TOOL_SCHEMA, lambda: _task.stage_tool_schema(self._state())),
        ]
        for stage, check in plan:
            self.stage = stage
            if self.state is not None:
                self.state.a.stage = stage
            began = time.monotonic()
            try:
                details = check()
                self._safety()
            except SandboxError:
                if not self.expired:
                    raise
                return self._fail(self._budget_failure(), began)
            except CheckFailed as failed:
                return self._fail(failed, began)
            except EnvFault as fault:  # defensive: handle calls go through Calls
                return self._fail(fault_failure(fault, "a call into the environment", stage), began)
            except Exception as exc:  # never accept on error
                reason = f"validator error during the {stage} stage: {type(exc).__name__}: {exc}"
                return self._fail(CheckFailed(stage, reason), began)
            self.checks.append(CheckResult(stage, True, "", time.monotonic() - began, details))
        began = time.monotonic()
        dormant = self._teardown_violations()
        if dormant:
            late = CheckFailed(
                Stage.SAFETY, safety_reason(dormant), violations=[str(v) for v in dormant[:10]]
            )
            return self._fail(late, began)
        return self._verdict(True, Stage.DONE, "all checks passed")

    def _teardown_violations(self) -> tuple[Violation, ...]:
        """Attempts that wait for teardown (``__del__``, ``atexit``, late threads)."""
        self._join_second()
        found: list[Violation] = []
        for handle in self._handles():
            found.extend(handle.finalize())
        return tuple(found)

    def _fail(self, failed: CheckFailed, began: float) -> Verdict:
        self._join_second()  # its worker may have recorded a violation too
        if self.expired or failed.details.get("budget"):
            failed = self._budget_failure()
        violation = self._violation()
        if violation is not None:
            failed = violation
        details = {k: v for k, v in failed.details.items() if k != "budget"}
        seconds = time.monotonic() - began
        reason = _storable(failed.reason)
        self.checks.append(CheckResult(failed.stage, False, reason, seconds, details))
        return self._verdict(False, failed.stage, reason)

    def _verdict(self, valid: bool, stage: Stage, reason: str) -> Verdict:
        kind = self.state.kind if self.state else (self.facts.kind if self.facts else None)
        return Verdict(
            valid=valid,
            stage=stage,
            reason=_storable(reason),
            checks=tuple(self.checks),
            seconds=time.monotonic() - self.start,
            class_name=self.facts.class_name if self.facts else None,
            kind=kind,
            seed=self.base_seed,
        )

    def _budget_failure(self) -> CheckFailed:
        return CheckFailed(
            self.stage,
            f"validation did not finish within its time budget of {self.cfg.time_budget_s:g} s "
            f"(during the {self.stage} stage); the environment is too slow or hangs",
            fault="budget",
        )

    # -- safety, workers and the watchdog -----------------------------------------------

    def _violation(self) -> CheckFailed | None:
        second = self.state.second if self.state else None
        for handle in self._handles():
            if handle is self.second_handle and second is not None and second.running:
                continue  # its thread still uses it; checked once the thread is done
            try:
                violations = tuple(handle.violations)
            except Exception as exc:  # fail closed: an unreadable record is not a clean one
                return CheckFailed(Stage.SAFETY, "the worker's record of forbidden attempts "
                                   f"could not be read ({type(exc).__name__}); not trusted")
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

    def _open(
        self, hash_seed: int, clock_offset_s: float = 0.0, clock_gap_s: float = 0.0,
        restock: bool = True,
    ) -> EnvHandle:  # fmt: skip
        if self.expired:
            raise CheckFailed(self.stage, "time budget exhausted", budget=True)
        handle = self.sandbox.load(self.source, hash_seed=hash_seed,
                                   clock_offset_s=clock_offset_s, clock_gap_s=clock_gap_s,
                                   restock=restock)  # fmt: skip
        with self.lock:
            self.handles.append(handle)
            expired = self.expired
        if expired:
            handle.close()
            raise CheckFailed(self.stage, "time budget exhausted", budget=True)
        return handle

    def _restock(self) -> None:
        """Fork the next spare worker of both hash seeds (the two workers' loads leave it
        to this): once the second worker is done, when one CPU is no longer busy with it,
        instead of while both workers start playing. Best effort: a load without a spare
        makes its worker itself."""
        for seed in self.cfg.hash_seeds:
            with contextlib.suppress(Exception):
                self.sandbox.restock(seed)

    def _close_all(self) -> None:
        for handle in self._handles():
            with contextlib.suppress(Exception):  # best effort; the sandbox reaps workers
                handle.close()

    def _join_second(self) -> None:
        second = self.state.second if self.state else None
        if second is not None:
            second.join(max(0.0, self.deadline - time.monotonic()) + 1.0)

    # -- stages that need the driver ----------------------------------------------------

    def _state(self) -> State:
        if self.state is None:
            raise RuntimeError("a stage ran before the environment was loaded")
        return self.state

    def _source(self) -> dict[str, Any]:
        self.facts = check_source(self.source, max_chars=self.cfg.max_source_chars)
        return {"class_name": self.facts.class_name, "kind": self.facts.kind}

    def _load(self) -> dict[str, Any]:
        if self.facts is None:
            raise RuntimeError("LOAD ran before SOURCE")
        # The determinism worker loads at the same time (its fork server may be cold).
        self.second_load = threading.Thread(target=self._load_second, daemon=True,
                                            name="spade-validate-load-b")  # fmt: skip
        self.second_load.start()
        try:
            handle = self._open(self.cfg.hash_seeds[0], restock=False)
        except EnvFault as fault:
            raise fault_failure(fault, "loading the module", Stage.LOAD) from None
        info = handle.info
        details = check_info(info, self.cfg, self.facts.class_name, self.facts.kind)
        tools = flat_tools(list(info.tools or []))
        if info.kind == "tool":
            check_schemas(tools)  # the probes call tools, so broken schemas fail first
        calls = Calls(
            handle,
            label="first worker",
            deadline=self.deadline,
            max_obs_chars=self.cfg.max_observation_chars,
            firsts=self.firsts,
        )
        self.state = State(cfg=self.cfg, hint=self.hint, info=info, a=calls, tools=tools,
                           base_seed=self.base_seed, fresh_calls=self._fresh_calls)
        return details

    def _types(self) -> dict[str, Any]:
        state = self._state()
        if self.second_load is not None:
            self.second_load.join(max(0.0, self.deadline - time.monotonic()))
        outcome = self.second_opened
        if isinstance(outcome, SandboxError) and not self.expired:
            raise outcome  # infrastructure, not the environment
        if isinstance(outcome, Calls):
            state.second = SecondWorker(state, outcome, done=self._restock)
        else:  # reported by the determinism stage
            error = outcome or CheckFailed(Stage.DETERMINISM, "time budget exhausted",
                                           budget=True)  # fmt: skip
            state.second = SecondWorker(state, None, error)
        return _behaviour.stage_types(state)

    def _load_second(self) -> None:
        try:
            self.second_opened = self._open_second()
        except (EnvFault, CheckFailed, SandboxError) as exc:
            self.second_opened = exc

    def _open_second(self) -> Calls:
        handle = self._open(self.cfg.hash_seeds[1], self.cfg.clock_offset_s,
                            self.cfg.clock_gap_s, restock=False)  # fmt: skip
        self.second_handle = handle
        calls = Calls(
            handle,
            label="second worker",
            deadline=self.deadline,
            max_obs_chars=self.cfg.max_observation_chars,
            firsts=self.firsts,
            about=f"with a different hash seed ({self.cfg.hash_seeds[1]}) and a shifted clock",
        )
        calls.stage = Stage.DETERMINISM
        return calls

    def _fresh_calls(self, answer_delay_s: float = 0.0) -> Calls:
        """A new worker (the first worker's hash seed, training's), for a check that needs
        a young process; every answer arrives ``answer_delay_s`` after its observation. Its
        handle is closed and its attempts checked like the others'."""
        try:
            handle = self._open(self.cfg.hash_seeds[0], 0.0, answer_delay_s)
        except EnvFault as fault:
            raise fault_failure(fault, "loading the module again", self.stage) from None
        calls = Calls(handle, label="fresh worker", deadline=self.deadline,
                      max_obs_chars=self.cfg.max_observation_chars, firsts=self.firsts,
                      about="a new process")  # fmt: skip
        calls.stage = self.stage
        return calls

    def _wait_second(self) -> dict[int, Episode]:
        """The second worker's recordings; its failures become determinism failures."""
        second = self._state().second
        if second is None:
            raise RuntimeError("the second worker was never started")
        if not second.join(max(0.0, self.deadline - time.monotonic())):
            raise CheckFailed(Stage.DETERMINISM, "time budget exhausted", budget=True)
        error = second.error
        if error is None:
            return second.episodes
        if isinstance(error, EnvFault):  # from loading the module
            error = fault_failure(error, "loading the module", Stage.DETERMINISM)
        if isinstance(error, CheckFailed):
            if error.stage == Stage.SAFETY or error.details.get("budget"):
                raise error
            raise CheckFailed(
                Stage.DETERMINISM,
                f"a second worker with hash seed {self.cfg.hash_seeds[1]} failed where the "
                f"first did not: {error.reason}",
            )
        raise error
