"""Hostile environments in a training pool: their neighbours play exactly as they play alone.

The training loop plays every valid design in one ``HandlePool`` (instances reused between
episodes, many workers of one fork server at once). Red-team modules that reach for what
workers could once share -- the kernel's lock and notification tables, the thread count,
pipe buffers, the control pipes from C -- are played next to a valid environment on the
same seeds; the valid plays must not change, and each hostile play ends as that
environment's own error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade.cycle._pool import HandlePool
from spade.episodes import EpisodeJob, StopReason, Trajectory, run_episodes
from spade.policy import Message, SamplingParams, ScriptedPolicy
from spade.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.bwrap
CORPUS = Path(__file__).resolve().parents[1] / "validate" / "redteam"
VALID = "v_hint_two_numbers_example.py"
HOSTILE = (
    "h_flock_second_instance.py",
    "h_posix_lock_probe.py",
    "h_dnotify_runtime_dir.py",
    "h_faulthandler_control_fd.py",
    "h_writev_control_fd.py",
    "h_pipe_pages_hog.py",
    "h_thread_swarm.py",
    "h_info_deep_nesting.py",
)
SUM = re.compile(r"What is (\d+) \+ (\d+)\?")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    # calls may take long on a loaded machine; what is compared is what was played
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=30.0, load_timeout_s=60.0)) as box:
        yield box


def _agent(messages: list[Message]) -> str:
    """Adds the two numbers of the task (wins the valid environment on every seed)."""
    found = SUM.search(str(messages[-1]["content"]))
    return str(int(found.group(1)) + int(found.group(2))) if found else "0"


def _play(sandbox: Sandbox, jobs: list[EpisodeJob]) -> list[Trajectory]:
    sources = {env_id: (CORPUS / env_id).read_text(encoding="utf-8")
               for env_id in {j.env_id for j in jobs}}  # fmt: skip
    with HandlePool(sandbox, sources) as pool:
        return run_episodes(ScriptedPolicy(_agent), jobs, pool, SamplingParams(max_new_tokens=64))


def _same_play(a: Trajectory, b: Trajectory) -> bool:
    return (a.token_ids, a.rewards, a.stop_reason, a.env_fault) == (
        b.token_ids, b.rewards, b.stop_reason, b.env_fault)


def test_hostile_neighbours_in_a_training_pool_change_no_valid_play(sandbox: Sandbox) -> None:
    seeds = (11, 12, 13)
    alone = _play(sandbox, [EpisodeJob(VALID, s) for s in seeds])
    assert all(t.stop_reason is StopReason.WON for t in alone), [t.stop_reason for t in alone]
    mixed = [EpisodeJob(env_id, s) for s in seeds for env_id in (VALID, *HOSTILE)]
    together = _play(sandbox, mixed)
    played = [t for t in together if t.env_id == VALID]
    assert all(_same_play(a, b) for a, b in zip(alone, played, strict=True))
    hostile = [t for t in together if t.env_id != VALID]
    assert all(t.stop_reason is StopReason.ENV_ERROR and t.env_fault for t in hostile), [
        (t.env_id, t.stop_reason) for t in hostile if t.stop_reason is not StopReason.ENV_ERROR]
