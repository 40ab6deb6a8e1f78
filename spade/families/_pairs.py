"""Warm-start pairs: (designer prompt -> design + hint) rendered from the families.

Each family module is shown to the designer the way a training cycle would ask for it: the
same system prompt, skill, a corpus document, memory (other families' modules with their
measured solve rates), the bundled few-shot example and the difficulty line, all through
``spade.designer``; the target is the reply that module would be (after the prefilled
skeleton, when the designer's reply is prefilled). Every draw comes from
``derive_seed(seed, "warmstart", ...)``, so a set is a pure function of the library
version, the designer settings, the corpus and the seed. Only pairs whose design the
validator accepts (with its hint) are kept.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from spade.config import DesignerConfig
from spade.corpus import Corpus
from spade.designer import (
    PromptEnv,
    build_designer_messages,
    bundled_examples,
    env_class_name,
    parse_design,
    prefill_text,
)
from spade.families._registry import FamilyInstance
from spade.seeds import derive_seed
from spade.textfile import jsonl_text

#: Keys of ``DesignerConfig`` that shape a warm-start prompt (recorded with the data set).
PROMPT_KEYS = ("setting", "few_shot_examples", "memory_positives", "memory_negatives",
               "max_document_chars", "difficulty", "prefill", "use_corpus", "use_memory")


@dataclass(frozen=True)
class Pair:
    """One supervised example for the designer role."""

    id: str
    instance: str  # <family>/<index>
    skill: str
    doc_id: str | None
    messages: list[dict[str, str]]  # system + user, as the designer reads them
    prefill: str  # the reply's given start ("" without prefill)
    completion: str  # what the designer should write after ``prefill``

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def reply(self) -> str:
        return self.prefill + self.completion


def design_reply(instance: FamilyInstance) -> str:
    """The designer reply that is ``instance``: the fenced module, then its hint."""
    return f"```python\n{instance.source.rstrip()}\n```\n<hint>{instance.hint}</hint>"


def prompt_settings(designer: DesignerConfig) -> dict[str, Any]:
    """The designer settings a pair's prompt depends on."""
    data = designer.model_dump(mode="json")
    return {k: data[k] for k in PROMPT_KEYS}


def _memory(instance: FamilyInstance, others: Sequence[FamilyInstance], k: int,
            rates: dict[str, float], rng: random.Random) -> list[PromptEnv]:
    """``k`` modules of other families as memory entries, with their measured solve rates."""
    pool = [o for o in others if o.family != instance.family and o.family in rates]
    chosen = rng.sample(pool, min(k, len(pool)))
    return [PromptEnv(name=env_class_name(o.skill), source=o.source,
                      hint=o.hint, skill=o.skill, solve_rate_hinted=rates[o.family],
                      solve_rate_unhinted=rates[o.family], regret=0.0) for o in chosen]


def render_pair(instance: FamilyInstance, k: int, designer: DesignerConfig,
                corpus: Corpus | None, others: Sequence[FamilyInstance],
                rates: dict[str, float], seed: int) -> Pair:
    """Prompt ``k`` for ``instance``: its document, memory and few-shot draws are seeded."""
    rng = random.Random(derive_seed(seed, "warmstart", instance.name, k))
    doc = None
    if designer.use_corpus and corpus is not None and len(corpus):
        doc = corpus[rng.randrange(len(corpus))]
    positives: list[PromptEnv] = []
    negatives: list[PromptEnv] = []
    if designer.use_memory:
        positives = _memory(instance, others, designer.memory_positives, rates, rng)
        negatives = _memory(instance, others, designer.memory_negatives, rates, rng)
    examples = bundled_examples(designer.setting, designer.few_shot_examples, rng=rng,
                                skill=instance.skill)
    messages = build_designer_messages(designer.setting, instance.skill, doc, positives,
                                       negatives, examples, designer.difficulty,
                                       max_document_chars=designer.max_document_chars)
    prefix = prefill_text(designer.prefill, designer.setting, instance.skill)
    reply = design_reply(instance)
    if not reply.startswith(prefix):
        raise ValueError(f"{instance.name}: the module does not start with the designer's "
                         "code skeleton for its skill")
    return Pair(f"{instance.name}#{k}", instance.name, instance.skill,
                None if doc is None else doc.id, [dict(m) for m in messages], prefix,
                reply[len(prefix):])


def check_parse(pair: Pair, instance: FamilyInstance) -> str:
    """'' when the designer's own parser reads the pair's reply back as ``instance``."""
    parsed = parse_design(pair.reply, require_hint=True)
    if not parsed.ok:
        return f"reply does not parse: {parsed.reason}"
    if (parsed.source or "").strip() != instance.source.strip() or parsed.hint != instance.hint:
        return "reply parses to another module or hint"
    return ""


def render_pairs(instances: Sequence[FamilyInstance], designer: DesignerConfig,
                 corpus: Corpus | None, rates: dict[str, float], *, seed: int,
                 prompts_per_module: int,
                 validate: Callable[[list[tuple[str, str]]], list[str]]
                 ) -> tuple[list[Pair], dict[str, str]]:
    """Pairs of every instance the validator accepts, and why the others were dropped.

    ``validate([(source, hint), ...])`` returns '' (valid) or a one-line reason per module.
    """
    reasons = validate([(i.source, i.hint) for i in instances])
    kept: list[Pair] = []
    dropped: dict[str, str] = {}
    for instance, reason in zip(instances, reasons, strict=True):
        pairs = [render_pair(instance, k, designer, corpus, instances, rates, seed)
                 for k in range(prompts_per_module)]
        reason = reason or next((r for p in pairs if (r := check_parse(p, instance))), "")
        if reason:
            dropped[instance.name] = reason
        else:
            kept += pairs
    return kept, dropped


def jsonl_bytes(pairs: Sequence[Pair]) -> bytes:
    """The data set's file content: one pair per line, keys sorted (stable bytes)."""
    return jsonl_text((p.to_json() for p in pairs), sort_keys=True,
                      ensure_ascii=False).encode("utf-8")


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
