"""Prefilling the designer's reply: the model continues a code skeleton instead of a blank.

A small model often fails the format before it gets to the game (no fence, no class
ending in ``Env``, prose instead of code). With ``prefill: skeleton`` the reply starts with
the opening of the ```` ```python ```` block, the contract's imports and the environment
class header (``templates/prefill_<setting>.md``); the model writes the rest. The prefix
is part of the PROMPT: a token-level policy renders it after the assistant turn opening,
so its ids are prompt ids (never trained, never masked as completion), and the parser
reads prefix + completion.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from spade.designer import _templates
from spade.designer._prompt import Setting, as_setting
from spade.errors import UserError
from spade.policy._types import Message


class Prefill(StrEnum):
    """Config value ``designer.prefill``."""

    NONE = "none"
    SKELETON = "skeleton"


def as_prefill(value: str | Prefill) -> Prefill:
    try:
        return Prefill(str(value).strip().lower())
    except ValueError:
        raise UserError(f"unknown designer prefill {value!r} (expected none or skeleton)") from None


def env_class_name(skill: str) -> str:
    """The class name the skeleton declares: the skill in CamelCase plus ``Env``."""
    words = [w for w in skill.replace("-", "_").split("_") if w]
    return "".join(w[:1].upper() + w[1:] for w in words) + "Env"


def prefill_text(prefill: str | Prefill, setting: str | Setting, skill: str) -> str:
    """The text the designer's reply starts with ("" for ``none``)."""
    if as_prefill(prefill) is Prefill.NONE:
        return ""
    name = f"prefill_{as_setting(setting)}.md"
    return _templates.render(name, class_name=env_class_name(skill))


def with_prefill(messages: Sequence[Message], prefix: str) -> list[Message]:
    """The conversation with ``prefix`` as an open assistant turn (unchanged when empty)."""
    if not prefix:
        return list(messages)
    return [*messages, {"role": "assistant", "content": prefix}]


def can_prefill(policy: object) -> bool:
    """Whether ``policy`` can continue a prefilled reply: every token-level policy can; a
    text-level one only when it says so (``continue_final_message``)."""
    from spade.policy._types import TokenPolicy

    if isinstance(policy, TokenPolicy):
        return True
    return bool(getattr(policy, "continue_final_message", False))
