"""Text-level generation through any OpenAI-compatible chat-completions server.

Used for frozen external designers, hint writers and user simulators: no token ids, no
log-probs. The API key is read from an environment variable whose NAME is configured (the
key itself is never stored in configs or logged). Transient failures (connection, timeout,
408, 409, 429, 5xx) are retried by the OpenAI SDK itself (``max_retries``, its bounded
exponential backoff, honouring a server's ``Retry-After``); then, like any client error,
they become one-line ``UserError``s. Every request sends its own ``seed`` (servers that honour
seeds, such as vLLM's, then give each request its own reproducible stream).

A conversation ending in an assistant message is a prefill the model must continue. The
chat-completions API has no standard way to ask for that; vLLM and SGLang servers take
``continue_final_message``, which this policy sends when built with
``continue_final_message=True`` (otherwise such a request is refused with one line).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from spade.errors import UserError
from spade.policy._types import (
    BatchParams,
    Generation,
    Message,
    SamplingParams,
    per_request,
    split_prefill,
)


class OpenAIPolicy:
    """``ChatPolicy`` over ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        name: str | None = None,
        max_retries: int = 3,
        timeout_s: float = 120.0,
        concurrency: int = 8,
        continue_final_message: bool = False,
    ) -> None:
        if not base_url or not model:
            raise UserError("an openai policy needs a base URL and a model name")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = name or model
        self.api_key_env = api_key_env
        #: retries of a transient failure, made by the SDK's client
        self.max_retries = max(0, max_retries)
        self.timeout_s = timeout_s
        self.concurrency = max(1, concurrency)
        #: The server continues a final assistant message (vLLM, SGLang); see the docstring.
        self.continue_final_message = continue_final_message
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from openai import OpenAI
            except ImportError:
                raise UserError("the openai backend needs: pip install openai") from None
            key = os.environ.get(self.api_key_env) or "EMPTY"
            self._client = OpenAI(
                base_url=self.base_url, api_key=key, max_retries=self.max_retries,
                timeout=self.timeout_s,
            )
        return self._client

    def chat(
        self, conversations: Sequence[Sequence[Message]], params: BatchParams
    ) -> list[Generation]:
        rows = per_request(params, len(conversations))
        if not self.continue_final_message and any(split_prefill(c)[1] for c in conversations):
            raise UserError(
                f"the OpenAI-compatible policy {self.name!r} cannot continue a prefilled "
                "assistant message unless built with continue_final_message=True (vLLM and "
                "SGLang servers support it); set designer.prefill: none")
        if len(conversations) <= 1 or self.concurrency == 1:
            return [self._one(c, p) for c, p in zip(conversations, rows, strict=True)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(conversations))) as pool:
            return list(pool.map(self._one, conversations, rows))

    def request_body(self, messages: Sequence[Message], params: SamplingParams
                     ) -> dict[str, Any]:
        """The chat-completions request for one conversation (model, sampling, seed)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_new_tokens,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        extra: dict[str, Any] = {}
        if params.top_k > 0:
            extra["top_k"] = params.top_k  # vLLM/SGLang servers accept it
        if split_prefill(messages)[1]:
            extra.update(continue_final_message=True, add_generation_prompt=False)
        if extra:
            body["extra_body"] = extra
        return body

    def _clean(self, exc: BaseException) -> str:
        """First line of an error, with the API key masked should a server echo it."""
        text = (str(exc).strip() or type(exc).__name__).splitlines()[0][:300]
        key = os.environ.get(self.api_key_env)
        return text.replace(key, "***") if key else text

    def create(self, body: dict[str, Any]) -> Any:
        """``POST /chat/completions`` with ``body``; the SDK retries transient failures,
        what still fails is one line naming the server."""
        import openai

        try:
            return self._get_client().chat.completions.create(**body)
        except (openai.APIConnectionError,  # includes timeouts
                openai.RateLimitError, openai.InternalServerError) as exc:
            raise UserError(
                f"OpenAI-compatible server at {self.base_url} failed after "
                f"{self.max_retries + 1} attempts: {self._clean(exc)}"
            ) from None
        except openai.APIStatusError as exc:
            raise UserError(
                f"OpenAI-compatible server at {self.base_url} rejected the request "
                f"(HTTP {exc.status_code}): {self._clean(exc)}"
            ) from None

    def _one(self, messages: Sequence[Message], params: SamplingParams) -> Generation:
        response = self.create(self.request_body(messages, params))
        if not response.choices:
            raise UserError(f"OpenAI-compatible server at {self.base_url} returned no choices")
        choice = response.choices[0]
        text = choice.message.content or ""
        reason = "length" if choice.finish_reason == "length" else "stop"
        return Generation(text=text, finish_reason=reason)
