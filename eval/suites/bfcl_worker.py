"""The bfcl-eval side of the BFCL suite; runs INSIDE the bfcl-eval venv (never imported).

One JSON request per stdin line, one JSON reply per stdout line (``{"ok": true,
"result": ...}`` or ``{"ok": false, "error": "..."}``); anything the library prints goes
to stderr. Everything that decides a verdict is bfcl-eval's own code:

- ``prepare``: the test entry as bfcl-eval's generation pipeline shapes it
  (``populate_test_cases_with_predefined_functions``, then
  ``add_language_specific_hint_to_function_doc``): its function docs as they are (what a
  prompting handler such as Qwen3's FC handler shows, dotted names kept) and compiled by
  ``convert_to_tool`` in the OpenAI function-calling style (``.`` in names becomes ``_``).
- Reading a reply: every tool format (``FORMATS``) is a bfcl-eval model handler. A reply
  becomes the result-file step that handler stores (native calls: ``[{name: arguments
  string}]``; text: what its ``_parse_query_response_prompting`` keeps), and is decoded by
  that handler's own ``decode_ast`` / ``decode_execute``, malformed calls included.
- ``open`` / ``act`` / ``close``: one multi-turn episode on bfcl-eval's executable
  backends. ``act`` reads one model step as the handler's inference loop does: a reply it
  cannot decode, or one without calls, ends the turn with nothing executed; otherwise the
  decoded calls run (``execute_multi_turn_func_call``).
- ``turn`` / ``prompt``: for a prompting handler (Qwen3 FC), the episode also keeps the
  handler's own chat history as its inference loop builds it (the turn's user messages;
  each reply as its ``_parse_query_response_prompting`` keeps it; execution results by its
  ``_add_execution_results_prompting``), and ``prompt`` is that history rendered by its
  ``_format_prompt``, or the error that formatter raises (upstream's inference of the
  entry fails there).
- ``score``: the per-entry evaluation functions of ``bfcl_eval.eval_checker.eval_runner``
  (AST, relevance/irrelevance, multi-turn state and response checks) with the handler of
  the reply's format, i.e. the same decoding and checking ``bfcl evaluate`` applies to
  that model's result file.
- ``gold``: the ground truth as tool calls (for the oracle; not used in scoring;
  ``bfcl_gold.py``). ``leaderboard``: bfcl-eval's own aggregation (``bfcl_board.py``).

The sibling modules are loaded from this file's folder (the worker runs as an isolated
script, not as part of the package). Safety (``bfcl_calls.py``): upstream executes a call
by ``eval`` of the decoded ``name(key=repr(value), ...)``.
A decoded call that is not exactly a public method of the episode's backend classes with
identifier keywords and literal values is replaced by a call to an undefined name, so it
fails as an unknown function does upstream and nothing the model wrote is evaluated as
code. For scoring, multi-turn steps are decoded by their handler, made safe the same way
and handed to the checker in the native form (a step that does not decode, or decodes to
nothing, is a step without calls: the checker skips such steps under every handler).
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import traceback
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

CHECKER_MODEL = "gpt-4o-2024-11-20-FC"
#: tool format -> the bfcl-eval model (handler) whose reading it is
FORMATS = {"openai_fc": CHECKER_MODEL, "qwen3_fc": "Qwen/Qwen3-8B-FC"}
#: the format of replies that carry native (structured) tool calls
NATIVE = "openai_fc"
class Worker:
    def __init__(self) -> None:
        from bfcl_eval import utils as bfcl_utils
        from bfcl_eval.constants import default_prompts
        from bfcl_eval.constants.enums import Language, ModelStyle, ReturnFormat
        from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
        from bfcl_eval.eval_checker import eval_runner
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
        from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool

        self.utils, self.runner, self.mt = bfcl_utils, eval_runner, multi_turn_utils
        self.prompts = default_prompts
        self.languages = {"python": (Language.PYTHON, ReturnFormat.PYTHON),
                          "java": (Language.JAVA, ReturnFormat.JAVA),
                          "javascript": (Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT)}
        self.style, self.mapping = ModelStyle.OPENAI_COMPLETIONS, GORILLA_TO_OPENAPI
        self.class_paths = CLASS_FILE_PATH_MAPPING
        self.convert_to_tool, self.to_call = convert_to_tool, convert_to_function_call
        self.handler = eval_runner.get_handler(CHECKER_MODEL)
        self.handlers = {fmt: eval_runner.get_handler(name) for fmt, name in FORMATS.items()}
        self.episodes: dict[str, dict[str, Any]] = {}
        self.scored = 0

    # -- ops ------------------------------------------------------------------------
    def hello(self) -> dict[str, Any]:
        return {
            "bfcl_eval": version("bfcl-eval"),
            "numpy": version("numpy"),
            "python": sys.version.split()[0],
            "checker_model": CHECKER_MODEL,
            "max_step_limit": self.prompts.MAXIMUM_STEP_LIMIT,
            "additional_function_prompt":
                self.prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
            "additional_function_prompt_prompting":
                self.prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING,
            "formats": dict(FORMATS),
        }

    def prepare(self, entry: dict[str, Any], func_doc_dir: str) -> dict[str, Any]:
        entry = copy.deepcopy(entry)
        self.utils.MULTI_TURN_FUNC_DOC_PATH = Path(func_doc_dir)
        [entry] = self.utils.populate_test_cases_with_predefined_functions([entry])
        [entry] = self.utils.add_language_specific_hint_to_function_doc([entry])
        held = {turn: self.convert_to_tool(docs, self.mapping, self.style)
                for turn, docs in (entry.get("missed_function") or {}).items()}
        return {"tools": self.convert_to_tool(entry["function"], self.mapping, self.style),
                "held_out": held, "question": entry["question"],
                "functions": entry["function"],
                "held_out_docs": dict(entry.get("missed_function") or {})}

    # -- reading replies as a handler does ----------------------------------------------
    def step_result(self, fmt: str, step: dict[str, Any]) -> Any:
        """The result-file step the format's handler stores for one reply (``step``: the
        reply ``text`` and, for native replies, ``native`` = [[name, arguments], ...])."""
        native = step.get("native")
        text = str(step.get("text") or "")
        if native:
            return [{str(n): a} for n, a in native]
        if native is not None or fmt == NATIVE:
            return text
        return self.parsed(fmt, text)["model_responses"]

    def parsed(self, fmt: str, text: str) -> dict[str, Any]:
        """A text reply as the prompting handler's ``_parse_query_response_prompting``."""
        reply = SimpleNamespace(choices=[SimpleNamespace(text=text)],
                                usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0))
        parsed: dict[str, Any] = self.handlers[fmt]._parse_query_response_prompting(reply)
        return parsed

    def reader(self, fmt: str, result: Any) -> tuple[Any, str]:
        """The handler (and its model name) that reads ``result``: native calls are read
        by the native handler, text by the run's format."""
        which = NATIVE if isinstance(result, list) else fmt
        return self.handlers[which], FORMATS[which]

    def decode(self, fmt: str, result: Any) -> tuple[list[str] | None, str | None]:
        """The handler's ``decode_execute``: (calls, None), or (None, why) when it fails."""
        handler, _ = self.reader(fmt, result)
        try:
            calls = handler.decode_execute(result, has_tool_call_tag=False)
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300]
        if self.mt.is_empty_execute_response(calls):
            return [], None
        return [str(c) for c in calls], None

    def act(self, episode: str, tool_format: str, step: dict[str, Any]) -> dict[str, Any]:
        """One model step of a multi-turn episode, as the handler's inference loop takes it."""
        ep = self.episodes[episode]
        result = self.step_result(tool_format, step)
        chat = ep.get("chat") if step.get("native") is None else None  # text replies only
        if chat is not None:
            handler = self.handlers[ep["format"]]
            parsed = self.parsed(ep["format"], str(step.get("text") or ""))
            chat = ep["chat"] = handler._add_assistant_message_prompting(chat, parsed)
        calls, error = self.decode(tool_format, result)
        if not calls:
            return {"result": result, "end": "decode_failed" if calls is None else "no_call",
                    "error": error, "calls": [], "results": []}
        safe = [_sibling("bfcl_calls").safe_call(c, ep["methods"]) for c in calls]
        results, _ = self._execute(ep, safe)
        if chat is not None:
            ep["chat"] = self.handlers[ep["format"]]._add_execution_results_prompting(
                chat, results, {"model_responses_decoded": calls})
        return {"result": result, "end": None, "error": None,
                "calls": [_sibling("bfcl_calls").structured(c) for c in calls],
                "results": [str(r) for r in results]}

    def _execute(self, ep: dict[str, Any], calls: list[str]) -> tuple[list[str], dict]:
        entry = ep["entry"]
        return self.mt.execute_multi_turn_func_call(
            calls, entry.get("initial_config", {}), entry["involved_classes"], ep["key"],
            entry["id"], long_context=ep["long_context"], is_evaL_run=False)

    def open(self, episode: str, entry: dict[str, Any], tool_format: str = NATIVE,
             functions: list[dict[str, Any]] | None = None) -> None:
        """An episode; for a prompting format, with the handler's chat history over
        ``functions`` (the entry's docs as prepared) begun as its loop begins it."""
        category = entry["id"].rsplit("_", 1)[0]
        ep = {"entry": entry, "key": f"spade_{episode}", "format": tool_format, "turns": 0,
              "long_context": "long_context" in category or "composite" in category}
        _, instances = self._execute(ep, [])
        ep["methods"] = {name for inst in instances.values()
                         for name, _ in inspect.getmembers(inst, predicate=inspect.ismethod)
                         if not name.startswith("_")}
        if tool_format != NATIVE:
            shaped = {**copy.deepcopy(entry), "function": copy.deepcopy(functions or [])}
            ep["chat"] = self.handlers[tool_format]._pre_query_processing_prompting(shaped)
        self.episodes[episode] = ep

    def turn(self, episode: str, messages: list[dict[str, Any]]) -> None:
        """A turn's user messages join the handler's history as its loop adds them."""
        ep = self.episodes[episode]
        handler = self.handlers[ep["format"]]
        add = (handler.add_first_turn_message_prompting if ep["turns"] == 0
               else handler._add_next_turn_user_message_prompting)
        ep["chat"] = add(ep["chat"], copy.deepcopy(messages))
        ep["turns"] += 1

    def prompt(self, episode: str) -> dict[str, Any]:
        """The next prompt as the handler's ``_format_prompt`` renders its history, or
        the error it raises (``text`` None; ``error`` as bfcl-eval's generation writes it
        into the result, ``kind`` its type)."""
        ep = self.episodes[episode]
        chat = ep["chat"]
        try:
            text = self.handlers[ep["format"]]._format_prompt(chat["message"], chat["function"])
        except Exception as exc:
            return {"text": None, "error": str(exc)[:300], "kind": type(exc).__name__}
        return {"text": str(text), "error": None, "kind": None}

    def _safe(self, calls: list[dict[str, Any]], methods: set[str]) -> list[dict[str, Any]]:
        calls_mod = _sibling("bfcl_calls")
        out = []
        for c in calls:
            args = c.get("arguments")
            ok = (c.get("name") in methods and isinstance(args, dict)
                  and all(calls_mod.identifier(k) for k in args))
            out.append({c["name"]: args} if ok else {calls_mod.REFUSED: {}})
        return out

    def _safe_step(self, fmt: str, step: Any, methods: set[str]) -> Any:
        """A result-file step decoded by its handler, made safe and put in the native form
        the checker's native handler reads; "" (a step without calls) when it does not
        decode or decodes to nothing, which every handler's checker skips alike."""
        calls, _ = self.decode(fmt, step)
        if not calls:
            return ""
        out = []
        for text in (_sibling("bfcl_calls").safe_call(c, methods) for c in calls):
            node = ast.parse(text, mode="eval").body
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            out.append({node.func.id: json.dumps(args)})
        return out

    def execute(self, episode: str, calls: list[dict[str, Any]]) -> list[str]:
        ep = self.episodes[episode]
        strings = self.to_call(self._safe(calls, ep["methods"]))
        results, _ = self._execute(ep, strings)
        return [str(r) for r in results]

    def _forget(self, key: str) -> None:
        prefix = re.sub(r"[-./:]", "_", f"{key}_")
        for name in [n for n in vars(self.mt) if n.startswith(prefix)]:
            delattr(self.mt, name)

    def close(self, episode: str) -> None:
        ep = self.episodes.pop(episode, None)
        if ep is not None:
            self._forget(ep["key"])

    def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self._score_one(**item) for item in items]

    def results(self, tool_format: str, steps: list[list[dict[str, Any]]],
                multi_turn: bool) -> Any:
        """The result-file entry of an episode (``steps``: per turn, its replies)."""
        if not multi_turn:
            return self.step_result(tool_format, steps[0][0])
        return [[self.step_result(tool_format, s) for s in turn] for turn in steps]

    def _methods_of(self, entry: dict[str, Any]) -> set[str]:
        names: set[str] = set()
        for cls_name in entry["involved_classes"]:
            cls = getattr(importlib.import_module(self.class_paths[cls_name]), cls_name)
            names |= {n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
                      if not n.startswith("_")}
        return names

    def _score_one(self, category: str, entry: dict[str, Any],
                   steps: list[list[dict[str, Any]]], tool_format: str,
                   ground_truth: Any = None, inference_error: str | None = None
                   ) -> dict[str, Any]:
        """``inference_error``: the episode stopped where the handler's own inference
        raises; the result is then the string bfcl-eval's generation writes for it (the
        error with its type)."""
        entry, r = copy.deepcopy(entry), self.runner
        multi = category.startswith("multi_turn")
        result = (f"Error during inference: {inference_error}" if inference_error is not None
                  else self.results(tool_format, steps, multi))
        handler, model = self.reader(tool_format, result)
        if multi and inference_error is not None:
            verdict = r._evaluate_single_multi_turn_entry(
                self.handler, entry["id"], result, ground_truth, entry, model, category)
        elif "relevance" in category:
            verdict = r._evaluate_single_relevance_entry(
                handler, entry["id"], result, entry, model, category)
        elif multi:
            methods = self._methods_of(entry)
            safe = [[self._safe_step(tool_format, step, methods) for step in turn]
                    for turn in result]
            self.scored += 1
            key = f"spade_score{self.scored}"
            try:
                verdict = r._evaluate_single_multi_turn_entry(
                    self.handler, entry["id"], safe, ground_truth, entry, key, category)
            finally:
                self._forget(key)
        else:
            language, return_format = self.languages[self.language_of(category)]
            verdict = r._evaluate_single_ast_entry(
                handler, entry["id"], result, ground_truth, entry, model,
                category, language=language, return_format=return_format,
                has_tool_call_tag=False)
        error = verdict.get("error")
        if isinstance(error, dict):
            error = error.get("error_message", error)
        return {"valid": bool(verdict["valid"]), "result": result,
                "error_type": verdict.get("error_type") or (
                    verdict.get("error", {}).get("error_type")
                    if isinstance(verdict.get("error"), dict) else None),
                "error": None if verdict["valid"] else str(error)[:500]}

    def language_of(self, category: str) -> str:
        """The language ``ast_file_runner`` checks a category's calls in."""
        if self.utils.is_java(category):
            return "java"
        return "javascript" if self.utils.is_js(category) else "python"

    def leaderboard(self, categories: dict[str, dict[str, Any]], tool_format: str
                    ) -> dict[str, dict[str, Any]]:
        return _sibling("bfcl_board").leaderboard(categories, FORMATS[tool_format])

    def gold(self, category: str, entry: dict[str, Any], ground_truth: Any) -> Any:
        return _sibling("bfcl_gold").gold(category, entry, ground_truth,
                                          self.language_of(category), self.class_paths)


def _sibling(name: str) -> Any:
    """A module next to this file: the worker runs as an isolated script, not a package."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # library prints (and C-level writes) go to stderr
    sys.stdout = sys.stderr
    try:
        worker = Worker()
    except Exception as exc:
        proto.write(json.dumps({"ok": False, "error": f"cannot load bfcl-eval: {exc!r}"}) + "\n")
        return 1
    proto.write(json.dumps({"ok": True, "result": worker.hello()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.pop("op")
            if op not in ("prepare", "open", "turn", "prompt", "act", "execute", "close",
                          "score", "results", "gold", "leaderboard"):
                raise ValueError(f"unknown op {op!r}")
            reply = {"ok": True, "result": getattr(worker, op)(**req)}
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000]}
        proto.write(json.dumps(reply, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
