"""The reporter: the only owner of a worker's violation record and of its reply pipe.

Every frame it writes is sealed (a keyed BLAKE2b tag over the frame's sequence number
and body, see :mod:`._wire`) and stamped with the violations recorded so far, so the
parent can tell the hook's frames from anything else written to the pipe.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any

from spade.sandbox import _wire


def make_reporter(
    reply_fd: int, write: Callable[[int, Any], int], max_records: int,
    seal: Callable[[bytes], bytes],
) -> tuple[Callable[..., Any], ...]:  # fmt: skip
    """``(record, deny, send)``: the only owner of the violation record and the reply fd.

    Every frame is sealed (``seal``: a keyed tag over its sequence number), so the parent
    rejects frames that anything else in the worker writes to the pipe.

    Counting a violation and writing its report happen under one lock, so a reply never
    claims a violation whose report has not been written yet.
    """
    import _thread
    import struct

    encode = _wire.make_encoder()
    header = struct.Struct(">I").pack
    lock = _thread.allocate_lock()
    len_, memoryview_, suppress_, os_error = len, memoryview, suppress, OSError
    permission_error = PermissionError
    records: list[list[str]] = []
    count = [0, 0]  # violations recorded, records already sent

    def send_locked(message: list[Any]) -> None:
        """Stamp ``message`` with the violations so far and write it (``lock`` held)."""
        message[3] = count[0]
        message[4] = records[count[1] :]
        count[1] = len_(records)
        body = seal(encode(message).encode("utf-8", "surrogatepass"))
        frame = header(len_(body)) + body
        sent = write(reply_fd, frame)  # one write: the pipe takes a whole small frame
        if sent != len_(frame):
            view = memoryview_(frame)[sent:]
            while view:
                view = view[write(reply_fd, view) :]

    def send(message: list[Any]) -> None:
        with lock:
            send_locked(message)

    def record(category: str, detail: str) -> None:
        with lock:  # count, record and report in one step (threads may record too)
            count[0] += 1
            if len_(records) < max_records:
                records.append([category, detail[:300]])
            with suppress_(os_error):  # the next reply carries the record too
                send_locked(["v", 0, None, 0, None, None])

    def deny(category: str, detail: str) -> None:
        record(category, detail)
        raise permission_error(f"sandbox: {category} access is not allowed ({detail})")

    return record, deny, send
