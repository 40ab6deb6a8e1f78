"""Frames and values on the control pipes between the parent and a worker.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. Values
are plain JSON with three tagged objects so that nothing is lost: ``{"T": [...]}`` is a
tuple, ``{"D": {...}}`` a dict (keys already text) and ``{"O": [type, text]}`` an
:class:`Opaque`. Every JSON object on the wire is a tag, so decoding is unambiguous.

The parent never trusts what a worker sends: :class:`FrameReader` caps the frame size,
and :func:`from_wire` re-checks the structure (depth, tags, types) instead of assuming it.
Nothing from a worker is ever unpickled.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import select
import struct
import time
from collections.abc import Callable
from typing import Any

from spade.sandbox._types import Opaque

HEADER = struct.Struct(">I")
#: Every worker frame starts with a keyed BLAKE2b tag over its sequence number and body.
TAG_BYTES = 16
KEY_BYTES = 16
#: Deepest value nesting accepted in either direction.
MAX_DEPTH = 64
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=True, separators=(",", ":"))
#: Value types that stand for themselves on the wire (checked with ``type(v) in``).
SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})


class WireError(Exception):
    """A frame or value that breaks the protocol."""


class ChannelClosed(WireError):
    """The other end closed its side of the channel."""


class ReadTimeout(WireError):
    """No complete frame arrived before the deadline."""


def make_encoder() -> Callable[[Any], str]:
    """A JSON encoder for plain values bound to the C implementation (no Python wrapper)."""
    from _json import encode_basestring
    from _json import make_encoder as c_make_encoder

    def refuse(value: Any) -> Any:
        raise TypeError(f"cannot encode {type(value).__name__}")

    c_encode = c_make_encoder(None, refuse, encode_basestring, None, ":", ",",
                              False, False, True)  # fmt: skip

    def encode(message: Any, _join: Any = "".join, _enc: Any = c_encode) -> str:
        return _join(_enc(message, 0))

    return encode


#: Encodes plain JSON values (the parent's requests); see :func:`make_encoder`.
encode = make_encoder()


def make_decoder() -> Callable[[str], Any]:
    """``decode(text)``: one JSON document, nothing around it, through the C scanner alone.

    ``json.JSONDecoder.decode`` wraps the same scanner in two regular-expression passes for
    surrounding whitespace; frames carry none (both encoders write compact JSON), so
    whitespace, trailing data and an empty body are all malformed. Raises ``ValueError``.
    """
    from _json import make_scanner as c_make_scanner

    scan = c_make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
    len_, stop, value_error = len, StopIteration, ValueError

    def decode(text: str) -> Any:
        try:
            value, end = scan(text, 0)
        except stop:
            raise value_error("not a JSON document") from None
        if end != len_(text):
            raise value_error(f"trailing data at character {end}")
        return value

    return decode


_decode = make_decoder()


def encode_frame(message: Any) -> bytes:
    """One frame holding ``message`` (plain JSON values only)."""
    body = encode(message).encode("utf-8", "surrogatepass")
    return HEADER.pack(len(body)) + body


def _keyed(key: bytes) -> Any:
    """A keyed BLAKE2b state with the key block already absorbed (copied per frame:
    the same tag as ``blake2b(data, key=key)`` at a third of the cost)."""
    from _blake2 import blake2b

    return blake2b(key=key, digest_size=TAG_BYTES)


def make_sealer(key: bytes) -> Callable[[bytes], bytes]:
    """``seal(body) -> tag + body`` for the worker side; the sequence number is internal."""
    start = _keyed(key)
    copy = type(start).copy
    counter = [0]
    pack = struct.Struct(">Q").pack

    def seal(body: bytes) -> bytes:
        state = copy(start)
        state.update(pack(counter[0]) + body)
        counter[0] += 1
        return state.digest() + body

    return seal


def make_opener(key: bytes) -> Callable[[bytes], bytes]:
    """``open_frame(frame) -> body`` for the parent: checks the tag of the worker's next
    frame (sequence numbers counted here) and raises :class:`WireError` if it is not the
    worker's; a frame that fails leaves the count where it was."""
    import hmac

    start = _keyed(key)
    copy, compare = type(start).copy, hmac.compare_digest
    counter = [0]
    pack = struct.Struct(">Q").pack

    def open_frame(frame: bytes) -> bytes:
        body = frame[TAG_BYTES:]
        state = copy(start)
        state.update(pack(counter[0]) + body)
        if not compare(state.digest(), frame[:TAG_BYTES]):
            raise WireError(
                "a frame not sealed by the worker's sandbox (forged, replayed or out of "
                "order: the report channel was tampered with)"
            )
        counter[0] += 1
        return body

    return open_frame


def decode_body(body: bytes) -> Any:
    """Parse one frame body; :class:`WireError` on anything that is not JSON."""
    return decode_reply(body)[0]


#: Largest integer magnitude a reply may carry: what a float can hold. The worker sends a
#: bigger one as an :class:`Opaque`; a frame that holds one anyway is malformed.
INT_LIMIT = 1 << 1024
#: Digits in the shortest integer at or beyond ``INT_LIMIT``.
_SUSPECT_DIGITS = 309
#: What sends a frame down the slow path: a JSON escape of a UTF-16 surrogate, or a run of
#: digits long enough for an integer beyond ``INT_LIMIT`` (or only a long digit string).
#: A body without a ``\u`` and shorter than that run cannot match: the search is skipped.
_SUSPECT = re.compile(rb"\\u[dD][89a-fA-F]|[0-9]{%d}" % _SUSPECT_DIGITS)


def decode_reply(body: bytes) -> tuple[Any, bool]:
    """``(value, suspect)``: one frame body parsed; ``suspect`` when it may hold a lone
    surrogate or a huge integer (then :func:`check_value` and :func:`scrubbed` decide).

    Well-formed UTF-8 is decoded strictly in C; only a frame that is not (or that matches
    ``_SUSPECT``) is decoded again keeping its surrogates, to say what is wrong with it."""
    try:
        try:
            text, suspect = body.decode("utf-8"), (
                (b"\\u" in body or len(body) >= _SUSPECT_DIGITS)
                and _SUSPECT.search(body) is not None
            )
        except UnicodeDecodeError:
            text, suspect = body.decode("utf-8", "surrogatepass"), True
        return _decode(text), suspect
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise WireError(f"malformed frame: {type(exc).__name__}: {str(exc)[:120]}") from None


def check_value(value: Any, what: str = "the reply") -> None:
    """:class:`WireError` if ``value`` holds text that is not valid UTF-8 (a lone
    surrogate) or an integer beyond ``INT_LIMIT``; walks without recursion."""
    todo, seen = [value], 0
    while todo:
        item = todo.pop()
        seen += 1
        kind = type(item)
        if kind is str:
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise WireError(f"{what} holds text that is not valid UTF-8 ({exc.reason} "
                                    f"at character {exc.start})") from None  # fmt: skip
        elif kind is int:
            if not -INT_LIMIT < item < INT_LIMIT:
                raise WireError(f"{what} holds an integer of {item.bit_length()} bits")
        elif kind is list:
            todo += item
        elif kind is dict:
            todo += item.keys()
            todo += item.values()


def scrubbed(value: Any) -> Any:
    """``value`` with every lone surrogate in its text replaced (reports and output, which
    are shown, never judged)."""
    kind = type(value)
    if kind is str:
        return value.encode("utf-8", "replace").decode("utf-8") if not value.isascii() else value
    if kind is list:
        return [scrubbed(v) for v in value]
    return value


def to_wire(value: Any, depth: int = 0) -> Any:
    """Encode a trusted parent-side value (call arguments) in the tagged form."""
    if depth > MAX_DEPTH:
        raise WireError(f"argument nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [to_wire(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"T": [to_wire(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"D": {str(k): to_wire(v, depth + 1) for k, v in value.items()}}
    raise WireError(f"cannot send a {type(value).__name__} to an environment")


def from_wire(value: Any, depth: int = 0, _scalars: frozenset[type] = SCALARS) -> Any:
    """Decode a tagged value, checking its structure; :class:`WireError` if malformed.

    Scalars inside containers are taken as they are without a call per item (the hot
    path of a step reply is one tuple of scalars and one small dict).
    """
    kind = type(value)
    if kind in _scalars:
        return value  # NaN and infinities are kept: the validator judges them
    if depth >= MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
    depth += 1
    if kind is list:
        return [v if type(v) in _scalars else from_wire(v, depth) for v in value]
    if kind is dict and len(value) == 1:
        (tag, inner), = value.items()
        if tag == "T" and type(inner) is list:
            return tuple([v if type(v) in _scalars else from_wire(v, depth) for v in inner])
        if tag == "D" and type(inner) is dict:
            return {k: v if type(v) in _scalars else from_wire(v, depth)
                    for k, v in inner.items()}  # fmt: skip
        if (
            tag == "O"
            and type(inner) is list
            and len(inner) == 2
            and all(type(x) is str for x in inner)
        ):
            return Opaque(inner[0][:200], inner[1][:200])
    raise WireError(f"malformed value of type {kind.__name__}")


def is_finite_number(value: Any) -> bool:
    """True for an int or a finite float (bools excluded)."""
    if type(value) is int:
        return True
    return type(value) is float and math.isfinite(value)


def spin_until_readable(poll: Callable[[int], list[Any]], spin_s: float,
                        pause: Callable[[], None] | None = None,
                        clock: Callable[[], float] = time.perf_counter) -> bool:
    """Poll without blocking for up to ``spin_s``; True as soon as ``poll`` reports data.
    ``pause`` (``os.sched_yield``) between polls lets other runnable processes go first."""
    if spin_s <= 0:
        return False
    end = clock() + spin_s
    while not poll(0):
        if clock() >= end:
            return False
        if pause is not None:
            pause()
    return True


def make_waiter(poll: Callable[[int | None], list[Any]], spin_us: int,
                clock: Callable[[], float] = time.perf_counter
                ) -> Callable[[Callable[[], bool]], bool]:
    """``wait(block)``: True once ``poll`` reports the fd readable, polling for up to
    ``spin_us`` before ``block()`` (a blocking wait with its own deadline) decides.

    Adaptive: once a poll window passes without data (the other end is slower than the
    window, e.g. a worker whose caller is busy with other workers), the next waits block
    at once, until one of them ends within the window again. So polling is paid only
    where calls come back to back (see ``SandboxLimits.spin_us``)."""
    spin_s, spin, pause = spin_us / 1e6, spin_until_readable, os.sched_yield
    eager = [spin_s > 0]

    def wait(block: Callable[[], bool]) -> bool:
        if eager[0]:
            if spin(poll, spin_s, pause, clock):
                return True
            eager[0] = False
            return block()
        start = clock()
        ready = block()
        eager[0] = spin_s > 0 and clock() - start < spin_s
        return ready

    return wait


def spinning_reader(read: Callable[[int, int], bytes], fd: int, spin_us: int
                    ) -> Callable[[int, int], bytes]:
    """``read`` behind a :func:`make_waiter` on ``fd``: the worker's wait for its next
    request."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poll = poller.poll
    wait = make_waiter(poll, spin_us)

    def block() -> bool:
        return bool(poll(None))

    def spinning_read(fd: int, n: int) -> bytes:
        wait(block)
        return read(fd, n)

    return spinning_read


class Channel:
    """The parent's ends of one worker's control pipes: size-capped frames with deadlines.

    A round trip is one ``write``, one ``poll`` and one ``read``; a reply that arrives
    whole in one read (the usual case) is sliced out without going through the buffer.
    Pipes beat a socket pair here by a few microseconds per round trip (measured).
    """

    def __init__(self, req_fd: int, rep_fd: int, max_bytes: int, spin_us: int = 0) -> None:
        self.req_fd, self.rep_fd = req_fd, rep_fd
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._poll = select.poll()
        self._poll.register(rep_fd, select.POLLIN)
        self._wait = make_waiter(self._poll.poll, spin_us)

    def send(self, data: bytes, deadline: float) -> None:
        """Write one whole frame to the (non-blocking) request pipe before ``deadline``."""
        try:
            sent = os.write(self.req_fd, data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise ChannelClosed(f"the worker closed its control channel ({exc})") from None
        if sent == len(data):
            return
        view = memoryview(data)[sent:]
        poller = select.poll()
        poller.register(self.req_fd, select.POLLOUT)
        while view:
            remaining = math.ceil((deadline - time.monotonic()) * 1000)
            if remaining <= 0 or not poller.poll(remaining):
                raise ReadTimeout("the worker stopped reading its requests")
            try:
                view = view[os.write(self.req_fd, view) :]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ChannelClosed(f"the worker closed its control channel ({exc})") from None

    def pending(self) -> bool:
        """Whether a complete frame is already buffered."""
        if len(self._buf) < 4:
            return False
        return len(self._buf) >= 4 + HEADER.unpack_from(self._buf)[0]

    def read(self, deadline: float | None) -> bytes:
        """The next frame body; raises ChannelClosed, ReadTimeout or WireError (oversize).

        ``deadline`` is a ``time.monotonic()`` value; ``None`` only drains what is buffered
        or immediately readable (never blocks).
        """
        buf = self._buf
        if not buf:
            chunk = self._chunk(deadline)
            if len(chunk) >= 4:
                size = HEADER.unpack_from(chunk)[0]
                if len(chunk) == 4 + size and size <= self.max_bytes:
                    return chunk[4:]
            buf += chunk
        while True:
            if len(buf) >= 4:
                size = HEADER.unpack_from(buf)[0]
                if size > self.max_bytes:
                    raise WireError(
                        f"reply of {size} bytes exceeds the limit of {self.max_bytes} bytes"
                    )
                if len(buf) >= 4 + size:
                    body = bytes(buf[4 : 4 + size])
                    del buf[: 4 + size]
                    return body
            buf += self._chunk(deadline)

    def close(self) -> None:
        for fd in (self.req_fd, self.rep_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _chunk(self, deadline: float | None) -> bytes:
        while True:
            if deadline is None:
                ready = bool(self._poll.poll(0))
            else:
                def block(deadline: float = deadline) -> bool:
                    timeout_ms = max(0, math.ceil((deadline - time.monotonic()) * 1000))
                    return bool(self._poll.poll(timeout_ms))

                ready = self._wait(block)
            if not ready:
                raise ReadTimeout("no reply before the deadline")
            try:
                chunk = os.read(self.rep_fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ChannelClosed(f"control pipe failed: {exc}") from None
            if not chunk:
                raise ChannelClosed("the worker closed its control channel")
            return chunk
