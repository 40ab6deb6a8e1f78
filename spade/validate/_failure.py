"""The one exception the stages raise: a named reason for an invalid environment."""

from __future__ import annotations

from typing import Any

from spade.validate._verdict import Stage


class CheckFailed(Exception):
    """A check found the environment invalid; ``stage`` names the rule that was broken.

    Internal to the validator: :func:`spade.validate.validate_env` turns it into a verdict.
    """

    def __init__(self, stage: Stage, reason: str, **details: Any) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.details = details
