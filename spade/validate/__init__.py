"""The verdict on a generated environment: a battery of named checks run in the sandbox.

``validate_env(source, hint=..., sandbox=...)`` returns a :class:`Verdict` naming the first
failed :class:`Stage` with a human-readable reason, plus per-check details and timings.
The static checks run in the parent without executing the code; everything else runs the
environment only through :mod:`spade.sandbox`.
"""

from __future__ import annotations

from spade.validate._config import ValidationConfig
from spade.validate._validator import validate_env
from spade.validate._verdict import CheckResult, Stage, Verdict

__all__ = ["CheckResult", "Stage", "ValidationConfig", "Verdict", "validate_env"]
