"""The project's file IO: read a user-supplied text file, or fail with one line saying
which file and why; write a file atomically; read, write and append JSON lines.

Configs, replay files and sample files are text. A binary file, a directory or an
unreadable path given where text is expected must stop the command with a clear message
(exit 2), not a ``UnicodeDecodeError`` traceback. Every file a job publishes is written
whole or not at all (a crash leaves the old content), and every append is on disk before
the job goes on, so a killed job resumes from what it wrote. A folder published whole
(a checkpoint, a converted model, a results folder) is flushed to disk before the rename
that makes it visible.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from spade.errors import UserError


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """The file's UTF-8 text; UserError when it is missing, a directory, binary or not UTF-8."""
    return decode_text(read_bytes(path, what), path, what)


def read_bytes(path: str | os.PathLike[str], what: str = "file") -> bytes:
    """The file's bytes; UserError when it is missing, a directory or unreadable."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} not found: {p}")
    if not p.is_file():
        raise UserError(f"{what} {p} is not a regular file")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise UserError(f"{what} {p} is unreadable ({exc.strerror or exc})") from None


def decode_text(raw: bytes, path: str | os.PathLike[str], what: str = "file") -> str:
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


def fsync_dir(path: str | os.PathLike[str]) -> None:
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


_PARTIAL_SUFFIX = ".tmp"
#: What a write killed before its rename leaves: ``.<name>.<8 random characters>.tmp``.
_PARTIAL = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}" + re.escape(_PARTIAL_SUFFIX))


def partial_write_of(name: str) -> str | None:
    """The file name a leftover temporary of :func:`atomic_write_bytes` was to become, or
    ``None`` when ``name`` is not one: a job killed mid-write may leave one beside its
    files, and its run directory still counts as its own."""
    match = _PARTIAL.fullmatch(name)
    return match["name"] if match else None


@contextlib.contextmanager
def _replacing(target: Path) -> Iterator[Any]:
    """A binary file to fill; on a clean exit it is flushed to disk and renamed over
    ``target`` (keeping ``target``'s permissions), on an error it is removed."""
    mode = target.stat().st_mode & 0o777 if target.is_file() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=_PARTIAL_SUFFIX,
                               dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``path`` so a reader or a crash sees the old content or the new, never a part:
    a temporary file beside it, flushed to disk, then renamed over it."""
    target = Path(path)
    with _replacing(target) as fh:
        fh.write(data)
    return target


def atomic_copy(source: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """Copy the file ``source`` to ``path`` as :func:`atomic_write_bytes` writes (streamed,
    for files too large to hold in memory)."""
    target = Path(path)
    with Path(source).open("rb") as src, _replacing(target) as fh:
        shutil.copyfileobj(src, fh)
    return target


def fsync_tree(path: str | os.PathLike[str]) -> None:
    """Flush every file and folder under the folder ``path``, and ``path`` itself, to disk:
    a folder renamed into place afterwards is complete after a crash."""
    root = Path(path)
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            continue
        if p.is_file():
            with p.open("rb") as fh:
                os.fsync(fh.fileno())
        elif p.is_dir():
            fsync_dir(p)
    fsync_dir(root)


def fresh_stage(target: Path) -> Path:
    """An empty staging folder beside the folder ``target`` (after an interrupted
    :func:`swap_in` is recovered): outputs are written there and swapped in whole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    recover(target)
    stage = target.with_name(f".{target.name}.staging")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    return stage


def swap_in(stage: Path, target: Path) -> None:
    """Replace the folder ``target`` by the complete folder ``stage``, flushed to disk
    first: two renames; a crash between them leaves the previous content beside it, put
    back by :func:`recover`."""
    fsync_tree(stage)
    previous = target.with_name(f".{target.name}.previous")
    shutil.rmtree(previous, ignore_errors=True)
    if target.exists():
        target.rename(previous)
    stage.rename(target)
    fsync_dir(target.parent)
    shutil.rmtree(previous, ignore_errors=True)


def recover(target: Path) -> None:
    """Put back the previous content of ``target`` if a :func:`swap_in` died halfway."""
    previous = target.with_name(f".{target.name}.previous")
    if previous.is_dir() and not target.exists():
        previous.rename(target)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def jsonl_text(records: Iterable[Any], **dumps: Any) -> str:
    """One JSON document per record, one per line (``dumps``: :func:`json.dumps` options)."""
    return "".join(json.dumps(record, **dumps) + "\n" for record in records)


def _jsonl_values(text: str, skip_invalid: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of JSONL text. A line that is not JSON
    raises :class:`json.JSONDecodeError` positioned in ``text`` (its ``lineno`` is the
    line's), or is passed over with ``skip_invalid``.

    Lines end at ``\n`` only: records written with ``ensure_ascii=False`` keep U+2028,
    U+2029 and U+0085 raw inside their strings, where ``str.splitlines`` would cut them."""
    start = 0
    for n, line in enumerate(text.split("\n"), 1):
        if line.strip():
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                if not skip_invalid:
                    raise json.JSONDecodeError(exc.msg, text, start + exc.pos) from None
            else:
                yield n, value
        start += len(line) + 1


def parse_jsonl(text: str) -> list[Any]:
    """The values of the non-blank lines of JSONL text. A line that is not JSON raises
    :class:`json.JSONDecodeError` positioned in ``text``: its ``lineno`` is the line's."""
    return [value for _, value in _jsonl_values(text)]


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """:func:`parse_jsonl` of the UTF-8 file ``path``."""
    return parse_jsonl(Path(path).read_text(encoding="utf-8"))


def iter_jsonl(path: str | os.PathLike[str], what: str = "file", *,
               error: Callable[[str], Exception] = UserError,
               skip_invalid: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of the JSONL file ``path``, read as
    :func:`read_text` reads it, so a caller checking its records can name the line.

    A line that is not JSON raises ``error`` with one line naming the file and the line;
    with ``skip_invalid`` it is passed over instead (a read-only view of a log still being
    appended to, whose last line may be torn)."""
    try:
        yield from _jsonl_values(read_text(path, what), skip_invalid)
    except json.JSONDecodeError as exc:
        raise error(f"{what} {path}:{exc.lineno} is not JSON ({exc.msg}, column {exc.colno})"
                    ) from None


def drop_torn_tail(path: str | os.PathLike[str]) -> None:
    """Cut an unterminated last line off the file ``path`` (what a writer killed during
    :func:`append_jsonl` leaves), on disk before this returns, so the next append starts a
    line of its own. A whole file costs one byte read: its readers read it next."""
    p = Path(path)
    with p.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        end = fh.read().rfind(b"\n") + 1
    with p.open("r+b") as fh:
        fh.truncate(end)
        fh.flush()
        os.fsync(fh.fileno())


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any], **dumps: Any) -> Path:
    """:func:`atomic_write_text` of :func:`jsonl_text` (readers see all records or the old
    file)."""
    return atomic_write_text(path, jsonl_text(records, **dumps))


def append_jsonl(path: str | os.PathLike[str], records: Iterable[Any], **dumps: Any) -> None:
    """Append one JSON line per record, on disk before this returns: a kill loses at most
    the line being written, which readers cut off as a torn tail."""
    text = jsonl_text(records, **dumps)
    if not text:
        return
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
