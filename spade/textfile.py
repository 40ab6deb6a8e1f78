"""Read a user-supplied text file, or fail with one line saying which file and why; write
a result file atomically.

Configs, replay files and sample files are text. A binary file, a directory or an
unreadable path given where text is expected must stop the command with a clear message
(exit 2), not a ``UnicodeDecodeError`` traceback.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from spade.errors import UserError


def read_text(path: str | Path, what: str = "file") -> str:
    """The file's UTF-8 text; UserError when it is missing, a directory, binary or not UTF-8."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} not found: {p}")
    if not p.is_file():
        raise UserError(f"{what} {p} is not a regular file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise UserError(f"{what} {p} is unreadable ({exc.strerror or exc})") from None
    return decode_text(raw, p, what)


def decode_text(raw: bytes, path: str | Path, what: str = "file") -> str:
    """``raw`` as UTF-8 text, refusing binary content (a NUL byte or invalid UTF-8)."""
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise UserError(f"{what} {path}:{line} is binary, not text (NUL byte)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{what} {path}:{line} is not UTF-8 text (binary file?)") from None


def fsync_dir(path: str | Path) -> None:
    """Make a rename or a new entry in the folder ``path`` durable (best effort where the
    platform cannot open folders)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``path`` so a reader or a crash sees the old content or the new, never a part:
    a temporary file beside it, flushed to disk, then renamed over it."""
    target = Path(path)
    mode = target.stat().st_mode & 0o777 if target.is_file() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))
