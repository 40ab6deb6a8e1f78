"""The parent's side of the control protocol on its own: frames, deadlines, value checks.

The worker caps its replies too, but only the parent's checks count (the worker is
untrusted), so they are exercised here with raw bytes instead of a cooperative worker.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import pytest

from spade.sandbox import Opaque, _wire


@pytest.fixture(params=[0, 100], ids=["blocking", "spinning"])
def channel(request: pytest.FixtureRequest) -> Iterator[tuple[_wire.Channel, int]]:
    """A channel whose reply pipe we write to directly (the write end is returned), with
    and without polling before it blocks."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    os.set_blocking(req_w, False)
    chan = _wire.Channel(req_w, rep_r, max_bytes=1000, spin_us=request.param)
    yield chan, rep_w
    chan.close()
    for fd in (req_r, rep_w):
        with contextlib.suppress(OSError):
            os.close(fd)


def frame(body: bytes) -> bytes:
    return _wire.HEADER.pack(len(body)) + body


def soon() -> float:
    return time.monotonic() + 2.0


def test_frames_split_and_joined_arrive_whole(channel: tuple[_wire.Channel, int]) -> None:
    chan, rep_w = channel
    data = frame(b'["r",1,2]') + frame(b'["v",0]')
    os.write(rep_w, data[:3])
    os.write(rep_w, data[3:12])
    os.write(rep_w, data[12:])
    assert chan.read(soon()) == b'["r",1,2]'
    assert chan.pending()
    assert chan.read(soon()) == b'["v",0]'


def test_oversize_frame_is_refused_from_its_header(channel: tuple[_wire.Channel, int]) -> None:
    chan, rep_w = channel
    os.write(rep_w, _wire.HEADER.pack(10**9) + b"x" * 100)
    with pytest.raises(_wire.WireError, match="exceeds the limit of 1000 bytes"):
        chan.read(soon())


def test_silence_times_out_and_eof_is_a_closed_channel(
    channel: tuple[_wire.Channel, int],
) -> None:
    chan, rep_w = channel
    with pytest.raises(_wire.ReadTimeout):
        chan.read(time.monotonic() + 0.05)
    with pytest.raises(_wire.ReadTimeout):
        chan.read(None)  # a drain never blocks
    os.write(rep_w, frame(b"[1]")[:5])  # half a frame, then the worker dies
    os.close(rep_w)
    with pytest.raises(_wire.ChannelClosed):
        chan.read(soon())


def test_spinning_returns_on_data_and_gives_up_after_its_window() -> None:
    import select

    r, w = os.pipe()
    try:
        poller = select.poll()
        poller.register(r, select.POLLIN)
        assert not _wire.spin_until_readable(poller.poll, 0.0)  # 0: block at once
        start = time.perf_counter()
        assert not _wire.spin_until_readable(poller.poll, 0.002, os.sched_yield)
        assert time.perf_counter() - start >= 0.002
        os.write(w, b"x")
        assert _wire.spin_until_readable(poller.poll, 10.0)  # returns at once: data is there
        read = _wire.spinning_reader(os.read, r, 100)
        assert read(r, 10) == b"x"
        os.close(w)
        assert read(r, 10) == b""  # a hang-up ends the wait like data does
    finally:
        os.close(r)
        with contextlib.suppress(OSError):
            os.close(w)


def test_the_waiter_stops_polling_for_a_slow_peer_and_resumes_for_a_quick_one() -> None:
    import select

    r, w = os.pipe()
    poller = select.poll()
    poller.register(r, select.POLLIN)
    polls = [0]

    def poll(timeout: int | None) -> list:
        polls[0] += 1
        return poller.poll(timeout)

    blocked: list[int] = []

    def block() -> bool:  # a blocking wait: a peer with nothing to send is slow
        blocked.append(polls[0])
        if not poller.poll(0):
            time.sleep(0.1)
        return bool(poll(0))

    try:
        wait = _wire.make_waiter(poll, 50_000)  # windows wide enough for a loaded machine
        assert wait(block) is False and polls[0] > 2 and len(blocked) == 1  # polled, missed
        before = polls[0]
        assert wait(block) is False and blocked[-1] == before  # slow peer: blocks at once
        os.write(w, b"x")
        assert wait(block) is True and len(blocked) == 3  # still blocking; this one was quick
        assert wait(block) is True and len(blocked) == 3  # ... so polling resumes
        assert _wire.make_waiter(poll, 0)(block) is True and len(blocked) == 4  # 0: never polls
    finally:
        os.close(r)
        os.close(w)


def test_values_are_rechecked() -> None:
    assert _wire.from_wire({"T": [1, [2, {"D": {"k": {"T": []}}}]]}) == (1, [2, {"k": ()}])
    assert _wire.from_wire({"O": ["set", "{1}"]}) == Opaque("set", "{1}")
    for bad in ({"k": 1}, {"T": 1}, {"D": []}, {"O": ["a"]}, {"X": []}, {"T": [], "D": {}}):
        with pytest.raises(_wire.WireError):
            _wire.from_wire(bad)
    with pytest.raises(_wire.WireError):
        _wire.from_wire([1, [2, {"bad": 3}]])  # found below the fast path for scalars


def test_nesting_is_capped() -> None:
    ok: object = "leaf"
    for _ in range(_wire.MAX_DEPTH):
        ok = [ok]
    assert _wire.from_wire(ok) == ok
    with pytest.raises(_wire.WireError, match="nested deeper"):
        _wire.from_wire([ok])


def test_encoding_keeps_text_exact() -> None:
    message = [5, "step", ["\u00e9\U0001f600\ud800 \"quoted\" \\ \n"]]
    body = _wire.encode_frame(message)[4:]
    assert _wire.decode_body(body) == message
    with pytest.raises(_wire.WireError, match="malformed frame"):
        _wire.decode_body(b"[1, 2")


def test_a_reply_with_a_lone_surrogate_is_flagged_and_refused() -> None:
    body = '[["r", 1, "caf\udc80", 0, [], null]]'.encode("utf-8", "surrogatepass")
    value, suspect = _wire.decode_reply(body)
    assert suspect
    with pytest.raises(_wire.WireError, match="not valid UTF-8"):
        _wire.check_value(value)
    escaped = b'["r", 1, ["ok", "\\ud800"], 0, [], null]'  # the escape a forger would use
    value, suspect = _wire.decode_reply(escaped)
    assert suspect
    with pytest.raises(_wire.WireError, match="not valid UTF-8"):
        _wire.check_value(value)


def test_integers_beyond_a_float_are_refused_and_normal_ones_pass_fast() -> None:
    value, suspect = _wire.decode_reply(b"[%d]" % 10**400)
    assert suspect
    with pytest.raises(_wire.WireError, match="bits"):
        _wire.check_value(value)
    value, suspect = _wire.decode_reply(b'["caf\xc3\xa9", 12345678901234567890, 1e300]')
    assert not suspect
    _wire.check_value(value)  # nothing wrong
    # The shortest digit run that can be too big is found whatever else the body holds.
    assert _wire.decode_reply(b"9" * 309)[1]
    assert not _wire.decode_reply(b"9" * 308)[1]


def test_reports_are_scrubbed_not_refused() -> None:
    assert _wire.scrubbed([["filesystem", "open /tmp/\udc80"]]) == [["filesystem", "open /tmp/?"]]
    assert _wire.scrubbed(None) is None
