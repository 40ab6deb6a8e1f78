"""Errors that the CLI turns into one clear line and exit code 2."""

from __future__ import annotations


class SpadeError(Exception):
    """Base for failures reported as one line with exit code 2 (never a traceback)."""


class UserError(SpadeError):
    """Bad input or an unavailable resource the user can fix (config, paths, servers)."""
