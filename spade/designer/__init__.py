"""The Environment Designer: prompts, reply parsing, hints.

Typical use in a cycle::

    messages = build_designer_messages("games", "logic", doc.text, positives, negatives,
                                       bundled_examples("games", rng=rng, skill="logic"))
    replies = policy.chat([messages] * G, params)
    designs = [parse_design(r.text, require_hint=hint_source == "designer") for r in replies]
    designs = obtain_hints(designs, hint_source, hint_policy, setting="games")
    verdicts = [validate_design(d, sandbox=sb) for d in designs if d.ok]
"""

from __future__ import annotations

from spade.designer._hints import (
    HINT_PARAMS,
    HintSource,
    as_hint_source,
    hint_leaked,
    hint_writer_messages,
    obtain_hints,
    validate_design,
)
from spade.designer._parse import (
    MAX_HINT_CHARS,
    DesignParse,
    ParseFailure,
    clean_hint,
    parse_design,
    parse_hint,
)
from spade.designer._prefill import (
    Prefill,
    as_prefill,
    can_prefill,
    env_class_name,
    prefill_text,
    with_prefill,
)
from spade.designer._prompt import (
    DesignerPrompt,
    FewShot,
    PromptEnv,
    PromptItem,
    Setting,
    as_setting,
    build_designer_messages,
    bundled_examples,
    difficulty_levels,
    skills,
    summarize_source,
)

__all__ = [
    "HINT_PARAMS",
    "MAX_HINT_CHARS",
    "DesignParse",
    "DesignerPrompt",
    "FewShot",
    "HintSource",
    "ParseFailure",
    "Prefill",
    "PromptEnv",
    "PromptItem",
    "Setting",
    "as_hint_source",
    "as_prefill",
    "as_setting",
    "build_designer_messages",
    "bundled_examples",
    "can_prefill",
    "clean_hint",
    "difficulty_levels",
    "env_class_name",
    "hint_leaked",
    "hint_writer_messages",
    "obtain_hints",
    "parse_design",
    "parse_hint",
    "prefill_text",
    "skills",
    "summarize_source",
    "validate_design",
    "with_prefill",
]
