"""Sandbox speed: step round trips, env start latency, validations per second.

Prints ONE JSON object. Targets: isolated step round trip <= 100 us
(``isolated_steps_per_s`` >= 10,000) and within 3x of the unisolated worker; env start from
the pool <= 10 ms median; >= 20 validations/s. ``instance_start_ms_median`` is the cost
of one instance from nothing but a running fork server (fork, hardening, load). The
baselines (the same env in-process, and in a persistent worker without isolation) are
measured in the same run, so the ratios stay meaningful on a loaded machine where
absolute numbers drift; the load average before and after is printed.

    python benchmarks/sandbox.py [--steps N] [--starts N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spade.envs.examples import list_examples, load_example_class
from spade.sandbox import EnvHandle, Sandbox

BENCH_ENV = "number_guess"


def steps_per_s(step: Any, n: int) -> float:
    step("5000")  # warm
    start = time.perf_counter()
    for _ in range(n):
        step("5000")
    return n / (time.perf_counter() - start)


def inprocess(n: int) -> float:
    env = load_example_class(BENCH_ENV)()
    env.reset(seed=0)
    return steps_per_s(env.step, n)


def in_worker(box: Sandbox, n: int) -> float:
    source = next(e for e in list_examples() if e.name == BENCH_ENV).source()
    with box.load(source) as env:
        env.reset(seed=0)
        return steps_per_s(env.step, n)


def pool_start_ms(box: Sandbox, n: int, gap_s: float) -> tuple[float, float]:
    """Median ms of ``load`` (8 alive at a time) and of ``EnvHandle.close``.

    ``gap_s`` is the pause before each load: with a pause, the next spare worker has been
    forked and hardened (what a caller that plays the env between loads sees); without one,
    back-to-back loads also wait for the spare to be made.
    """
    source = next(e for e in list_examples() if e.name == BENCH_ENV).source()
    box.load(source).close()  # start the fork server
    times, closes = [], []
    handles: list[EnvHandle] = []

    def close_all() -> None:
        for handle in handles:
            start = time.perf_counter()
            handle.close()
            closes.append((time.perf_counter() - start) * 1000)
        handles.clear()

    for _ in range(n):
        time.sleep(gap_s)
        start = time.perf_counter()
        handles.append(box.load(source))
        times.append((time.perf_counter() - start) * 1000)
        if len(handles) >= 8:
            close_all()
    close_all()
    return statistics.median(times), statistics.median(closes)


def instance_start_ms(box: Sandbox, n: int) -> float:
    """Median ms to make one environment instance from nothing but a running fork server:
    spawn, fork, harden (rlimits, Landlock, seccomp, the audit hook), then the load round
    trip -- what ``load`` costs when no spare worker is ready."""
    from spade.sandbox._handle import EnvHandle as Handle

    source = next(e for e in list_examples() if e.name == BENCH_ENV).source()
    server = box._server(0)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        handle = Handle(server, box.limits)
        handle._load(source, "<env>")
        times.append((time.perf_counter() - start) * 1000)
        handle.close()
    return statistics.median(times)


def fresh_start_ms(n: int) -> float:
    """A fresh interpreter that imports the runtime and constructs the env (no pool)."""
    code = (
        "import spade.envs, spade.envs.examples as e, numpy, gymnasium;"
        f"e.load_example_class({BENCH_ENV!r})().reset(seed=0)"
    )
    root = str(Path(__file__).resolve().parent.parent)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=root,
                       env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"})  # fmt: skip
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def validations(box: Sandbox, rounds: int) -> tuple[float | None, str | None, int]:
    try:
        from spade.validate import validate_env
    except ImportError as exc:
        return None, f"spade.validate.validate_env is not available: {exc}", 0
    sources = [e.source() for e in list_examples()]
    validate_env(sources[0], sandbox=box)  # warm both fork servers
    valid, start = 0, time.perf_counter()
    for _ in range(rounds):
        for source in sources:
            valid += bool(validate_env(source, sandbox=box).valid)
    return rounds * len(sources) / (time.perf_counter() - start), None, valid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=40)
    parser.add_argument("--fresh", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result: dict[str, Any] = {"env": BENCH_ENV, "load_average_before": os.getloadavg()[0]}
    result["inprocess_steps_per_s"] = round(inprocess(args.steps))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        weak = Sandbox("none", allow_weak=True)
    with weak:
        result["worker_steps_per_s"] = round(in_worker(weak, args.steps))
    with Sandbox("bwrap") as box:
        result["isolated_steps_per_s"] = round(in_worker(box, args.steps))
        start_ms, close_ms = pool_start_ms(box, args.starts, gap_s=0.03)
        result["pool_start_ms_median"] = round(start_ms, 2)
        result["pool_start_back_to_back_ms_median"] = round(
            pool_start_ms(box, args.starts, gap_s=0.0)[0], 2
        )
        result["close_ms_median"] = round(close_ms, 3)
        result["instance_start_ms_median"] = round(instance_start_ms(box, args.starts), 2)
        result["landlock_abi"] = box.landlock
        rate, reason, valid = validations(box, args.rounds)
    result["worker_step_us"] = round(1e6 / result["worker_steps_per_s"], 1)
    result["isolated_step_us"] = round(1e6 / result["isolated_steps_per_s"], 1)
    result["isolated_vs_worker_ratio"] = round(
        result["worker_steps_per_s"] / result["isolated_steps_per_s"], 2
    )
    result["inprocess_vs_isolated_ratio"] = round(
        result["inprocess_steps_per_s"] / result["isolated_steps_per_s"], 1
    )
    result["fresh_start_ms_median"] = round(fresh_start_ms(args.fresh), 1)
    result["validations_per_s"] = None if rate is None else round(rate, 2)
    if reason:
        result["validations_reason"] = reason
    else:
        result["validations_valid"] = f"{valid}/{args.rounds * len(list_examples())}"
    result["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
