"""The designer's prompt: setting, skill, corpus document, memory examples, few-shot seeds.

Everything the model reads is in ``templates/``; this module only chooses and fills them.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from spade.corpus import Document, truncate_text
from spade.designer import _templates
from spade.errors import UserError
from spade.memory import MemoryEntry, Negative, Standing
from spade.policy._types import Message

_CLASS_NAME = re.compile(r"^class[ \t]+([A-Za-z_]\w*Env)\b", re.MULTILINE)


class Setting(StrEnum):
    """What the designer writes: text games or tool-use tasks."""

    GAMES = "games"
    TOOL_USE = "tool_use"

    @property
    def kind(self) -> str:
        """The matching ``EnvInfo.kind``."""
        return "game" if self is Setting.GAMES else "tool"

    @property
    def label(self) -> str:
        return "text game" if self is Setting.GAMES else "tool-use"


def as_setting(value: str | Setting) -> Setting:
    """Parse a setting name; accepts the env kinds ``game``/``tool`` and ``tool-use`` too."""
    aliases = {"game": "games", "tool": "tool_use", "tool-use": "tool_use", "tools": "tool_use"}
    text = str(value).strip().lower()
    try:
        return Setting(aliases.get(text, text))
    except ValueError:
        raise UserError(f"unknown setting {value!r} (expected 'games' or 'tool_use')") from None


def skills(setting: str | Setting) -> dict[str, str]:
    """The six skills of a setting: id -> one-line description."""
    table = _templates.load_yaml("skills.yaml")
    return {str(k): str(v) for k, v in table[str(as_setting(setting))].items()}


def difficulty_levels() -> dict[str, str]:
    """Named difficulty instructions; any other text is used verbatim."""
    return {str(k): str(v) for k, v in _templates.load_yaml("difficulty.yaml").items()}


@dataclass(frozen=True)
class PromptEnv:
    """An earlier environment as the designer sees it (a memory positive or negative)."""

    name: str
    source: str
    hint: str
    skill: str
    solve_rate_hinted: float
    solve_rate_unhinted: float
    regret: float
    summary: str = ""  # a real description; derived from the code when empty
    label: str = ""  # "too easy" | "too hard"; derived from the solve rates when empty

    @classmethod
    def from_memory(cls, item: MemoryEntry | Negative) -> PromptEnv:
        """A memory entry (or a sampled negative, which knows why it is one) for the prompt."""
        entry = item.entry if isinstance(item, Negative) else item
        standing = item.standing if isinstance(item, Negative) else None
        names = _CLASS_NAME.findall(entry.source)
        labels = {Standing.TOO_EASY: "too easy", Standing.TOO_HARD: "too hard"}
        label = labels.get(standing, "") if standing is not None else ""
        return cls(
            name=names[-1] if names else entry.env_id,
            source=entry.source,
            hint=entry.hint,
            skill=entry.skill,
            solve_rate_hinted=entry.solve_rate_hinted,
            solve_rate_unhinted=entry.solve_rate_unhinted,
            regret=entry.regret,
            summary=entry.summary,
            label=label,
        )


PromptItem = PromptEnv | MemoryEntry | Negative


def _prompt_envs(items: Sequence[PromptItem]) -> tuple[PromptEnv, ...]:
    return tuple(i if isinstance(i, PromptEnv) else PromptEnv.from_memory(i) for i in items)


@dataclass(frozen=True)
class FewShot:
    """A complete, valid environment shown as an example of the output format."""

    name: str
    source: str
    hint: str


def summarize_source(source: str) -> str:
    """A one-line summary from the code itself: class name, docstring, tool names."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "(code does not parse)"
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Env"):
            doc = (ast.get_docstring(node) or "").strip().splitlines()
            tools = [
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef)
                and any(getattr(d, "id", None) == "tool" for d in f.decorator_list)
            ]
            text = f"{node.name}: {doc[0] if doc else 'no description'}"
            return text + (f" Tools: {', '.join(tools)}." if tools else "")
    return "(no environment class)"


def _truncate_code(source: str, limit: int) -> str:
    source = source.strip()
    if len(source) <= limit:
        return source
    cut = source[:limit]
    return cut[: cut.rfind("\n")].rstrip() + "\n# ... (truncated)"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


@dataclass(frozen=True)
class DesignerPrompt:
    """All inputs of one designer prompt; ``messages()`` renders the chat."""

    setting: Setting
    skill: str
    document: str | None = None
    positives: tuple[PromptEnv, ...] = ()
    negatives: tuple[PromptEnv, ...] = ()
    examples: tuple[FewShot, ...] = ()
    difficulty: str | None = "frontier"
    max_document_chars: int = 2000
    max_code_chars: int = 4000

    def messages(self) -> list[Message]:
        table = skills(self.setting)
        if self.skill not in table:
            raise UserError(
                f"unknown skill {self.skill!r} for {self.setting}; expected one of {sorted(table)}"
            )
        return [
            {"role": "system", "content": _templates.render(f"system_{self.setting}.md").strip()},
            {"role": "user", "content": self._user(table[self.skill]).strip()},
        ]

    def _user(self, skill_description: str) -> str:
        levels = difficulty_levels()
        difficulty = levels.get(self.difficulty or "", self.difficulty or "")
        return _templates.render(
            "designer_user.md",
            setting_label=self.setting.label,
            skill=self.skill,
            skill_description=skill_description,
            document_block=self._document_block(),
            positives_block=self._positives_block(),
            negatives_block=self._negatives_block(),
            examples_block=self._examples_block(),
            difficulty=difficulty,
        )

    def _document_block(self) -> str:
        if not self.document or not self.document.strip():
            return _templates.render("no_document_block.md")
        text = self.document.strip()
        if len(text) > self.max_document_chars:
            text = truncate_text(text, self.max_document_chars) + " [...]"
        return _templates.render("document_block.md", document=text)

    def _code(self, source: str) -> str:
        return _truncate_code(source, self.max_code_chars)

    def _positives_block(self) -> str:
        if not self.positives:
            return ""
        entries = "".join(
            _templates.render(
                "positive_entry.md",
                name=e.name,
                skill=e.skill,
                hinted=_pct(e.solve_rate_hinted),
                unhinted=_pct(e.solve_rate_unhinted),
                regret=f"{e.regret:.2f}",
                hint=e.hint.strip() or "(none)",
                source=self._code(e.source),
            )
            for e in self.positives
        )
        return _templates.render("positives_block.md", entries=entries.rstrip("\n"))

    def _negatives_block(self) -> str:
        if not self.negatives:
            return ""
        entries = "".join(
            _templates.render(
                "negative_entry.md",
                name=e.name,
                skill=e.skill,
                verdict=e.label or ("too easy" if e.solve_rate_unhinted >= 0.5 else "too hard"),
                hinted=_pct(e.solve_rate_hinted),
                unhinted=_pct(e.solve_rate_unhinted),
                summary=(e.summary or summarize_source(e.source)).strip(),
            )
            for e in self.negatives
        )
        return _templates.render("negatives_block.md", entries=entries.rstrip("\n"))

    def _examples_block(self) -> str:
        if not self.examples:
            return ""
        entries = "".join(
            _templates.render("example_entry.md", source=e.source.strip(), hint=e.hint.strip())
            for e in self.examples
        )
        return _templates.render("examples_block.md", entries=entries.rstrip("\n"))


def build_designer_messages(
    setting: str | Setting,
    skill: str,
    document: str | Document | None,
    memory_positives: Sequence[PromptItem] = (),
    memory_negatives: Sequence[PromptItem] = (),
    examples: Sequence[FewShot] = (),
    difficulty: str | None = "frontier",
    *,
    max_document_chars: int = 2000,
    max_code_chars: int = 4000,
) -> list[Message]:
    """The designer's chat messages (system + user) for one design request.

    Memory items may be :class:`PromptEnv` or the memory's own ``MemoryEntry`` / ``Negative``
    records; ``document`` may be a corpus ``Document`` or plain text (None: no grounding).
    """
    return DesignerPrompt(
        setting=as_setting(setting),
        skill=skill,
        document=document.text if isinstance(document, Document) else document,
        positives=_prompt_envs(memory_positives),
        negatives=_prompt_envs(memory_negatives),
        examples=tuple(examples),
        difficulty=difficulty,
        max_document_chars=max_document_chars,
        max_code_chars=max_code_chars,
    ).messages()


def bundled_examples(
    setting: str | Setting,
    k: int = 1,
    *,
    rng: random.Random | None = None,
    skill: str | None = None,
) -> list[FewShot]:
    """``k`` bundled example environments of the setting's kind, as few-shot seeds.

    Examples of the requested skill come first; ``rng`` (seeded by the caller) picks among
    equals, so the choice is reproducible.
    """
    from spade.envs.examples import list_examples, load_example_source

    kind = as_setting(setting).kind
    pool = [e for e in list_examples() if e.kind == kind]
    if rng is not None:
        pool = rng.sample(pool, len(pool))
    pool.sort(key=lambda e: e.skill != skill)  # stable: same-skill examples first
    return [FewShot(e.name, load_example_source(e.name), e.hint) for e in pool[:k]]
