"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays a scripted model.

The code under test (a user simulator, or an evaluated ``openai:`` model) talks to it
exactly as to a hosted model (``/v1/models``, ``/v1/chat/completions`` with JSON bodies);
the server answers with ``reply(messages)`` (reply text, or a whole assistant message
with ``tool_calls``) and keeps every request it got, so tests can check what the model was
shown and how it was asked to sample.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[list[dict[str, Any]]], "str | dict[str, Any]"]


@contextmanager
def user_server(reply: Reply, model: str = "scripted-user") -> Iterator[tuple[str, list]]:
    """Yield (``openai:`` spec, list of received request bodies)."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": model, "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            out = reply(body["messages"])
            message = out if isinstance(out, dict) else {"role": "assistant", "content": out}
            self._send({"id": f"c{len(seen)}", "object": "chat.completion", "created": 0,
                        "model": model, "choices": [{
                            "index": 0, "finish_reason": "stop",
                            "message": message}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                  "total_tokens": 2}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"openai:http://127.0.0.1:{server.server_address[1]}/v1#{model}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
