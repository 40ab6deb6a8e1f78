"""LiveCodeBench problems from the shared public-test file or the official release files.

Two formats:

- the shared public subset (``livecodebench_public/lcb_public_tests_879.json``): a JSON
  list of ``{problem, starter_code, tests}``; ``tests`` is a list (or a JSON string) of
  ``{input, output, testtype: stdin|functional}``; the item id is the position in the file;
- the official ``livecodebench/code_generation_lite`` release files (``test*.jsonl``):
  ``question_id``, ``question_content``, ``starter_code``, ``public_test_cases`` (JSON),
  ``private_test_cases`` (JSON, or base64 of zlib of a pickle of a JSON string) and
  ``metadata`` (JSON with ``func_name``).

The compressed private tests are decoded WITHOUT unpickling: the pickle opcode stream is
parsed and accepted only if it is exactly one string constant (what the official files
contain); anything else (a pickle that would build objects or call functions) is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
import re
import zlib
from pathlib import Path
from typing import Any

from spade.eval.data import UnreadableData, data_records
from spade.eval.suites._base import Item

from spade.errors import UserError

_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}
_FRAMING_OPS = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"}
#: Refuse decompressed test blobs beyond this size (a zip bomb is not a test file).
MAX_DECOMPRESSED = 2 << 30


def string_from_pickle(data: bytes) -> str:
    """The string a pickle holds, read from its opcodes (never executed)."""
    found: list[str] = []
    try:
        for op, arg, _pos in pickletools.genops(data):
            if op.name in _STRING_OPS:
                found.append(str(arg))
            elif op.name not in _FRAMING_OPS:
                raise UserError(f"refusing a pickle that is not a plain string (opcode {op.name})")
    except (ValueError, EOFError) as exc:
        raise UserError(f"malformed pickle in test cases ({exc})") from exc
    if len(found) != 1:
        raise UserError("refusing a pickle that is not exactly one string")
    return found[0]


def decode_tests(field: str) -> list[dict[str, Any]]:
    """Test cases from a JSON string or the official base64+zlib+pickle encoding."""
    try:
        value = json.loads(field)
    except json.JSONDecodeError:
        try:
            raw = base64.b64decode(field.encode("ascii"), validate=True)
            dec = zlib.decompressobj()
            blob = dec.decompress(raw, MAX_DECOMPRESSED)
            if dec.unconsumed_tail:
                raise UserError("compressed test cases exceed the size limit")
        except (binascii.Error, zlib.error, UnicodeEncodeError) as exc:
            raise UserError(f"test cases are neither JSON nor base64+zlib ({exc})") from exc
        value = json.loads(string_from_pickle(blob))
    if not isinstance(value, list):
        raise UserError("test cases must decode to a list")
    return value


def func_name_from_starter(starter: str) -> str | None:
    names = re.findall(r"^\s+def\s+([A-Za-z_]\w*)\s*\(\s*self", starter, flags=re.M)
    return names[0] if names else None


def _tests(raw: Any) -> list[dict[str, Any]]:
    tests = json.loads(raw) if isinstance(raw, str) else raw
    out = []
    for t in tests:
        if t.get("testtype") not in ("stdin", "functional"):
            raise UserError(f"unknown testtype {t.get('testtype')!r}")
        out.append({"input": str(t["input"]), "output": str(t["output"]),
                    "testtype": t["testtype"]})
    return out


def load_public(path: Path) -> list[Item]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        items = []
        for idx, row in enumerate(rows):
            tests = _tests(row["tests"])
            items.append(Item(idx, {
                "question": row["problem"],
                "starter_code": row.get("starter_code") or "",
                "tests": tests,
                "func_name": func_name_from_starter(row.get("starter_code") or ""),
            }))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise UnreadableData(path, f"not the LiveCodeBench public-test file ({exc})") from exc
    return items


def load_official(paths: list[Path]) -> list[Item]:
    """Problems from official release files, in file then line order."""
    items: list[Item] = []
    for path in paths:
        for n, row in data_records(path, "LiveCodeBench file"):
            try:
                meta = json.loads(row.get("metadata") or "{}")
                tests = _tests(decode_tests(row["public_test_cases"]))
                tests += _tests(decode_tests(row["private_test_cases"]))
                starter = row.get("starter_code") or ""
                items.append(Item(row["question_id"], {
                    "question": row["question_content"],
                    "starter_code": starter,
                    "tests": tests,
                    "func_name": meta.get("func_name") or func_name_from_starter(starter),
                    "contest_date": row.get("contest_date"),
                }))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise UnreadableData(path, f"line {n}: not a LiveCodeBench record ({exc})") from exc
    return items
