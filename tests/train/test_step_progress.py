"""Training progress lines: step k/N, the phase, elapsed time and ETA, a heartbeat while a
phase runs long, and no source file of ours in any line."""

from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console
from spade.train._progress import StepProgress, duration

METRICS = {"agent": {"solve_rate_unhinted": 0.25}, "train": {"loss": 0.5},
           "designer": {"valid": 1, "designs": 4}, "timing_s": {"step_s": 90.0}}


def _progress(total: int, **kw: float) -> tuple[StepProgress, io.StringIO]:
    sink = io.StringIO()
    console = Console(file=sink, width=200, force_terminal=False, log_path=False)
    return StepProgress(total, console=console, **kw), sink  # type: ignore[arg-type]


def test_lines_carry_step_phase_elapsed_and_eta() -> None:
    progress, sink = _progress(4, done=1)
    with progress:
        progress.say("designing 1 x 4 environments")
        progress.step(1, METRICS)
        progress.say("updating: GRPO on 12 samples")
    lines = [x for x in sink.getvalue().splitlines() if x.strip()]
    assert any(re.search(r"step 2/4 \| designing 1 x 4 environments \| elapsed \d+s \| "
                         r"ETA --", x) for x in lines), lines
    # one step of 90 s done, two left
    assert any("step 2/4 done" in x and "ETA 3m00s" in x for x in lines), lines
    assert any("step 3/4 | updating: GRPO on 12 samples" in x for x in lines), lines
    assert not any(".py:" in x for x in lines), lines


def test_a_long_phase_gets_a_heartbeat() -> None:
    progress, sink = _progress(2, heartbeat_s=0.2)
    beats: list[str] = []
    with progress:
        progress.say("designing 1 x 4 environments")
        deadline = time.monotonic() + 60  # waits for the first beat, however loaded the host
        while not beats and time.monotonic() < deadline:
            time.sleep(0.05)
            beats = [x for x in sink.getvalue().splitlines() if "still working" in x]
    assert beats and "designing 1 x 4 environments" in beats[0] and "step 1/2" in beats[0]


def test_durations_read_well() -> None:
    assert [duration(s) for s in (5, 302, 7500)] == ["5s", "5m02s", "2h05m"]


def test_the_default_console_names_no_source_file(capsys: pytest.CaptureFixture[str]) -> None:
    with StepProgress(3) as progress:
        progress.say("playing: 8 agent episodes")
    err = capsys.readouterr().err
    assert "step 1/3 | playing: 8 agent episodes" in err
    assert not re.search(r"\w+\.py:\d+", err), err
