"""Typed self-play configuration, loaded from YAML.

One object describes a run: the cycle sizes, the roles' sampling, reward variant, ablation
switches and infrastructure. Unknown keys are errors (a typo must not silently fall back to
a default), and every error names the offending field in one line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spade.envs.examples import GAME_SKILLS, TOOL_SKILLS
from spade.errors import UserError
from spade.memory import MemoryConfig
from spade.rewards import DesignerReward

Setting = Literal["games", "tool_use"]

__all__ = ["GAME_SKILLS", "TOOL_SKILLS", "MemoryConfig", "RunConfig", "load_config", "set_dotted",
           "validate_model"]

M = TypeVar("M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SamplingConfig(_Model):
    """Sampling for one role (mirrors spade.policy.SamplingParams)."""

    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = Field(default=0, ge=0)
    max_new_tokens: int = Field(default=2048, ge=1)


class PolicyConfig(_Model):
    """Which model plays the roles. ``scripted`` needs no model (tests, benchmarks, demo)."""

    spec: str = "scripted"  # scripted | smollm2 | hf:PATH | vllm:PATH | openai:BASE_URL#MODEL
    #: A frozen designer: the designer role uses this policy and never trains (ablation).
    frozen_designer: str | None = None
    #: Writer of hints when designer.hint_source == "external".
    hint_writer: str | None = None

    @field_validator("spec", "frozen_designer", "hint_writer")
    @classmethod
    def _known_spec(cls, value: str | None) -> str | None:
        from spade.modelspec import check_spec

        if value is not None:
            try:
                check_spec(value, extra=("scripted",), where="policy")
            except UserError as exc:
                raise ValueError(str(exc)) from None
        return value


class DesignerConfig(_Model):
    setting: Setting = "games"
    #: Distinct designer prompts per cycle (corpus doc x skill x memory snapshot).
    prompts_per_cycle: int = Field(default=6, ge=1)
    #: G designs sampled per prompt; a prompt's designs form one GRPO group.
    designs_per_prompt: int = Field(default=4, ge=1)
    hint_source: Literal["designer", "self", "external"] = "designer"
    #: ``skeleton``: the reply starts with a prefilled code skeleton (the fence, the imports
    #: and the environment class header); its tokens are prompt tokens, never trained.
    prefill: Literal["none", "skeleton"] = "none"
    #: Token cap of a separately written hint (hint_source self/external).
    hint_max_new_tokens: int = Field(default=256, ge=8)
    use_corpus: bool = True
    use_memory: bool = True
    memory_positives: int = Field(default=2, ge=0)
    memory_negatives: int = Field(default=2, ge=0)
    few_shot_examples: int = Field(default=1, ge=0)
    max_document_chars: int = Field(default=2000, ge=100)
    skills: tuple[str, ...] = ()  # empty = the six skills of the setting
    difficulty: str = "hard enough that a strong agent needs several attempts without the hint"
    sampling: SamplingConfig = SamplingConfig(temperature=1.0, max_new_tokens=2048)

    @model_validator(mode="after")
    def _skills_known(self) -> DesignerConfig:
        known = GAME_SKILLS if self.setting == "games" else TOOL_SKILLS
        unknown = [s for s in self.skills if s not in known]
        if unknown:
            raise ValueError(f"unknown skills {unknown} for setting {self.setting}; known: {known}")
        return self

    @property
    def skill_list(self) -> tuple[str, ...]:
        if self.skills:
            return self.skills
        return GAME_SKILLS if self.setting == "games" else TOOL_SKILLS


class AgentConfig(_Model):
    #: Plays per arm per environment; hinted and unhinted arms share these seeds.
    plays_per_arm: int = Field(default=8, ge=1)
    max_turns: int = Field(default=25, ge=1)
    #: Episodes (and environment instances) alive at once; each turn step generates for all
    #: of them in one batch, so a GPU wants this large.
    max_active: int = Field(default=64, ge=1)
    #: Train the agent on hinted plays too (default: only the unhinted return is its reward).
    train_on_hinted: bool = False
    sampling: SamplingConfig = SamplingConfig(temperature=1.0, max_new_tokens=1024)


class CorpusConfig(_Model):
    #: JSONL path; empty = the bundled corpus for the setting (games.jsonl / tool_use.jsonl).
    path: str | None = None


class SandboxConfig(_Model):
    isolation: Literal["bwrap", "rlimits", "none"] = "bwrap"
    #: Weaker isolation must be chosen explicitly: without this, only bwrap runs.
    allow_weak: bool = False
    call_timeout_s: float = Field(default=5.0, gt=0)
    memory_mb: int = Field(default=2048, ge=256)


class ValidationSettings(_Model):
    #: Probe episodes per random/trivial policy (spade.validate episodes_per_policy).
    probe_episodes: int = Field(default=3, ge=1)
    max_win_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    time_budget_s: float = Field(default=30.0, gt=0)
    #: Validations run side by side (None: one more than the CPUs, at most 8).
    concurrency: int | None = Field(default=None, ge=1)


class DiversityConfig(_Model):
    #: Embedding backend for diversity metrics and memory entries (auto: MiniLM if installed).
    embedder: Literal["auto", "minilm", "lexical"] = "auto"


class RunConfig(_Model):
    """A whole self-play run."""

    seed: int = 0
    cycles: int = Field(default=3, ge=1)
    policy: PolicyConfig = PolicyConfig()
    designer: DesignerConfig = DesignerConfig()
    agent: AgentConfig = AgentConfig()
    #: The designer reward (its own rules are checked at load time).
    reward: DesignerReward = DesignerReward()
    memory: MemoryConfig = MemoryConfig()
    corpus: CorpusConfig = CorpusConfig()
    sandbox: SandboxConfig = SandboxConfig()
    validation: ValidationSettings = ValidationSettings()
    diversity: DiversityConfig = DiversityConfig()

    def fingerprint(self) -> str:
        """Hash of everything that changes results (not the cycle count: runs can be extended)."""
        data = self.model_dump(mode="json")
        data.pop("cycles", None)
        return fingerprint_of(data)

    def with_overrides(self, **changes: Any) -> RunConfig:
        """A copy with dotted-key overrides, e.g. ``{"policy.spec": "smollm2"}``."""
        return _validate(set_dotted(self.model_dump(mode="json"), changes),
                         "command-line option")


def fingerprint_of(identity: Mapping[str, Any]) -> str:
    """16 hex digits of the sha256 of ``identity`` as JSON with sorted keys: what a run
    directory (self-play or training) is bound to."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def set_dotted(data: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with dotted-key overrides applied in place (``{"agent.max_turns": 4}``).

    A missing (or null) section on the way is created, so the model's validation names an
    unknown key; a key below a value that is not a section is refused in one line."""
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split(".")
        for depth, key in enumerate(parents, 1):
            if node.get(key) is None:
                node[key] = {}
            node = node[key]
            if not isinstance(node, dict):
                raise UserError(f"{dotted}: {'.'.join(parents[:depth])} is a value, not a "
                                "section")
        node[leaf] = value
    return data


def validate_model(model: type[M], data: Any, origin: str) -> M:
    """``model`` from ``data``; a validation error becomes one line naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise UserError(f"{origin}: {where}: {msg}{more}") from None


def _validate(data: Any, origin: str) -> RunConfig:
    return validate_model(RunConfig, data, origin)


def load_config(path: str | Path | None = None) -> RunConfig:
    """Load a run config from YAML; ``None`` gives the default games setting."""
    if path is None:
        text = resources.files("spade.configs").joinpath("games.yaml").read_text()
        origin = "default config"
    else:
        from spade.textfile import read_text

        text, origin = read_text(path, "config file"), str(path)
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise UserError(f"{origin}: malformed YAML{line}") from None
    if not isinstance(data, dict):
        raise UserError(f"{origin}: expected a mapping at the top level")
    return _validate(data, origin)
