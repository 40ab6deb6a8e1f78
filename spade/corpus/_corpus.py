"""JSONL grounding corpora: one document per line, loaded lazily.

Format: each non-blank line is a JSON object with the text under ``text`` or, in the SPICE
format, ``orig_doc``; every other key is kept as metadata. Blank lines are skipped but line
numbers stay physical (1-based), so an error or a doc id points at the real line.

Doc id: the record's ``id`` key when present (as a string), else
``"<file stem>:<line>:<first 12 hex of sha256(first 512 chars of text)>"`` — stable across
runs and machines, and it changes if the line's text changes.

Opening a corpus reads the file once to index line offsets and hash it (a 7 MB file takes
a few tens of milliseconds); documents are parsed only when accessed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.errors import UserError
from spade.paths import project_root

#: Environment variable overriding the corpora directory.
CORPORA_ENV = "SPADE_CORPORA_DIR"
#: Bundled corpus names (files ``<name>.jsonl`` in the corpora directory).
BUNDLED = ("games", "tool_use")
_ID_PREFIX_CHARS = 512


def default_corpora_dir() -> Path:
    """``$SPADE_CORPORA_DIR`` if set, else ``../shared/corpora`` next to the project root."""
    env = os.environ.get(CORPORA_ENV)
    if env:
        return Path(env).expanduser()
    return (project_root().parent / "shared" / "corpora").resolve()


def corpus_path(name_or_path: str | os.PathLike[str]) -> Path:
    """Resolve a bundled corpus name (``games``, ``tool_use``) or a file path."""
    text = os.fspath(name_or_path)
    if text in BUNDLED:
        return default_corpora_dir() / f"{text}.jsonl"
    return Path(text).expanduser()


@dataclass(frozen=True)
class Document:
    """One corpus document: its stable id, text, physical line and remaining metadata."""

    id: str
    text: str
    line: int
    corpus: str
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


class Corpus:
    """A lazily indexed JSONL corpus; ``len()`` documents, ``corpus[i]`` parses document i."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(
                f"corpus file not found: {self.path} (set {CORPORA_ENV} or pass a path)"
            )
        self.name = self.path.stem
        self._offsets: list[tuple[int, int, int]] = []  # (start, end, line number)
        digest = hashlib.sha256()
        with self.path.open("rb") as fh:
            data = fh.read()
        digest.update(data)
        self.sha256 = digest.hexdigest()
        start, line = 0, 1
        while start < len(data):
            end = data.find(b"\n", start)
            if end < 0:
                end = len(data)
            if data[start:end].strip():
                self._offsets.append((start, end, line))
            start, line = end + 1, line + 1
        if not self._offsets:
            raise UserError(f"corpus file is empty: {self.path}")

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> Document:
        start, end, line = self._offsets[index]
        with self.path.open("rb") as fh:
            fh.seek(start)
            raw = fh.read(end - start)
        return self._parse(raw, line)

    def __repr__(self) -> str:
        return f"Corpus({str(self.path)!r}, {len(self)} documents)"

    def _parse(self, raw: bytes, line: int) -> Document:
        where = f"{self.path}:{line}"
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"{where}: not a JSON line ({exc})") from None
        if not isinstance(record, dict):
            raise UserError(f"{where}: expected a JSON object, got {type(record).__name__}")
        key = "text" if "text" in record else "orig_doc" if "orig_doc" in record else None
        if key is None:
            raise UserError(f"{where}: no 'text' or 'orig_doc' field")
        text = record.pop(key)
        if not isinstance(text, str):
            raise UserError(f"{where}: '{key}' must be a string")
        if "id" in record:
            doc_id = str(record.pop("id"))
        else:
            prefix = hashlib.sha256(text[:_ID_PREFIX_CHARS].encode()).hexdigest()[:12]
            doc_id = f"{self.name}:{line}:{prefix}"
        return Document(id=doc_id, text=text, line=line, corpus=self.name, metadata=record)


def load_corpus(name_or_path: str | os.PathLike[str]) -> Corpus:
    """Open a bundled corpus by name or any JSONL file by path (``UserError`` if missing)."""
    return Corpus(corpus_path(name_or_path))
