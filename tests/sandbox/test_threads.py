"""The sandbox under threads: server lifetime, close during a call, concurrent loads, fds.

Regression tests for reported bugs: a fork server started from a short-lived thread died
with that thread (Linux ties ``--die-with-parent`` to the thread), ``EnvHandle.close`` from
another thread raced with a call in flight, and concurrent loads occasionally handed out a
worker of a dead server ("the worker closed its control channel") and leaked fds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest
from _sandbox_envs import env_source
from _sandbox_procs import FAST_LIMITS, cpu_seconds, descendants

from spade.sandbox import EnvFault, EnvHandle, FaultKind, Sandbox, SandboxLimits


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def in_thread(fn: Callable[[], object]) -> list[object]:
    """Run ``fn`` in a short-lived thread; its result or exception in a list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # handed to the test
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    return out


def settle(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``check`` becomes true within ``seconds`` (background reaping is async)."""
    end = time.monotonic() + seconds
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def play(box: Sandbox) -> str:
    with box.load(env_source()) as env:
        obs, _ = env.reset(seed=0)
        env.step("go")
        return obs


def test_server_started_from_a_short_lived_thread_survives_it() -> None:
    with Sandbox("bwrap", FAST_LIMITS) as box:
        assert in_thread(lambda: play(box)) == ["obs"]  # starts the fork server
        server = box._servers[0]
        pid = server.proc.pid
        # Under the bug the thread's exit SIGKILLed bwrap (pdeathsig) within milliseconds.
        assert not settle(lambda: server.proc.poll() is not None, seconds=0.5)
        assert server.alive
        for _ in range(3):
            assert in_thread(lambda: play(box)) == ["obs"]
        assert box._servers[0] is server and server.proc.pid == pid and server.alive


def test_close_from_another_thread_interrupts_a_call() -> None:
    limits = SandboxLimits(call_timeout_s=60.0, load_timeout_s=10.0, memory_mb=1024)
    with Sandbox("bwrap", limits) as box:
        play(box)  # warm
        fds = open_fds()
        env = box.load(env_source(step="while True:\n    pass"))
        env.reset(seed=0)
        result: list[object] = []
        caller = threading.Thread(target=lambda: result.append(_fault_of(env.step, "x")))
        cpu = lambda: sum(cpu_seconds(p) for p in descendants(os.getpid()))  # noqa: E731
        idle = cpu()
        caller.start()
        deadline = time.monotonic() + 60  # a hang, however loaded the host
        while cpu() < idle + 0.1:  # the worker spins in step(): the call is in flight
            assert time.monotonic() < deadline, "the call never started"
            time.sleep(0.01)
        env.close()
        caller.join(20)  # far below the 60 s call timeout: the close woke the call
        assert not caller.is_alive(), "close() did not wake the call in flight"
        (fault,) = result
        assert isinstance(fault, EnvFault) and fault.kind == FaultKind.PROTOCOL, fault
        assert "closed" in fault.message
        with pytest.raises(EnvFault, match="worker is gone"):
            env.step("x")
        env.close()  # idempotent
        assert settle(lambda: open_fds() <= fds), (open_fds(), fds)
        assert play(box) == "obs"  # the sandbox is unharmed


def test_close_races_with_calls_without_errors_or_leaks(sandbox: Sandbox) -> None:
    play(sandbox)
    fds = open_fds()
    for delay in (0.0, 0.0005, 0.002, 0.01):
        env = sandbox.load(env_source())
        env.reset(seed=0)
        errors: list[BaseException] = []

        def hammer(env: EnvHandle = env, errors: list[BaseException] = errors) -> None:
            try:
                while True:
                    env.step("go")
            except EnvFault as fault:
                if "closed" not in fault.message and "worker is gone" not in fault.message:
                    errors.append(fault)
            except BaseException as exc:
                errors.append(exc)

        caller = threading.Thread(target=hammer)
        caller.start()
        time.sleep(delay)
        env.close()
        caller.join(20)
        assert not caller.is_alive() and errors == []
    assert settle(lambda: open_fds() <= fds), (open_fds(), fds)


def test_calls_on_one_handle_from_two_threads_are_serialised(sandbox: Sandbox) -> None:
    src = env_source(step="self.count = getattr(self, 'count', 0) + 1", obs="'obs'")
    done = "return 'done', 1.0, True, False, {}"
    src = src.replace(done, "return str(self.count), 0.0, False, False, {}")
    with sandbox.load(src) as env:
        env.reset(seed=0)
        seen: list[str] = []

        def steps() -> None:
            for _ in range(200):
                seen.append(env.step("go")[0])

        threads = [threading.Thread(target=steps) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(map(int, seen)) == list(range(1, 401))


def test_concurrent_loads_then_single_loads() -> None:
    """The reported failure: 8 threads load, then a later single load found a dead worker."""
    fds, procs = open_fds(), descendants(os.getpid())  # other tests' sandbox may be running
    with Sandbox("bwrap", FAST_LIMITS) as box:  # cold: a thread starts the server
        failures: list[BaseException] = []

        def loads() -> None:
            for _ in range(6):
                try:
                    assert play(box) == "obs"
                except BaseException as exc:
                    failures.append(exc)

        threads = [threading.Thread(target=loads) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        for _ in range(10):
            assert play(box) == "obs"
        assert failures == []
        assert len(box._servers) == 1
    # Another test's sandbox may fork or reap its own spare workers meanwhile: only what
    # is not below one of the processes that were already running counts.
    theirs = set().union(*(descendants(pid) for pid in procs))
    assert descendants(os.getpid()) - theirs <= procs
    assert open_fds() <= fds, (open_fds(), fds)


def test_no_fd_or_process_leak_over_load_close_cycles(sandbox: Sandbox) -> None:
    play(sandbox)
    fds, procs = open_fds(), len(descendants(os.getpid()))
    for _ in range(150):
        sandbox.load(env_source()).close()
    assert open_fds() == fds
    assert settle(lambda: len(descendants(os.getpid())) <= procs)


def _fault_of(fn: Callable[..., object], *args: object) -> object:
    try:
        return fn(*args)
    except EnvFault as fault:
        return fault
