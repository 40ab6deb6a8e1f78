"""From a ``RunConfig`` to the components of a cycle: policies per role, seeds, settings.

The run config is the one user-facing object; each component keeps its own typed settings
(``ValidationConfig``, ``SandboxLimits``, ``DesignerReward``, ``SamplingParams``). The
mappings live here, in one place, so the config never duplicates component logic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spade.config import RunConfig, SamplingConfig
from spade.designer import HintSource, as_hint_source
from spade.episodes import EnvProvider
from spade.errors import UserError
from spade.policy import ChatPolicy, SamplingParams, TokenPolicy, make_policy
from spade.rewards import DesignerReward
from spade.sandbox import SandboxLimits
from spade.validate import ValidationConfig

#: ``prepare(provider, [(env_id, hint, seeds), ...])``: called before the plays of a cycle
#: (the scripted agent learns the solutions it may follow; real models need nothing).
PrepareAgent = Callable[[EnvProvider, Sequence[tuple[str, str, Sequence[int]]]], None]


def sampling_params(cfg: SamplingConfig, seed: int) -> SamplingParams:
    return SamplingParams(
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        top_k=cfg.top_k,
        max_new_tokens=cfg.max_new_tokens,
        seed=seed,
    )


def validation_config(config: RunConfig) -> ValidationConfig:
    v = config.validation
    return ValidationConfig(
        seed=config.seed,
        episodes_per_policy=v.probe_episodes,
        max_win_rate=v.max_win_rate,
        time_budget_s=v.time_budget_s,
    )


def sandbox_limits(config: RunConfig) -> SandboxLimits:
    s = config.sandbox
    return SandboxLimits(call_timeout_s=s.call_timeout_s, memory_mb=s.memory_mb)


def designer_reward(config: RunConfig) -> DesignerReward:
    return config.reward


@dataclass
class Roles:
    """The policies of one run. ``designer_frozen``: the trainer must not update it."""

    designer: ChatPolicy
    agent: TokenPolicy
    hint_writer: ChatPolicy | None
    hint_source: HintSource
    designer_frozen: bool = False
    prepare_agent: PrepareAgent | None = None


def _scripted_designer(setting: str) -> ChatPolicy:
    from spade.cycle._scripted import scripted_designer_policy

    return scripted_designer_policy(setting)


def build_roles(config: RunConfig) -> Roles:
    """Policies for both roles (one shared model unless a frozen designer is configured)."""
    setting = config.designer.setting
    spec = config.policy.spec
    prepare: PrepareAgent | None = None
    if spec == "scripted":
        from spade.cycle._scripted import scripted_roles

        scripted = scripted_roles(setting)
        designer: ChatPolicy = scripted.designer
        agent: ChatPolicy = scripted.agent
        prepare = scripted.scripted_agent.prepare
    else:
        agent = make_policy(spec)
        designer = agent
    if not isinstance(agent, TokenPolicy):
        raise UserError(
            f"policy {spec!r} is text-only; the agent needs a token-level policy "
            "(scripted, smollm2, hf:PATH or vllm:PATH)"
        )
    frozen = config.policy.frozen_designer
    if frozen is not None:
        designer = _scripted_designer(setting) if frozen == "scripted" else make_policy(frozen)
    source = as_hint_source(config.designer.hint_source)
    writer: ChatPolicy | None = None
    if source is HintSource.SELF:
        writer = designer
    elif source is HintSource.EXTERNAL:
        if not config.policy.hint_writer:
            raise UserError("designer.hint_source is 'external' but policy.hint_writer is unset")
        writer = (_scripted_designer(setting) if config.policy.hint_writer == "scripted"
                  else make_policy(config.policy.hint_writer))
    return Roles(designer, agent, writer, source, frozen is not None, prepare)
