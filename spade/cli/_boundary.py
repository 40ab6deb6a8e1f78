"""The command line's error boundary: failures of the machine or the install, in one line.

A command that meets a full disk, an unwritable or missing path, a file that is not UTF-8
text, or an optional package that is not installed is stopped with one line saying what and
where (exit 2), not a traceback. Anything else is a bug and keeps its traceback: an
``OSError`` is reported only when it names a path or is one of the errors a user fixes on
their machine, a missing module only when it is a third-party package of an extra.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import TracebackType

__all__ = ["EXTRAS", "describe", "innermost_file", "missing_extra", "undecodable_file"]

#: top-level import name -> the extra of ``pyproject.toml`` that installs it
EXTRAS: dict[str, str] = {
    **dict.fromkeys(("torch", "transformers", "safetensors", "gguf", "accelerate"), "hf"),
    "sentence_transformers": "embed",
    **dict.fromkeys(("trl", "tensorboard"), "train"),
    **dict.fromkeys(("inspect_ai", "math_verify", "reasoning_gym", "Gym", "textarena",
                     "openai", "pandas", "matplotlib", "tau2", "openpyxl", "wcwidth"), "eval"),
    "lm_eval": "crosscheck",
    "vllm": "vllm",
    "openrlhf": "openrlhf",
    "bwrap_bin": "sandbox",
}

#: errors of the machine a user fixes (permissions, space, paths), reported even without
#: a file name
_USER_ERRNOS = frozenset({
    errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOENT,
    errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP,
    errno.EFBIG, errno.EMFILE, errno.ENFILE, errno.ENOTEMPTY, errno.EXDEV, errno.EIO,
    errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT,
})


def missing_extra(exc: ImportError) -> str | None:
    """``"<package> is not installed ..."`` when ``exc`` is an extra's package, else None."""
    name = (getattr(exc, "name", None) or "").partition(".")[0]
    extra = EXTRAS.get(name)
    if extra is None:
        return None
    return (f"{name} is not installed; install the '{extra}' extra: "
            f"pip install 'spade-rl[{extra}]'")


def _os_error(exc: OSError) -> str | None:
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    if not where and exc.errno not in _USER_ERRNOS:
        return None
    reason = exc.strerror or (errno.errorcode.get(exc.errno or 0) if exc.errno else None)
    reason = reason or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        reason += " (free some space or choose another directory)"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason += " (choose a directory you can write to)"
    return f"{where}: {reason}" if where else reason


def _frames(tb: TracebackType | None) -> list[dict[str, object]]:
    out = []
    while tb is not None:
        out.append(dict(tb.tb_frame.f_locals))
        tb = tb.tb_next
    return out[::-1]  # innermost first


def _undecodable(value: object) -> Path | None:
    """``value`` as a path of an existing file that is not UTF-8 text, else None."""
    path = _existing_file(value)
    if path is None:
        return None
    try:
        path.read_bytes().decode("utf-8")
    except (OSError, ValueError):
        return path if path.is_file() else None
    return None


def _existing_file(value: object) -> Path | None:
    """``value`` as the path of an existing file (a string or path-like of one line), else
    None."""
    if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes):
        return None
    text = os.fspath(value)
    if not text or len(text) > 4096 or "\n" in text:
        return None
    try:
        return Path(text) if Path(text).is_file() else None
    except (OSError, ValueError):
        return None


def innermost_file(tb: TracebackType | None) -> Path | None:
    """The innermost existing file named by a local variable (a path, or an open file's
    name) of the frames a traceback passed through: the file a parser was reading."""
    for local in _frames(tb):
        for value in local.values():
            found = _existing_file(value) or (
                _existing_file(getattr(value, "name", None)) if hasattr(value, "read") else None)
            if found is not None:
                return found
    return None


def undecodable_file(exc: UnicodeDecodeError) -> Path | None:
    """The file whose bytes failed to decode: the innermost path among the locals of the
    frames the error passed through that really is not UTF-8 (readers rarely keep the
    name in the exception)."""
    for local in _frames(exc.__traceback__):
        for value in local.values():
            found = _undecodable(value)
            if found is not None:
                return found
            fh_name = getattr(value, "name", None)
            if hasattr(value, "read") and fh_name is not None:
                found = _undecodable(fh_name)
                if found is not None:
                    return found
    return None


def _bad_line(path: Path) -> str:
    """``:LINE`` of the first byte of ``path`` that is not UTF-8 ("" when unknown)."""
    try:
        raw = path.read_bytes()
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = raw.count(b"\n", 0, bad.start) + 1
        return f":{line}"
    except OSError:
        pass
    return ""


def describe(exc: BaseException) -> str | None:
    """One line for an error of the machine or the install; None for anything else."""
    if isinstance(exc, ImportError):
        return missing_extra(exc)
    if isinstance(exc, UnicodeDecodeError):
        path = undecodable_file(exc)
        where = "an input file" if path is None else f"{path}{_bad_line(path)}"
        return f"{where} is not UTF-8 text ({exc.reason}); is it a binary or damaged file?"
    if isinstance(exc, OSError):
        return _os_error(exc)
    return None
