"""The shared tool-calling loop: token level, scripted (replay), native tools, real SmolLM2."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from spade.eval.agent import (
    END_NO_CALL,
    END_SINGLE_STEP,
    END_STEP_CAP,
    AgentSession,
    FunctionEnvironment,
    TokenStepModel,
    Transcript,
    encode_script,
    play_turn,
    step_model_for,
)
from spade.eval.providers._base import ProviderOptions, Request, make_provider
from spade.eval.providers._policy import PolicyProvider
from spade.eval.suites._base import Item

from spade.envs import format_tool_call
from spade.policy import ScriptedPolicy
from spade.policy._types import SamplingParams
from spade.seeds import derive_seed

ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                                                    "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}
MUL = {"type": "function", "function": {
    "name": "mul", "description": "Multiply.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                                                    "b": {"type": "integer"}}}}}
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=256)


def env() -> FunctionEnvironment:
    return FunctionEnvironment({"add": lambda a, b: a + b, "mul": lambda a, b: a * b})


def calculator(messages: list[dict[str, Any]]) -> str:
    last = messages[-1]
    if last["role"] == "tool":
        return f"The result is {last['content']}."
    if "broken" in last["content"]:
        return "<tool_call>{not json}</tool_call>"
    if "both" in last["content"]:
        return "<tool_call>{oops</tool_call>" + format_tool_call("add", {"a": 1, "b": 1})
    return format_tool_call("add", {"a": 2, "b": 3})


def session(tools: list[dict[str, Any]] | None = None, seed: int = 7) -> AgentSession:
    return AgentSession(env=env(), tools=list(tools or [ADD]), seed=seed)


def test_token_loop_executes_calls_and_feeds_results_back() -> None:
    policy = ScriptedPolicy(calculator)
    model = TokenStepModel(policy)
    s = session()
    s.begin_turn([{"role": "user", "content": "what is 2 + 3?"}])
    play_turn([s], model, GREEDY)
    turn = s.current
    assert turn.end == END_NO_CALL and len(turn.steps) == 2
    assert [c.name for c in turn.steps[0].calls] == ["add"] and turn.steps[0].results == ("5",)
    roles = [m["role"] for m in s.transcript.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = s.transcript.messages[1]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"a": 2, "b": 3}'
    assert s.transcript.messages[2]["tool_call_id"] == call["id"]
    assert s.transcript.messages[3]["content"] == "The result is 5."
    # token level: the tools went through the template, later turns were appended
    text = policy.decode(s.state["ids"])
    assert text.count('"name": "add"') >= 1 and text.index("# Tools") < text.index("2 + 3")
    assert model.renders_tools()


def test_step_seeds_are_per_session_turn_and_step() -> None:
    s = session(seed=11)
    s.begin_turn([{"role": "user", "content": "2+3"}])
    play_turn([s], TokenStepModel(ScriptedPolicy(calculator)), GREEDY)
    assert [st.seed for st in s.current.steps] == [
        derive_seed(11, "agent-step", 0, 0), derive_seed(11, "agent-step", 0, 1)]


def test_step_cap_stops_the_episode() -> None:
    s = session()
    s.begin_turn([{"role": "user", "content": "loop"}])
    forever = ScriptedPolicy(lambda m: format_tool_call("add", {"a": 1, "b": 2}))
    play_turn([s], TokenStepModel(forever), GREEDY, max_steps=3)
    assert s.current.end == END_STEP_CAP and s.stopped and s.current.calling_steps == 4
    with pytest.raises(RuntimeError):
        s.begin_turn([{"role": "user", "content": "more"}])


def test_unparseable_reply_ends_the_turn_and_mixed_reply_reports_the_error() -> None:
    s = session()
    s.begin_turn([{"role": "user", "content": "broken"}])
    play_turn([s], TokenStepModel(ScriptedPolicy(calculator)), GREEDY)
    assert s.current.end == END_NO_CALL and len(s.current.steps) == 1
    assert s.current.steps[0].errors and not s.current.steps[0].calls
    t = session()
    t.begin_turn([{"role": "user", "content": "both"}])
    play_turn([t], TokenStepModel(ScriptedPolicy(calculator)), GREEDY)
    first = t.current.steps[0]
    assert len(first.calls) == 1 and len(first.errors) == 1 and first.results == ("2",)
    notes = [m for m in t.transcript.messages if m["role"] == "tool" and "tool_call_id" not in m]
    assert len(notes) == 1 and "could not be parsed" in notes[0]["content"]


def test_batched_sessions_and_tools_added_between_turns() -> None:
    seen: list[str] = []

    def respond(messages: list[dict[str, Any]]) -> str:
        seen.append(messages[0]["content"])
        last = messages[-1]
        if last["role"] == "tool":
            return "done"
        if "multiply" in last["content"]:
            return format_tool_call("mul", {"a": 4, "b": 5})
        return format_tool_call("add", {"a": 1, "b": 1})

    model = TokenStepModel(ScriptedPolicy(respond))
    sessions = [session(), session(seed=8)]
    for s in sessions:
        s.begin_turn([{"role": "user", "content": "add"}])
    play_turn(sessions, model, GREEDY)
    for s in sessions:
        s.begin_turn([{"role": "user", "content": "now multiply"}], add_tools=[MUL])
    play_turn(sessions, model, GREEDY)
    for s in sessions:
        assert [t.end for t in s.transcript.turns] == [END_NO_CALL, END_NO_CALL]
        assert s.transcript.turns[1].added_tools == ["mul"]
        assert s.transcript.turns[1].steps[0].results == ("20",)
    assert '"mul"' in seen[-1] and '"mul"' not in seen[0]


def test_single_step_records_calls_without_running_them() -> None:
    s = session()
    s.begin_turn([{"role": "user", "content": "2+3"}])
    play_turn([s], TokenStepModel(ScriptedPolicy(calculator)), GREEDY, single_step=True)
    assert s.current.end == END_SINGLE_STEP and s.current.steps[0].results == ()
    assert [m["role"] for m in s.transcript.messages] == ["user", "assistant"]


class _Suite:
    id = "toy"


def test_replay_script_reproduces_a_transcript(tmp_path: Path) -> None:
    s = session()
    s.begin_turn([{"role": "user", "content": "what is 2 + 3?"}])
    play_turn([s], TokenStepModel(ScriptedPolicy(calculator)), GREEDY)
    path = tmp_path / "replay.jsonl"
    path.write_text(json.dumps({"suite": "toy", "id": "a", "sample": 0,
                                "completion": encode_script(s.transcript)}) + "\n")
    provider = make_provider(f"replay:{path}", ProviderOptions())
    request = Request(_Suite(), Item("a", {}), 0, [], GREEDY)  # type: ignore[arg-type]
    r = AgentSession(env=env(), tools=[ADD], seed=7, request=request)
    r.begin_turn([{"role": "user", "content": "what is 2 + 3?"}])
    play_turn([r], step_model_for(provider), GREEDY)
    assert r.transcript.messages == s.transcript.messages
    assert Transcript.from_dict(r.transcript.to_dict()).to_dict() == r.transcript.to_dict()
    r.begin_turn([{"role": "user", "content": "again"}])
    from spade.errors import UserError

    with pytest.raises(UserError, match="1 turn"):
        play_turn([r], step_model_for(provider), GREEDY)


class _ToolServer(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        if body["messages"][-1]["role"] == "tool":
            message: dict[str, Any] = {"role": "assistant", "content": "It is 5."}
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "srv-1", "type": "function",
                 "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]}
        reply = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_native_tools_through_an_openai_compatible_server() -> None:
    from spade.policy import OpenAIPolicy

    server = ThreadingHTTPServer(("127.0.0.1", 0), _ToolServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        policy = OpenAIPolicy(f"http://127.0.0.1:{server.server_port}/v1", "m", max_retries=0)
        provider = PolicyProvider(policy, "openai:test", {"spec": "openai:test"}, 1)
        s = session(seed=5)
        s.begin_turn([{"role": "user", "content": "2+3?"}])
        play_turn([s], step_model_for(provider), GREEDY)
    finally:
        server.shutdown()
        server.server_close()
    first, second = _ToolServer.bodies[-2:]
    assert first["tools"] == [ADD] and first["seed"] == derive_seed(5, "agent-step", 0, 0)
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "srv-1", "content": "5"}
    assert second["messages"][-2]["tool_calls"][0]["id"] == "srv-1"
    assert s.current.steps[0].results == ("5",) and s.current.end == END_NO_CALL


def test_real_smollm2_chat_template_with_tools() -> None:
    pytest.importorskip("transformers")
    import torch

    from spade.errors import UserError
    from spade.policy import HFPolicy, prepare_smollm2

    try:
        path = prepare_smollm2()
    except UserError as exc:
        pytest.skip(str(exc))
    torch.set_num_threads(1)
    policy = HFPolicy.from_path(path, device="cpu")
    model = TokenStepModel(policy)
    s = session()
    s.begin_turn([{"role": "user", "content": "Use the add tool to add 2 and 3."}])
    play_turn([s], model, SamplingParams(temperature=0.0, max_new_tokens=24), max_steps=2)
    prompt = policy.decode(s.state["ids"])
    assert '"add"' in prompt and "Use the add tool" in prompt
    assert s.current.end is not None and s.current.steps[0].output_tokens
    # SmolLM2's template ignores tools=, so the schemas come as a system block
    assert not model.renders_tools() and "<tools>" in prompt
    # greedy decoding is reproducible across fresh sessions
    t = session()
    t.begin_turn([{"role": "user", "content": "Use the add tool to add 2 and 3."}])
    play_turn([t], model, SamplingParams(temperature=0.0, max_new_tokens=24), max_steps=2)
    assert t.transcript.messages == s.transcript.messages


def test_native_calls_are_kept_as_sent_through_the_loop() -> None:
    """A native reply's calls (malformed ones too) survive booking and results, so the
    stored script replays exactly what the server sent; "" arguments are not {}."""
    import json as _json

    from spade.eval.agent import AgentSession, NoExecution, encode_script, script_step

    session = AgentSession(env=NoExecution(), tools=[], seed=0)
    session.begin_turn([{"role": "user", "content": "hi"}])
    reply = script_step({"content": "", "tool_calls": [
        {"id": "a", "name": "f", "arguments": '{"x": 1}'},
        {"id": "b", "name": "g", "arguments": ""}]})
    calls = session.book(reply, 0)
    assert [c.name for c in calls] == ["f"]  # "" is malformed, not an empty object
    session.deliver(["ok"], max_steps=5)
    step = _json.loads(encode_script(session.transcript))["turns"][0][0]
    assert step["tool_calls"] == [{"id": "a", "name": "f", "arguments": '{"x": 1}'},
                                  {"id": "b", "name": "g", "arguments": ""}]
