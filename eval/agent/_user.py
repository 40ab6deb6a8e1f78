"""The user simulator: a second model that plays the user in tau2 and ACEBench multi-turn.

``--user-model SPEC`` takes any model provider spec (``openai:BASE_URL#MODEL`` as in the
papers, ``hf:PATH``, ``vllm:PATH``). The suite turns its conversation into chat messages
from the user's side and asks :meth:`UserModel.reply` for the next user message (with the
user's own tools where the benchmark has them, e.g. tau2 telecom); the reply comes back
through the same backends as the evaluated model's steps (native tools for OpenAI-compatible
servers, ``<tool_call>`` text for hf/vllm).

The user model and its sampling are part of the protocol (``extra.user_model``,
``extra.user_sampling``): they are recorded in every result, and results made with
different user models are never compared (their protocols differ). A suite that needs a
user and has none reports those parts as unavailable, never as zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from spade.eval.agent._environment import NoExecution
from spade.eval.agent._session import AgentSession, Reply

from spade.errors import UserError
from spade.policy._types import Message, SamplingParams
from spade.seeds import derive_seed

if TYPE_CHECKING:
    from spade.eval._protocol import Protocol
    from spade.eval.agent._models import StepModel
    from spade.eval.providers._base import Provider


@dataclass(frozen=True)
class UserSampling:
    """How the user model samples (recorded with the result)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    max_tokens: int = 1024

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> UserSampling:
        raw = dict(raw or {})
        unknown = set(raw) - set(cls.__dataclass_fields__)
        if unknown:
            raise UserError(f"unknown user_sampling key(s): {sorted(unknown)}")
        return cls(**raw)

    def params(self, seed: int | None) -> SamplingParams:
        return SamplingParams(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                              max_new_tokens=self.max_tokens, seed=seed)


class UserModel:
    """One user model for a suite run (built once, closed with the suite)."""

    def __init__(self, spec: str, provider: Provider, sampling: UserSampling) -> None:
        from spade.eval.agent._models import step_model_for
        from spade.eval.providers._policy import PolicyProvider

        if not isinstance(provider, PolicyProvider):
            raise UserError(f"--user-model {spec}: the user simulator must be a model "
                            "(openai:, hf: or vllm:), not a replay or the oracle")
        self.spec = spec
        self.provider = provider
        self.sampling = sampling
        self._model: StepModel = step_model_for(provider)

    @classmethod
    def from_protocol(cls, spec: str, protocol: Protocol) -> UserModel:
        """The user model ``spec`` with the suite's recorded user sampling."""
        from spade.eval.providers._base import ProviderOptions, make_provider

        sampling = UserSampling.from_mapping(protocol.extra.get("user_sampling"))
        provider = make_provider(spec, ProviderOptions(batch_size=1))
        return cls(spec, provider, sampling)

    @property
    def native_tools(self) -> bool:
        """Whether calls travel as API ``tool_calls`` (else as ``<tool_call>`` text)."""
        from spade.eval.agent._models import TokenStepModel

        return not isinstance(self._model, TokenStepModel)

    def identity(self) -> dict[str, Any]:
        """What results record about the user: provider identity plus sampling."""
        return {**self.provider.identity(), "spec": self.spec, "sampling": asdict(self.sampling)}

    def reply(
        self,
        messages: Sequence[Message],
        *,
        seed: int,
        tools: Sequence[dict[str, Any]] = (),
        sampling: UserSampling | None = None,
    ) -> Reply:
        """The user's next message given the conversation from the user's side."""
        session = AgentSession(env=NoExecution(), tools=list(tools), seed=seed)
        session.begin_turn([dict(m) for m in messages])
        params = (sampling or self.sampling).params(derive_seed(seed, "user-step"))
        (out,) = self._model.step([session], [params])
        if out.finish_reason == "context":
            raise UserError(f"user model {self.spec}: the conversation no longer fits its "
                            "context window")
        return out

    def close(self) -> None:
        self.provider.close()
