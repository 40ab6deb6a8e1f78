"""Which model produced a result, as a run directory binds it.

A local model directory is identified by :mod:`spade.identity` (weights, config,
tokenizer, chat template; training state left out), the identity training records too.
A replay file is identified by its own sha256; a remote server by its URL and model name
only (it has no bytes to hash).

Runs made before the identity left training state out (no ``identity_version``) are read
as they are; resuming one under the new rule is refused with a message saying so rather
than "different weights".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spade.identity import IDENTITY_VERSION, PARTS, SCOPE, model_identity

__all__ = ["bound_identity", "describe_change"]


def bound_identity(ident: Mapping[str, Any]) -> dict[str, Any]:
    """The identity a run is bound to, from a provider's ``identity()``.

    Local models (``path`` set) get the four parts and their combined sha256 (taken from
    the provider when it already computed them under this rule set); other providers keep
    the sha256 they report (a replay file's, or None for a server).
    """
    path = ident.get("path")
    if path and Path(str(path)).is_dir():
        if ident.get("identity_version") == IDENTITY_VERSION and ident.get("sha256_parts"):
            record = {k: ident[k] for k in ("sha256", "sha256_parts", "sha256_scope",
                                              "identity_version")}
        else:
            record = model_identity(Path(str(path))).as_record()
        return {"spec": ident.get("spec"), **record}
    return {"spec": ident.get("spec"), "sha256": ident.get("sha256"), "sha256_parts": None,
            "sha256_scope": ident.get("sha256_scope") or ("file" if ident.get("sha256")
                                                          else "none")}


def describe_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Which part of a model identity changed, for a one-line refusal."""
    op, np_ = old.get("sha256_parts") or {}, new.get("sha256_parts") or {}
    if op and np_ and old.get("identity_version") != new.get("identity_version"):
        return (f"model identity rule (the run recorded identity version "
                f"{old.get('identity_version') or 1}, which also hashed training state; "
                f"this code hashes {SCOPE} only, version {new.get('identity_version')})")
    changed = [p for p in PARTS if op.get(p) != np_.get(p)] if op and np_ else []
    if changed:
        return "model " + ", ".join(
            f"{p} (sha256 {str(op.get(p))[:12]} -> {str(np_.get(p))[:12]})" for p in changed)
    if old.get("spec") != new.get("spec"):
        return f"model spec ({old.get('spec')} -> {new.get('spec')})"
    return (f"model sha256 ({str(old.get('sha256'))[:12]} -> "
            f"{str(new.get('sha256'))[:12]})")
