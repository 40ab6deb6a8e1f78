"""``openai:BASE_URL#MODEL``: any OpenAI-compatible chat-completions server (e.g. vllm serve).

The server is probed once (``GET /models``) before anything runs, so an unreachable URL is
one clear error instead of a stalled evaluation. The API key comes from ``OPENAI_API_KEY``
(or ``EMPTY`` for local servers).
"""

from __future__ import annotations

import os

from spade.eval.providers._base import ProviderOptions
from spade.eval.providers._policy import PolicyProvider

from spade.errors import UserError
from spade.modelspec import SCHEMES, parse_spec


def check_server(base_url: str, timeout_s: float = 10.0) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or
                           "EMPTY", max_retries=0, timeout=timeout_s)
    try:
        client.models.list()
    except openai.APIConnectionError as exc:
        raise UserError(f"cannot reach OpenAI-compatible server at {base_url}: "
                        f"{str(exc).splitlines()[0]}") from None
    except openai.APIStatusError:
        pass  # it answered; some servers just do not list models


def make(rest: str, options: ProviderOptions) -> PolicyProvider:
    from spade.policy import OpenAIPolicy

    spec = parse_spec(f"openai:{rest}", (SCHEMES["openai"],), "openai spec")
    base_url, model = spec.openai_target
    if not base_url.startswith(("http://", "https://")):
        raise UserError(f"openai spec needs BASE_URL#MODEL with an http(s) URL, got {rest!r}")
    check_server(base_url)
    batch = options.batch_size or 32
    policy = OpenAIPolicy(base_url, model, timeout_s=options.timeout_s, concurrency=batch)
    ident = {"spec": f"openai:{rest}", "name": model, "sha256": None}
    return PolicyProvider(policy, f"openai:{rest}", ident, batch)
