"""The project's side of the bfcl-eval worker: a subprocess speaking JSON lines.

The worker (``bfcl_worker.py``) runs in bfcl-eval's own venv; this client starts it,
checks its version, sends requests and turns its failures into one-line errors. It gets a
scratch ``BFCL_PROJECT_ROOT`` (bfcl-eval writes result/score folders there on import), no
API keys of the caller (a placeholder satisfies the checker handler's client
constructor; nothing is ever sent) and hub access switched off.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.eval.agent._session import PromptUnrenderable
from spade.eval.suites.bfcl_venv import BFCL_EVAL_VERSION, ensure_python

from spade.envs import ToolCall
from spade.errors import UserError
from spade.policy._types import Message

WORKER = Path(__file__).with_name("bfcl_worker.py")
REQUEST_TIMEOUT_S = 600.0
_PASS_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


class BfclBridge:
    """A running bfcl-eval worker; ``hello`` holds what it reported at start."""

    def __init__(self, python: Path | None = None, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.python = python or ensure_python()
        self.timeout_s = timeout_s
        self._scratch = Path(tempfile.mkdtemp(prefix="spade-bfcl-"))
        env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
        env.update(BFCL_PROJECT_ROOT=str(self._scratch), OPENAI_API_KEY="unused-offline",
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0",
                   TOKENIZERS_PARALLELISM="false")
        self._stderr = (self._scratch / "worker.log").open("w")
        self._proc = subprocess.Popen(
            [str(self.python), "-I", str(WORKER)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, env=env, text=True, bufsize=1,
            cwd=self._scratch,
        )
        self._episodes = 0
        self.hello: dict[str, Any] = self._read("start")
        if self.hello.get("bfcl_eval") != BFCL_EVAL_VERSION:
            self.close()
            raise UserError(f"the bfcl-eval worker has version {self.hello.get('bfcl_eval')}, "
                            f"this suite needs {BFCL_EVAL_VERSION}")

    def _log_tail(self) -> str:
        self._stderr.flush()
        lines = (self._scratch / "worker.log").read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def _read(self, what: str) -> Any:
        assert self._proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self._proc.stdout, selectors.EVENT_READ)
        ready = sel.select(self.timeout_s)
        sel.close()
        if not ready:
            self.close()
            raise UserError(f"the bfcl-eval worker did not answer {what} within "
                            f"{self.timeout_s:.0f} s")
        line = self._proc.stdout.readline()
        if not line:
            tail = self._log_tail()
            self.close()
            raise UserError(f"the bfcl-eval worker exited during {what}: {tail}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise UserError(f"bfcl-eval {what} failed: {reply.get('error')}")
        return reply["result"]

    def request(self, op: str, **fields: Any) -> Any:
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise UserError("the bfcl-eval worker is not running")
        try:
            self._proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            tail = self._log_tail()
            self.close()
            raise UserError(f"the bfcl-eval worker exited: {tail}") from None
        return self._read(op)

    def new_episode(self, entry: dict[str, Any], tool_format: str = "openai_fc",
                    functions: Sequence[dict[str, Any]] = ()) -> BfclEpisode:
        """An episode on the backends; for a text (prompting) format, the worker also keeps
        that handler's chat history over ``functions`` (see :meth:`BfclEpisode.prompt`)."""
        self._episodes += 1
        key = f"e{self._episodes}"
        self.request("open", episode=key, entry=entry, tool_format=tool_format,
                     functions=list(functions))
        return BfclEpisode(self, key)

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pipe in (proc.stdout, proc.stdin):
            if pipe is not None and not pipe.closed:
                pipe.close()
        self._stderr.close()
        shutil.rmtree(self._scratch, ignore_errors=True)


class BfclEpisode:
    """One multi-turn episode's backend instances in the worker (a ToolEnvironment)."""

    def __init__(self, bridge: BfclBridge, key: str) -> None:
        self.bridge, self.key = bridge, key

    def execute(self, calls: Sequence[ToolCall]) -> list[str]:
        payload = [{"name": c.name, "arguments": dict(c.arguments)} for c in calls]
        results: list[str] = self.bridge.request("execute", episode=self.key, calls=payload)
        return results

    def begin_turn(self, messages: Sequence[Message]) -> None:
        """A turn's user messages join the handler's history (prompting formats)."""
        self.bridge.request("turn", episode=self.key, messages=[dict(m) for m in messages])

    def prompt(self, session: object = None) -> str:
        """The next prompt as the handler renders its history (``session``: unused, the
        loop's ``render_prompt`` signature); :class:`PromptUnrenderable` where it fails."""
        got = self.bridge.request("prompt", episode=self.key)
        if got["text"] is None:
            raise PromptUnrenderable(f"{got['kind']}: {got['error']}")
        return str(got["text"])

    def close(self) -> None:
        self.bridge.request("close", episode=self.key)
