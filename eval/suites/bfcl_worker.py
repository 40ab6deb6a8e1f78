"""The bfcl-eval side of the BFCL suite; runs INSIDE the bfcl-eval venv (never imported).

One JSON request per stdin line, one JSON reply per stdout line (``{"ok": true,
"result": ...}`` or ``{"ok": false, "error": "..."}``); anything the library prints goes
to stderr. Everything that decides a verdict is bfcl-eval's own code:

- ``prepare``: the test entry as bfcl-eval's generation pipeline shapes it
  (``populate_test_cases_with_predefined_functions``, then
  ``add_language_specific_hint_to_function_doc``) and its tools compiled by
  ``convert_to_tool`` in the OpenAI function-calling style (``.`` in names becomes ``_``).
- ``open`` / ``execute`` / ``close``: one multi-turn episode on bfcl-eval's executable
  backends (``execute_multi_turn_func_call``), state kept per episode, freed at close.
- ``score``: the per-entry evaluation functions of ``bfcl_eval.eval_checker.eval_runner``
  (AST, relevance/irrelevance, multi-turn state and response checks) with the handler of
  an OpenAI-style function-calling model (``CHECKER_MODEL``), i.e. the same decoding and
  checking ``bfcl evaluate`` applies to such a model's result file.
- ``gold``: the ground truth as tool calls (for the oracle; not used in scoring).

Safety: upstream executes a call by ``eval`` of ``name(key=repr(value), ...)``. A model's
call whose name is not a public method of the episode's backend classes, or whose argument
names are not plain identifiers, is replaced by a call to an undefined name, so it fails
as an unknown function does upstream and nothing the model wrote is evaluated as code.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import keyword
import os
import re
import sys
import traceback
from importlib.metadata import version
from pathlib import Path
from typing import Any

CHECKER_MODEL = "gpt-4o-2024-11-20-FC"
REFUSED = "spade_refused_call"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _identifier(name: object) -> bool:
    return isinstance(name, str) and bool(_IDENT.match(name)) and not keyword.iskeyword(name)


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
        self.language, self.return_format = Language.PYTHON, ReturnFormat.PYTHON
        self.style, self.mapping = ModelStyle.OPENAI_COMPLETIONS, GORILLA_TO_OPENAPI
        self.class_paths = CLASS_FILE_PATH_MAPPING
        self.convert_to_tool, self.to_call = convert_to_tool, convert_to_function_call
        self.handler = eval_runner.get_handler(CHECKER_MODEL)
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
        }

    def prepare(self, entry: dict[str, Any], func_doc_dir: str) -> dict[str, Any]:
        entry = copy.deepcopy(entry)
        self.utils.MULTI_TURN_FUNC_DOC_PATH = Path(func_doc_dir)
        [entry] = self.utils.populate_test_cases_with_predefined_functions([entry])
        [entry] = self.utils.add_language_specific_hint_to_function_doc([entry])
        held = {turn: self.convert_to_tool(docs, self.mapping, self.style)
                for turn, docs in (entry.get("missed_function") or {}).items()}
        return {"tools": self.convert_to_tool(entry["function"], self.mapping, self.style),
                "held_out": held, "question": entry["question"]}

    def _execute(self, ep: dict[str, Any], calls: list[str]) -> tuple[list[str], dict]:
        entry = ep["entry"]
        return self.mt.execute_multi_turn_func_call(
            calls, entry.get("initial_config", {}), entry["involved_classes"], ep["key"],
            entry["id"], long_context=ep["long_context"], is_evaL_run=False)

    def open(self, episode: str, entry: dict[str, Any]) -> None:
        category = entry["id"].rsplit("_", 1)[0]
        ep = {"entry": entry, "key": f"spade_{episode}",
              "long_context": "long_context" in category or "composite" in category}
        _, instances = self._execute(ep, [])
        ep["methods"] = {name for inst in instances.values()
                         for name, _ in inspect.getmembers(inst, predicate=inspect.ismethod)
                         if not name.startswith("_")}
        self.episodes[episode] = ep

    def _safe(self, calls: list[dict[str, Any]], methods: set[str]) -> list[dict[str, Any]]:
        out = []
        for c in calls:
            args = c.get("arguments")
            ok = (c.get("name") in methods and isinstance(args, dict)
                  and all(_identifier(k) for k in args))
            out.append({c["name"]: args} if ok else {REFUSED: {}})
        return out

    def _safe_step(self, step: Any, methods: set[str]) -> Any:
        """A result-file step (text, or ``[{name: arguments JSON}]``) with unsafe calls
        replaced; text and undecodable steps stay as they are (upstream skips them)."""
        if not isinstance(step, list):
            return step
        try:
            calls = [{"name": n, "arguments": json.loads(a) if isinstance(a, str) else a}
                     for d in step for n, a in d.items()]
        except (AttributeError, TypeError, ValueError):
            return step if all(isinstance(d, dict) for d in step) else str(step)
        return [{n: json.dumps(a)} for c in self._safe(calls, methods) for n, a in c.items()]

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

    def _methods_of(self, entry: dict[str, Any]) -> set[str]:
        names: set[str] = set()
        for cls_name in entry["involved_classes"]:
            cls = getattr(importlib.import_module(self.class_paths[cls_name]), cls_name)
            names |= {n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
                      if not n.startswith("_")}
        return names

    def _score_one(self, category: str, entry: dict[str, Any], result: Any,
                   ground_truth: Any = None) -> dict[str, Any]:
        entry, r = copy.deepcopy(entry), self.runner
        if "relevance" in category:
            verdict = r._evaluate_single_relevance_entry(
                self.handler, entry["id"], result, entry, CHECKER_MODEL, category)
        elif category.startswith("multi_turn"):
            methods = self._methods_of(entry)
            safe = [[self._safe_step(step, methods) for step in turn] for turn in result]
            self.scored += 1
            key = f"spade_score{self.scored}"
            try:
                verdict = r._evaluate_single_multi_turn_entry(
                    self.handler, entry["id"], safe, ground_truth, entry, key, category)
            finally:
                self._forget(key)
        else:
            verdict = r._evaluate_single_ast_entry(
                self.handler, entry["id"], result, ground_truth, entry, CHECKER_MODEL,
                category, language=self.language, return_format=self.return_format,
                has_tool_call_tag=False)
        error = verdict.get("error")
        if isinstance(error, dict):
            error = error.get("error_message", error)
        return {"valid": bool(verdict["valid"]),
                "error_type": verdict.get("error_type") or (
                    verdict.get("error", {}).get("error_type")
                    if isinstance(verdict.get("error"), dict) else None),
                "error": None if verdict["valid"] else str(error)[:500]}

    def gold(self, category: str, entry: dict[str, Any], ground_truth: Any) -> Any:
        if category.startswith("multi_turn"):
            sigs = {}
            for cls_name in entry["involved_classes"]:
                cls = getattr(importlib.import_module(self.class_paths[cls_name]), cls_name)
                for n, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
                    sigs[n] = [p for p in inspect.signature(fn).parameters if p != "self"]
            return [[_parse_call(c, sigs) for c in turn] for turn in ground_truth]
        docs = {f["name"]: f for f in entry["function"]}
        return [{"name": name.replace(".", "_"),
                 "arguments": _pick(params, docs.get(name, {}).get("parameters", {}))}
                for call in ground_truth for name, params in call.items()]


def _pick(params: dict[str, list[Any]], schema: dict[str, Any]) -> dict[str, Any]:
    """One acceptable value per parameter. ``""`` among the options marks it optional: an
    optional parameter is left out (the gold sometimes lists values for parameters the
    schema lacks), a required one takes the first real option, else ``""`` itself."""
    required = set(schema.get("required", []))
    out = {}
    for name, options in params.items():
        chosen = [o for o in options if o != ""]
        if "" in options and name not in required:
            continue
        if chosen:
            out[name] = _first(chosen[0])
        elif "" in options:
            out[name] = ""
    return out


def _first(value: Any) -> Any:
    """A dict of per-key options resolved like :func:`_pick`; lists element by element."""
    if isinstance(value, dict):
        return _pick({k: v if isinstance(v, list) else [v] for k, v in value.items()}, {})
    if isinstance(value, list):
        return [_first(v) for v in value]
    return value


def _parse_call(text: str, sigs: dict[str, list[str]]) -> dict[str, Any]:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    name = node.func.id
    args = {sigs[name][i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None})
    return {"name": name, "arguments": args}


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
            if op not in ("prepare", "open", "execute", "close", "score", "gold"):
                raise ValueError(f"unknown op {op!r}")
            reply = {"ok": True, "result": getattr(worker, op)(**req)}
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000]}
        proto.write(json.dumps(reply, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
