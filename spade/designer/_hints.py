"""Where the privileged hint comes from, and the hint-leak check.

``designer`` (the paper's choice): the hint is part of the design reply. ``self`` (the
reference implementation's choice): the same policy reads the finished code in a separate
call and writes the hint. ``external``: a separate, usually frozen, chat model does that.
Either way the hint is checked for leaks by the validator, never here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from spade.designer import _templates
from spade.designer._parse import MAX_HINT_CHARS, DesignParse, parse_hint
from spade.designer._prompt import Setting, as_setting
from spade.errors import UserError
from spade.policy._types import ChatPolicy, Message, SamplingParams

if TYPE_CHECKING:
    from spade.sandbox import Sandbox
    from spade.validate import ValidationConfig, Verdict


class HintSource(StrEnum):
    """Config value ``hint_source``."""

    DESIGNER = "designer"
    SELF = "self"
    EXTERNAL = "external"


def as_hint_source(value: str | HintSource) -> HintSource:
    try:
        return HintSource(str(value).strip().lower())
    except ValueError:
        raise UserError(
            f"unknown hint_source {value!r} (expected designer, self or external)"
        ) from None


#: Sampling for hint writing: short and fairly conservative.
HINT_PARAMS = SamplingParams(temperature=0.7, top_p=0.95, max_new_tokens=256)


def hint_writer_messages(source: str, setting: str | Setting) -> list[Message]:
    """The chat a hint writer answers: system instructions plus the environment code."""
    label = as_setting(setting).label
    return [
        {"role": "system", "content": _templates.render("hint_writer_system.md").strip()},
        {
            "role": "user",
            "content": _templates.render(
                "hint_writer_user.md", setting_label=label, source=source.strip()
            ).strip(),
        },
    ]


def obtain_hints(
    designs: Sequence[DesignParse],
    source: str | HintSource,
    policy: ChatPolicy | None = None,
    *,
    setting: str | Setting = Setting.GAMES,
    params: SamplingParams = HINT_PARAMS,
    max_hint_chars: int = MAX_HINT_CHARS,
) -> list[DesignParse]:
    """Designs with their hints filled in, in the same order.

    For ``designer`` the designs are returned unchanged (their hint came with the reply).
    For ``self``/``external`` every design that has code gets its hint from ONE batched
    ``policy.chat`` call (the designer's own policy, or the external one); a hint the writer
    fails to produce marks that design as failed with the reason. Designs that already failed
    to parse pass through untouched.
    """
    kind = as_hint_source(source)
    if kind is HintSource.DESIGNER:
        return list(designs)
    if policy is None:
        raise UserError(f"hint_source {kind} needs a policy to write the hints")
    todo = [i for i, d in enumerate(designs) if d.source is not None and d.failure is None]
    if not todo:
        return list(designs)
    replies = policy.chat(
        [hint_writer_messages(designs[i].source or "", setting) for i in todo], params
    )
    if len(replies) != len(todo):
        raise RuntimeError(f"hint writer returned {len(replies)} replies for {len(todo)} designs")
    out = list(designs)
    for i, reply in zip(todo, replies, strict=True):
        hint, failure, detail = parse_hint(
            reply.text, max_hint_chars=max_hint_chars, truncated=reply.finish_reason == "length"
        )
        detail = f"from the {kind} hint writer" + (f"; {detail}" if detail else "")
        out[i] = dataclasses.replace(
            designs[i], hint=hint, failure=failure, detail=detail if failure else ""
        )
    return out


def validate_design(
    design: DesignParse,
    *,
    sandbox: Sandbox,
    config: ValidationConfig | None = None,
) -> Verdict:
    """Run the validator on a parsed design, hint included (so HINT_LEAK is checked)."""
    from spade.validate import validate_env

    if design.source is None:
        raise ValueError(f"design has no source ({design.reason})")
    return validate_env(design.source, hint=design.hint, sandbox=sandbox, config=config)


def hint_leaked(verdict: Verdict) -> bool:
    """Whether the validator rejected the environment because its hint gives the answer away."""
    from spade.validate import Stage

    return not verdict.valid and verdict.stage is Stage.HINT_LEAK
