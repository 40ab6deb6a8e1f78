"""The openai backend against a real HTTP server on 127.0.0.1 speaking /v1/chat/completions."""

from __future__ import annotations

import json
import random
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("openai")

from spade.errors import UserError
from spade.policy import ChatPolicy, OpenAIPolicy, SamplingParams

SECRET = "sk-test-do-not-print-1234"


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, Any]] = []
        self.auth_seen: list[str | None] = []
        self.failures: list[int] = []  # status codes to answer before succeeding


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if status != 200:  # the SDK's retry waits this long (its own backoff is 0.5 s up)
            self.send_header("retry-after-ms", "1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": "no such route"}})
            return
        self.server.requests.append(body)
        self.server.auth_seen.append(self.headers.get("Authorization"))
        if self.server.failures:
            status = self.server.failures.pop(0)
            self._send(status, {"error": {"message": f"failure {status}", "type": "test"}})
            return
        last = body["messages"][-1]["content"]
        text = f"echo {last} from {body['model']}"
        if body.get("temperature", 1.0) > 0:  # sampled: one draw from the request's own seed
            rng = random.Random(body["seed"]) if "seed" in body else random.Random()
            text += f" #{rng.randrange(10**9)}"
        reason = "stop"
        if len(text) > body["max_tokens"]:
            text, reason = text[: body["max_tokens"]], "length"
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": reason,
                    }
                ],
            },
        )


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def _policy(server: Server, **kw: Any) -> OpenAIPolicy:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return OpenAIPolicy(url, "judge-1", api_key_env="SPADE_TEST_KEY", **kw)


def test_chat_batch(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_TEST_KEY", SECRET)
    policy = _policy(server)
    assert isinstance(policy, ChatPolicy)
    convs = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
    params = SamplingParams(temperature=0.3, top_k=5, max_new_tokens=200, stop=("##",), seed=4)
    gens = policy.chat(convs, params)
    assert [g.text.split(" #")[0] for g in gens] == [f"echo q{i} from judge-1" for i in range(5)]
    assert all(g.finish_reason == "stop" and g.token_ids == () for g in gens)
    body = next(b for b in server.requests if b["messages"][-1]["content"] == "q0")
    assert body["temperature"] == 0.3 and body["max_tokens"] == 200
    assert body["stop"] == ["##"] and body["top_k"] == 5
    assert len({b["seed"] for b in server.requests}) == 5  # one seed per request
    assert server.auth_seen[0] == f"Bearer {SECRET}"
    short = policy.chat(convs[:1], SamplingParams(max_new_tokens=4))[0]
    assert (short.text, short.finish_reason) == ("echo", "length")


def test_every_request_carries_its_own_seed(server: Server) -> None:
    policy = _policy(server)
    same = [[{"role": "user", "content": "q"}]] * 6
    params = SamplingParams(temperature=0.8, seed=11)
    first = [g.text for g in policy.chat(same, params)]
    assert len(set(first)) == 6  # identical prompts in one batch: different samples
    assert [g.text for g in policy.chat(same, params)] == first  # same call: same samples
    seeds = [SamplingParams(temperature=0.8, seed=s) for s in (5, 6, 5)]
    texts = [g.text for g in policy.chat(same[:3], seeds)]
    assert texts[0] == texts[2] != texts[1]  # the request's seed decides, not its position
    assert [g.text for g in policy.chat(same[:1], seeds[1:2])] == [texts[1]]


def test_transient_errors_are_retried(server: Server) -> None:
    server.failures = [500, 429]
    gen = _policy(server, max_retries=3).chat(
        [[{"role": "user", "content": "x"}]], SamplingParams()
    )
    assert gen[0].text.startswith("echo x")
    assert len(server.requests) == 3


def test_retries_are_bounded(server: Server) -> None:
    server.failures = [503] * 10
    with pytest.raises(UserError, match="failed after 3 attempts"):
        _policy(server, max_retries=2).chat([[{"role": "user", "content": "x"}]], SamplingParams())
    assert len(server.requests) == 3


def test_client_error_is_one_line_and_hides_the_key(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_TEST_KEY", SECRET)
    server.failures = [401]
    with pytest.raises(UserError) as info:
        _policy(server).chat([[{"role": "user", "content": "x"}]], SamplingParams())
    message = str(info.value)
    assert "HTTP 401" in message and "\n" not in message and SECRET not in message
    assert len(server.requests) == 1  # not retried


def test_unreachable_server() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    policy = OpenAIPolicy(f"http://127.0.0.1:{port}/v1", "m", max_retries=1)
    with pytest.raises(UserError, match=r"127\.0\.0\.1.* failed after 2 attempts") as info:
        policy.chat([[{"role": "user", "content": "x"}]], SamplingParams())
    assert "\n" not in str(info.value)


def test_prefill_is_refused_unless_the_server_continues(server: Server) -> None:
    conv = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "```python\n"}]
    with pytest.raises(UserError, match="cannot continue a prefilled assistant message"):
        _policy(server).chat([conv], SamplingParams())
    assert server.requests == []  # refused before any request
    _policy(server, continue_final_message=True).chat([conv], SamplingParams(top_k=3))
    body = server.requests[-1]
    assert body["messages"][-1] == {"role": "assistant", "content": "```python\n"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["top_k"] == 3
    _policy(server, continue_final_message=True).chat([conv[:1]], SamplingParams())
    assert "continue_final_message" not in server.requests[-1]  # plain requests unchanged
