"""Later prompts of a multi-turn qwen3_fc episode are bfcl-eval's Qwen3 FC handler's own.

The same raw replies are played twice on a real BFCL entry: through the suite (a token
policy that records every prompt it is given, the worker, the agent loop) and through
bfcl-eval's own ``inference_multi_turn_prompting`` (its completions client replaced by the
same replies; every prompt its ``_format_prompt`` renders is recorded). Every prompt must be
equal character for character, for a well-formed first reply (reasoning, a call, a tool
result, a closing answer) and for malformed ones (calls the handler cannot find, and one it
keeps but cannot render again: upstream's inference of the entry fails there, and so does
the episode).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _bfcl import bfcl_data, bfcl_python

from spade.policy import Generation, SamplingParams, ScriptedPolicy
from spade.policy._scripted import IM_END

#: Plays one entry through bfcl-eval's own multi-turn prompting loop (run in its venv).
_UPSTREAM_LOOP = r"""
import copy, json, sys
from pathlib import Path
from types import SimpleNamespace
from bfcl_eval import utils
from bfcl_eval.eval_checker.eval_runner import get_handler
rec = json.loads(sys.stdin.read())
utils.MULTI_TURN_FUNC_DOC_PATH = Path(rec["func_doc_dir"])
[entry] = utils.populate_test_cases_with_predefined_functions([copy.deepcopy(rec["entry"])])
[entry] = utils.add_language_specific_hint_to_function_doc([entry])
replies = list(rec["replies"])
prompts = []
qwen = get_handler("Qwen/Qwen3-8B-FC")
render = qwen._format_prompt
def recorded(messages, functions):
    prompts.append(render(messages, functions))
    return prompts[-1]
def create(**kw):
    text = replies.pop(0) if replies else ""
    return SimpleNamespace(choices=[SimpleNamespace(text=text)],
                           usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0))
qwen._format_prompt = recorded
qwen.client = SimpleNamespace(completions=SimpleNamespace(create=create))
qwen.tokenizer = SimpleNamespace(tokenize=lambda text: [])
qwen.max_context_length, qwen.model_path_or_id = 10**9, "model"
try:
    result, _ = qwen.inference_multi_turn_prompting(entry, True, True)
    error = None
except Exception as exc:
    result, error = None, f"{type(exc).__name__}: {exc}"
print(json.dumps({"prompts": prompts, "result": result, "error": error}))
"""


class _Recorder(ScriptedPolicy):
    """A token policy that replies from a list and records every prompt as text."""

    def __init__(self, replies: Sequence[str]) -> None:
        super().__init__(lambda messages: "", context_window=10**8)
        self.replies = list(replies)
        self.prompts: list[str] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: Any) -> list[Generation]:
        out = []
        for prompt in prompts:
            self.prompts.append(self.decode(prompt))
            text = self.replies.pop(0) if self.replies else ""
            ids = (*self.encode(text), IM_END)
            out.append(Generation(text, ids, (0.0,) * len(ids), "stop"))
        return out


def _entry(category: str, key: str) -> tuple[dict[str, Any], Any]:
    data = bfcl_data() / "bfcl_v4"
    lines = (data / f"BFCL_v4_{category}.json").read_text().splitlines()
    answers = (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines()
    for line, answer in zip(lines, answers, strict=True):
        if json.loads(line)["id"] == key:
            return json.loads(line), json.loads(answer)["ground_truth"]
    raise AssertionError(key)


def _ours(category: str, key: str, replies: list[str]) -> tuple[list[str], Any]:
    from spade.eval import _protocol
    from spade.eval.providers._base import Request
    from spade.eval.providers._policy import PolicyProvider
    from spade.eval.suites._base import Item
    from spade.eval.suites.bfcl import BfclV4

    entry, truth = _entry(category, key)
    suite = BfclV4(_protocol.build("bfcl_v4", {}), 0)
    suite._func_docs = str(bfcl_data() / "bfcl_v4" / "multi_turn_func_doc")
    policy = _Recorder(replies)
    item = Item(key, {"category": category, "entry": entry, "ground_truth": truth})
    try:
        [(_, scored)] = suite.play([Request(suite, item, 0, [], SamplingParams())],
                                   PolicyProvider(policy, "recorder", {}, 8))
    finally:
        suite.close()
    return policy.prompts, scored


def _upstream(category: str, key: str, replies: list[str], work: Path) -> dict[str, Any]:
    entry, _ = _entry(category, key)
    rec = {"entry": entry, "replies": replies,
           "func_doc_dir": str(bfcl_data() / "bfcl_v4" / "multi_turn_func_doc")}
    done = subprocess.run([str(bfcl_python()), "-c", _UPSTREAM_LOOP], input=json.dumps(rec),
                          capture_output=True, text=True, check=True, cwd=work,
                          env={"PATH": os.environ["PATH"], "BFCL_PROJECT_ROOT": str(work)})
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _tag(obj: Any) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


WELL_FORMED = [
    "<think>\nFirst the folder.\n</think>\n\n"
    + _tag({"name": "mkdir", "arguments": {"dir_name": "temp"}}) + "\n"
    + _tag({"name": "ls", "arguments": {"a": True}}),
    "<think>\nNow move it.\n</think>\n\nThe folder is made. Done.",
    "<think>\nSearch.\n</think>\n\n" + _tag({"name": "grep", "arguments": {
        "file_name": "final_report.pdf", "pattern": "budget analysis"}}),
    "Nothing found.",
]
#: no newline inside the tags: the handler finds no call and keeps the text
MALFORMED = [
    "<think>\nPlan: make the folder.\n</think>\n\n"
    '<tool_call>{"name": "mkdir", "arguments": {"dir_name": "temp"}}</tool_call>',
    "<think>\nSearch.\n</think>\n\n" + _tag({"name": "grep", "arguments": {
        "file_name": "final_report.pdf", "pattern": "budget analysis"}}),
    "Nothing found.",
]
#: a call the handler keeps in its history (a JSON object in the tags) but cannot render
UNRENDERABLE = [
    _tag({"name": "mkdir", "parameters": {"dir_name": "temp"}}),
    "Never asked for.",
]


@pytest.mark.parametrize(("category", "key", "replies"), [
    ("multi_turn_base", "multi_turn_base_0", WELL_FORMED),
    ("multi_turn_base", "multi_turn_base_0", MALFORMED),
    ("multi_turn_miss_func", "multi_turn_miss_func_0", WELL_FORMED),
], ids=["well_formed", "malformed", "held_out_turn"])
def test_every_prompt_is_the_handlers_own_rendering(tmp_path: Path, category: str, key: str,
                                                    replies: list[str]) -> None:
    bfcl_python()
    ours, scored = _ours(category, key, replies)
    theirs = _upstream(category, key, replies, tmp_path)
    assert theirs["error"] is None
    assert len(ours) == len(theirs["prompts"]) > len(replies)
    for k, (mine, upstream) in enumerate(zip(ours, theirs["prompts"], strict=True)):
        assert mine == upstream, f"prompt {k} differs"
    assert scored.details["bfcl_result"] == theirs["result"]
    later = "".join(ours[1:])
    assert "<tool_response>" in later or replies is MALFORMED
    if replies is WELL_FORMED:  # reasoning of an earlier turn is not shown again
        assert "First the folder." in ours[1] and "First the folder." not in ours[2]


def test_a_history_the_handler_cannot_render_fails_the_episode_there(tmp_path: Path) -> None:
    bfcl_python()
    ours, scored = _ours("multi_turn_base", "multi_turn_base_0", UNRENDERABLE)
    theirs = _upstream("multi_turn_base", "multi_turn_base_0", UNRENDERABLE, tmp_path)
    assert theirs["error"] is not None and theirs["error"].startswith("KeyError")
    assert ours == theirs["prompts"] and len(ours) == 1  # the second prompt never exists
    assert scored.details["turn_ends"] == ["decode_failed", "render_failed"]
    assert scored.details["valid"] is False
    assert scored.details["error_type"] == "multi_turn:inference_error"
    assert scored.details["bfcl_result"] == f"Error during inference: {theirs['error']}"


#: bfcl-eval's chat-completions FC loop over scripted server messages, recording each
#: request's messages as the client would send them (run in its venv).
_UPSTREAM_FC_LOOP = r"""
import copy, json, sys
from pathlib import Path
from types import SimpleNamespace
from openai.types.chat import ChatCompletion
from bfcl_eval import utils
from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
rec = json.loads(sys.stdin.read())
utils.MULTI_TURN_FUNC_DOC_PATH = Path(rec["func_doc_dir"])
[entry] = utils.populate_test_cases_with_predefined_functions([copy.deepcopy(rec["entry"])])
[entry] = utils.add_language_specific_hint_to_function_doc([entry])
replies, sent = list(rec["replies"]), []
def wire(m):
    return m if isinstance(m, dict) else m.model_dump(exclude_none=True)
def create(**kw):
    sent.append([wire(m) for m in kw["messages"]])
    message = replies.pop(0) if replies else {"role": "assistant", "content": ""}
    return ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})
fc = OpenAICompletionsHandler("m", 0.0, "m-FC", True)
fc.client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
result, _ = fc.inference_multi_turn_FC(entry, False, True)
print(json.dumps({"sent": sent, "result": result}))
"""


def _call(cid: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


#: server messages: a call with compact arguments, an answer, then a reply whose second
#: call is not JSON (the turn ends unexecuted; the message stays in the history as sent)
NATIVE_REPLIES = [
    {"role": "assistant", "content": None,
     "tool_calls": [_call("c1", "mkdir", '{"dir_name":"temp"}')]},
    {"role": "assistant", "content": "Made it."},
    {"role": "assistant", "content": None, "tool_calls": [
        _call("c2", "grep", '{"file_name":"final_report.pdf","pattern":"budget analysis"}'),
        _call("c3", "ls", "{")]},
]


def _without_none(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def test_native_history_is_the_servers_messages_as_sent(tmp_path: Path) -> None:
    """openai_fc: every later request carries the earlier replies as the server sent them
    (arguments strings, ids, a malformed call included) and results by those ids, as
    bfcl-eval's chat-completions FC loop sends them."""
    from _bfcl import records, run
    from _user_server import user_server

    queue = [dict(m) for m in NATIVE_REPLIES]
    bfcl_python()
    with user_server(lambda messages: queue.pop(0) if queue else "", model="m") as (spec,
                                                                                  bodies):
        run(tmp_path / "oa", spec, ["multi_turn_base"], 1)
    entry, _ = _entry("multi_turn_base", "multi_turn_base_0")
    rec = {"entry": entry, "replies": NATIVE_REPLIES,
           "func_doc_dir": str(bfcl_data() / "bfcl_v4" / "multi_turn_func_doc")}
    done = subprocess.run([str(bfcl_python()), "-c", _UPSTREAM_FC_LOOP], input=json.dumps(rec),
                          capture_output=True, text=True, check=True, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "BFCL_PROJECT_ROOT": str(tmp_path),
                               "OPENAI_API_KEY": "unused"})
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    ours = [_without_none(b["messages"]) for b in bodies]
    assert len(ours) == len(theirs["sent"]) > len(NATIVE_REPLIES)
    for k, (mine, upstream) in enumerate(zip(ours, theirs["sent"], strict=True)):
        assert mine == _without_none(upstream), f"request {k} differs"
    later = json.dumps(ours[-1])
    assert '"{\\"dir_name\\":\\"temp\\"}"' in later and '"arguments": "{"' in later
    got = records(tmp_path / "oa")[("multi_turn_base_0", 0)]["details"]
    turns = got["transcript"]["turns"]
    assert turns[0]["steps"][0]["results"] and not turns[1]["steps"][0]["results"]
    assert got["turn_ends"][1] == "decode_failed"  # the malformed call ran nothing
