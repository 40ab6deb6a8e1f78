"""Raw replies read as bfcl-eval's own handler reads them, malformed ones included.

Each reply family where a lenient reading and bfcl-eval's disagree is played through the
suite (replay provider, the agent loop, the worker) and, separately, turned into a result
file by bfcl-eval's handler itself (``QwenFCHandler._parse_query_response_prompting`` for
text, the FC form for native calls) and scored by ``bfcl evaluate``; the verdicts must be
equal item by item.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _bfcl import bfcl_python, records, replay_file, run
from spade.eval.suites.bfcl import TOOL_FORMATS
from spade.eval.suites.bfcl_crosscheck import _evaluate

#: Builds the result-file step bfcl-eval's handler stores for each reply (run in its venv).
_UPSTREAM_RESULTS = r"""
import json, sys
from types import SimpleNamespace
from bfcl_eval.eval_checker.eval_runner import get_handler
qwen = get_handler("Qwen/Qwen3-8B-FC")
out = []
for line in sys.stdin:
    rec = json.loads(line)
    if rec["native"] is not None:
        res = [{n: a} for n, a in rec["native"]] or rec["text"]
    else:
        resp = SimpleNamespace(choices=[SimpleNamespace(text=rec["text"])],
                               usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0))
        res = qwen._parse_query_response_prompting(resp)["model_responses"]
    out.append({"id": rec["id"], "result": res})
print(json.dumps(out))
"""

SIMPLE, IRRELEVANT = "simple_python", "irrelevance"


def _tag(obj: Any) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


def _text_families(name: str, args: dict[str, Any]) -> list[tuple[str, str]]:
    """(family, reply text) for a gold call ``name(**args)`` (dotted name as documented)."""
    call = {"name": name, "arguments": args}
    return [
        ("well_formed", _tag(call)),
        ("no_newlines_in_tags", f"<tool_call>{json.dumps(call)}</tool_call>"),
        ("parameters_key", _tag({"name": name, "parameters": args})),
        ("arguments_as_string", _tag({"name": name, "arguments": json.dumps(args)})),
        ("xml_function", f"<tool_call>\n<function={name}>\n" + "".join(
            f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
         + "</function>\n</tool_call>"),
        ("fenced_json", f"<tool_call>\n```json\n{json.dumps(call)}\n```\n</tool_call>"),
        ("unclosed_last_tag", f"<tool_call>\n{json.dumps(call)}\n"),
        ("padded_name", _tag({"name": f" {name} ", "arguments": args})),
        ("no_arguments", _tag({"name": name})),
        ("unclosed_think", f"<think>\nLet me call it.\n{_tag(call)}"),
        ("closed_think", f"<think>\n{_tag({'name': 'x', 'arguments': {}})}\n</think>\n\n"
                         f"{_tag(call)}"),
        ("underscored_name", _tag({"name": name.replace(".", "_"), "arguments": args})),
    ]


def _native_families(name: str, args: dict[str, Any]) -> list[tuple[str, list[list[str]]]]:
    """(family, [[name, arguments string], ...]) as an OpenAI-compatible server sends them."""
    good = [name, json.dumps(args)]
    return [
        ("native_well_formed", [good]),
        ("native_empty_arguments", [[name, ""]]),
        ("native_arguments_not_json", [[name, "{base: 10"]]),
        ("native_arguments_a_list", [[name, "[10, 5]"]]),
        ("native_one_malformed_of_two", [good, [name, "{"]]),
    ]


def _gold(oracle: Path, key: str) -> tuple[str, dict[str, Any]]:
    rec = records(oracle)[(key, 0)]
    call = json.loads(rec["completion"])["turns"][0][0]["tool_calls"][0]
    docs = {t["name"].replace(".", "_"): t["name"] for t in rec["details"]["transcript"]["tools"]}
    args = call["arguments"]  # as a server sends it: a JSON string
    return docs[call["name"]], dict(json.loads(args) if isinstance(args, str) else args)


def _upstream(replies: dict[str, dict[str, Any]], categories: dict[str, str], work: Path
              ) -> dict[str, bool]:
    python = bfcl_python()
    lines = "".join(json.dumps({"id": k, **v}) + "\n" for k, v in replies.items())
    done = subprocess.run([str(python), "-c", _UPSTREAM_RESULTS], input=lines, text=True,
                          capture_output=True, check=True, cwd=work,
                          env={"BFCL_PROJECT_ROOT": str(work), "OPENAI_API_KEY": "x",
                               "PATH": "/usr/bin:/bin"})
    results = json.loads(done.stdout.strip().splitlines()[-1])
    by_model: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        native = isinstance(r["result"], list)
        model = TOOL_FORMATS["openai_fc" if native else "qwen3_fc"]
        by_model.setdefault(model, []).append(
            {"id": r["id"], "details": {"category": categories[r["id"]],
                                         "bfcl_result": r["result"]}})
    verdicts: dict[str, bool] = {}
    for k, (model, recs) in enumerate(sorted(by_model.items())):
        verdicts.update(_evaluate(model, recs, work / f"m{k}", python)[0])
    return verdicts


@pytest.mark.slow
def test_every_reply_family_gets_bfcl_evals_verdict(tmp_path: Path) -> None:
    bfcl_python()
    oracle = tmp_path / "oracle"
    run(oracle, "oracle", [SIMPLE, IRRELEVANT], 17)
    keys = [k for (k, _), r in sorted(records(oracle).items(), key=lambda x: int(
        x[0][0].rsplit("_", 1)[1])) if r["details"]["category"] == SIMPLE]
    irr = sorted((k for (k, _), r in records(oracle).items()
                  if r["details"]["category"] == IRRELEVANT), key=lambda k: int(k.split("_")[1]))
    name, args = _gold(oracle, keys[0])
    families = [*_text_families(name, args), *_native_families(name.replace(".", "_"), args)]
    assert len(families) <= len(keys)
    replies: dict[str, dict[str, Any]] = {}
    family_of: dict[str, str] = {}
    for key, (family, _) in zip(keys, families, strict=False):
        gold_name, gold_args = _gold(oracle, key)
        family_of[key] = family
        if family.startswith("native"):
            made = dict(_native_families(gold_name.replace(".", "_"), gold_args))[family]
            replies[key] = {"text": "", "native": made}
        else:
            replies[key] = {"text": dict(_text_families(gold_name, gold_args))[family],
                            "native": None}
    # irrelevance items: a call is a failure only when bfcl-eval decodes one
    irr_families = {"parameters_key": {"text": _tag({"name": "f", "parameters": {}}),
                                       "native": None},
                    "no_newlines_in_tags": {"text": '<tool_call>{"name": "f", "arguments": {}}'
                                                    "</tool_call>", "native": None},
                    "native_empty_arguments": {"text": "", "native": [["f", ""]]},
                    "well_formed": {"text": _tag({"name": "f", "arguments": {}}),
                                    "native": None}}
    for key, (family, reply) in zip(irr, irr_families.items(), strict=False):
        replies[key], family_of[key] = reply, f"irrelevance/{family}"
    scripts = {k: json.loads(r["completion"]) for (k, _), r in records(oracle).items()}
    for key, rep in replies.items():
        step: Any = rep["text"] if rep["native"] is None else {
            "content": rep["text"],
            "tool_calls": [{"id": f"c{i}", "name": n, "arguments": a}
                           for i, (n, a) in enumerate(rep["native"])]}
        scripts[key] = {"turns": [[step]]}
    ours_dir = tmp_path / "ours"
    run(ours_dir, f"replay:{replay_file(tmp_path / 'r.jsonl', scripts)}", [SIMPLE, IRRELEVANT],
        17)
    ours = {k: bool(r["details"]["valid"]) for (k, _), r in records(ours_dir).items()
            if k in replies}
    categories = {k: (SIMPLE if k in keys else IRRELEVANT) for k in replies}
    theirs = _upstream(replies, categories, tmp_path)
    differ = {family_of[k]: (ours[k], theirs.get(k)) for k in replies if ours[k] != theirs.get(k)}
    assert not differ
    verdict = {family_of[k]: ours[k] for k in replies}
    # the families where a lenient reading credits what bfcl-eval fails, and the reverse
    assert verdict["well_formed"] and verdict["unclosed_think"] and verdict["closed_think"]
    for family in ("no_newlines_in_tags", "parameters_key", "arguments_as_string",
                   "xml_function", "fenced_json", "unclosed_last_tag", "padded_name",
                   "no_arguments", "native_empty_arguments",
                   "native_arguments_not_json", "native_arguments_a_list",
                   "native_one_malformed_of_two"):
        assert verdict[family] is False, family
    assert verdict["native_well_formed"]
    assert verdict["irrelevance/parameters_key"] and verdict["irrelevance/no_newlines_in_tags"]
    assert verdict["irrelevance/native_empty_arguments"]
    assert not verdict["irrelevance/well_formed"]


def test_a_malformed_native_call_ends_the_multi_turn_turn_unexecuted(tmp_path: Path) -> None:
    """bfcl-eval's FC loop: a reply its decoder fails ends the turn, nothing runs, nothing
    is sent back; the next turn goes on."""
    bfcl_python()
    oracle = tmp_path / "oracle"
    run(oracle, "oracle", ["multi_turn_base"], 1)
    (key, _), rec = next(iter(records(oracle).items()))
    script = json.loads(rec["completion"])
    first = script["turns"][0][0]
    first["tool_calls"] = [*first["tool_calls"], {"id": "bad", "name": "ls", "arguments": ""}]
    ours_dir = tmp_path / "ours"
    run(ours_dir, f"replay:{replay_file(tmp_path / 'r.jsonl', {key: script})}",
        ["multi_turn_base"], 1)
    got = records(ours_dir)[(key, 0)]["details"]
    turn = got["transcript"]["turns"][0]
    assert got["turn_ends"][0] == "decode_failed" and not turn["steps"][0]["results"]
    assert not any(m.get("role") == "tool" and "could not be parsed" in str(m.get("content"))
                   for m in got["transcript"]["messages"])
    assert len(got["turn_ends"]) == len(script["turns"])  # later turns were played
    python = bfcl_python()
    upstream = _evaluate(TOOL_FORMATS["openai_fc"],
                         [{"id": key, "details": {"category": "multi_turn_base",
                                                  "bfcl_result": got["bfcl_result"]}}],
                         tmp_path / "mt", python)[0]
    assert upstream[key] == got["valid"]
    step = got["bfcl_result"][0][0]
    assert step[-1] == {"ls": ""}  # stored as the server sent it


#: bfcl-eval's Qwen3 FC handler's own prompt for each entry's first turn (run in its venv)
_UPSTREAM_PROMPTS = r"""
import json, sys
from bfcl_eval.eval_checker.eval_runner import get_handler
qwen = get_handler("Qwen/Qwen3-8B-FC")
out = {}
for line in sys.stdin:
    rec = json.loads(line)
    data = qwen._pre_query_processing_prompting({"function": rec["functions"]})
    data = qwen.add_first_turn_message_prompting(data, rec["question"][0])
    out[rec["id"]] = qwen._format_prompt(data["message"], data["function"])
print(json.dumps(out))
"""


def test_qwen3_fc_prompt_is_the_handlers_own(tmp_path: Path) -> None:
    """The first prompt of a qwen3_fc session, rendered in ChatML, is character for
    character the prompt bfcl-eval's Qwen3 FC handler builds: its system block with the raw
    docs (dotted names, ASCII-escaped JSON), an entry's own system message first."""
    from _bfcl import bfcl_data
    from spade.eval import _protocol
    from spade.eval.agent import TokenStepModel
    from spade.eval.providers._base import Request
    from spade.eval.suites._base import Item
    from spade.eval.suites.bfcl import BfclV4

    from spade.policy import ScriptedPolicy
    from spade.policy._types import SamplingParams

    bfcl_python()
    data = bfcl_data() / "bfcl_v4"
    wanted = {"simple_python": "simple_python_6",  # non-ASCII in its docs
              "live_multiple": "live_multiple_1-0-1",  # a system message of its own
              "multiple": "multiple_0", "multi_turn_base": "multi_turn_base_0"}
    entries = {}
    for cat, key in wanted.items():
        for line in (data / f"BFCL_v4_{cat}.json").read_text().splitlines():
            if json.loads(line)["id"] == key:
                entries[key] = json.loads(line)
    suite = BfclV4(_protocol.build("bfcl_v4", {}), 0)
    suite._func_docs = str(data / "multi_turn_func_doc")
    policy = ScriptedPolicy(lambda messages: "")
    ours, shown = {}, []
    try:
        for key, entry in entries.items():
            item = Item(key, {"category": key.rsplit("_", 1)[0], "entry": entry})
            request = Request(suite, item, 0, [], SamplingParams())
            s = suite.session(request, "qwen3_fc", None)
            s.begin_turn(suite.prepared(item)["question"][0])
            ours[key] = policy.decode(TokenStepModel(policy).first_prompt(s))
            shown.append({"id": key, "functions": suite.prepared(item)["functions"],
                          "question": suite.prepared(item)["question"]})
    finally:
        suite.close()
    done = subprocess.run([str(bfcl_python()), "-c", _UPSTREAM_PROMPTS],
                          input="\n".join(json.dumps(x) for x in shown), capture_output=True,
                          text=True, check=True, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "BFCL_PROJECT_ROOT": str(tmp_path)})
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    for key in entries:
        assert ours[key] == theirs[key], key
    assert "\\u" in ours["simple_python_6"] and '"name": "ls"' in ours["multi_turn_base_0"]
    assert "GorillaFileSystem" not in ours["multi_turn_base_0"].split("<tools>")[0]
