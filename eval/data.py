"""Where benchmark files live, and proof of which bytes produced a score.

The data directory comes from ``--data-dir``, else ``SPADE_DATA_DIR``, else
``../shared/data`` next to the project root. Every file a suite reads is hashed and, when
the directory has a ``MANIFEST.sha256``, checked against it: a mismatch is recorded in the
result and warned about, never silently ignored.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.errors import UserError
from spade.paths import project_root
from spade.textfile import iter_jsonl

ENV_VAR = "SPADE_DATA_DIR"
MANIFEST = "MANIFEST.sha256"


class MissingData(UserError):
    """A suite's data file is absent; the suite is reported as missing with this path."""

    def __init__(self, path: Path, hint: str = "") -> None:
        super().__init__(f"missing data file {path}" + (f" ({hint})" if hint else ""))
        self.path = path
        self.reason = "absent" + (f" ({hint})" if hint else "")


class UnreadableData(MissingData):
    """A data file that is there but holds no items a suite can read (empty, cut short by an
    unfinished download, not in the benchmark's format): the suite is missing, never scored
    on nothing."""

    def __init__(self, path: Path, why: str) -> None:
        UserError.__init__(self, f"unreadable data file {path}: {why}")
        self.path = path
        self.reason = why


def data_records(path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of the JSONL data file ``path``. A file
    that is binary, not UTF-8 or holds a line that is not JSON is :class:`UnreadableData`:
    its suite goes missing with the file named, the run goes on."""
    try:
        yield from iter_jsonl(path, what, error=lambda why: UnreadableData(path, why))
    except UnreadableData:
        raise
    except UserError as exc:
        raise UnreadableData(path, str(exc)) from None


def _blank(path: Path) -> bool:
    """True for a file with no bytes or only whitespace (the start of a download)."""
    size = path.stat().st_size
    if size == 0:
        return True
    if size > 4096:
        return False
    return not path.read_bytes().strip()


def resolve_data_dir(flag: str | os.PathLike[str] | None = None) -> Path:
    """The data directory per the precedence above (it may not exist; suites then go missing)."""
    if flag:
        return Path(flag).expanduser().resolve()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    return (project_root().parent / "shared" / "data").resolve()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_manifest(path: Path) -> dict[str, str]:
    """``relative/path -> sha256`` from ``sha256sum``-style lines (``./`` prefixes dropped)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.strip().split(maxsplit=1)
        if len(parts) != 2:
            continue
        digest, name = parts
        name = name.lstrip("*")
        out[name[2:] if name.startswith("./") else name] = digest.lower()
    return out


@dataclass(frozen=True)
class DataFile:
    """One file that fed a suite: where, which bytes, and what the manifest said."""

    path: str  # relative to the data directory when inside it, else as given
    sha256: str
    manifest: str  # "ok" | "mismatch" | "unlisted" | "no-manifest"

    def as_record(self) -> dict[str, str]:
        return {"path": self.path, "sha256": self.sha256, "manifest": self.manifest}


@dataclass
class DataDir:
    """A resolved data directory with a per-run hash cache."""

    root: Path
    _hashes: dict[Path, DataFile] = field(default_factory=dict)
    _manifest: dict[str, str] | None = None

    def path(self, relative: str) -> Path:
        return self.root / relative

    def require(self, relative: str, hint: str = "") -> Path:
        """The file's path, or :class:`MissingData` naming it."""
        p = self.path(relative)
        if not p.is_file():
            raise MissingData(p, hint)
        if _blank(p):
            raise UnreadableData(p, "empty file (an unfinished download?)")
        return p

    def manifest(self) -> dict[str, str]:
        if self._manifest is None:
            m = self.root / MANIFEST
            self._manifest = _read_manifest(m) if m.is_file() else {}
        return self._manifest

    def record(self, path: Path) -> DataFile:
        """Hash ``path`` once per run and check it against the manifest (warns on mismatch)."""
        path = path.resolve()
        if path in self._hashes:
            return self._hashes[path]
        digest = sha256_file(path)
        try:
            rel = path.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            rel = None
        manifest = self.manifest()
        if rel is None:
            status, shown = "unlisted", str(path)
        elif not manifest:
            status, shown = "no-manifest", rel
        elif rel not in manifest:
            status, shown = "unlisted", rel
        else:
            status, shown = ("ok" if manifest[rel] == digest else "mismatch"), rel
        if status == "mismatch":
            print(
                f"warning: {rel} does not match {MANIFEST} "
                f"(got {digest[:12]}, expected {manifest.get(shown, '')[:12]}); "
                "scores are not comparable",
                file=sys.stderr,
            )
        rec = DataFile(shown, digest, status)
        self._hashes[path] = rec
        return rec
