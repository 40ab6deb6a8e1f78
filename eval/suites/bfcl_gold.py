"""Ground truth as tool calls, for the BFCL oracle; runs inside the bfcl-eval venv (loaded
by ``bfcl_worker.py`` from its own folder, never imported by the project).

One acceptable value per parameter is chosen from bfcl-eval's possible answers; Java and
JavaScript arguments are written as the source text those languages' checkers read;
multi-turn ground truth (call strings) is read with the backend classes' signatures.
Nothing here decides a verdict.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from typing import Any


def gold(category: str, entry: dict[str, Any], ground_truth: Any, language: str,
         class_paths: dict[str, str]) -> Any:
    """The ground truth as tool calls (``{name, arguments}``; names as the FC tools show
    them), one list per turn for multi-turn entries."""
    if category.startswith("multi_turn"):
        sigs = {}
        for cls_name in entry["involved_classes"]:
            cls = getattr(importlib.import_module(class_paths[cls_name]), cls_name)
            for n, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
                sigs[n] = [p for p in inspect.signature(fn).parameters if p != "self"]
        return [[_parse_call(c, sigs) for c in turn] for turn in ground_truth]
    docs = {f["name"]: f for f in entry["function"]}
    out = []
    for call in ground_truth:
        for name, params in call.items():
            schema = docs.get(name, {}).get("parameters", {})
            args = _pick(params, schema)
            if language != "python":
                props = schema.get("properties", {})
                args = {k: _source(v, props.get(k, {}), language)
                        for k, v in args.items()}
            out.append({"name": name.replace(".", "_"), "arguments": args})
    return out


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


def _source(value: Any, schema: dict[str, Any], language: str) -> Any:
    """A gold value as the source text a Java / JavaScript call passes (the checker reads
    these languages' arguments as strings); a string is kept as it is."""
    if isinstance(value, str):
        return value
    kind = str(schema.get("type", ""))
    nested = schema.get("items", {}) if isinstance(schema.get("items"), dict) else {}
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and language == "java" and kind == "long":
        return f"{value}L"
    if isinstance(value, int | float):
        return f"{value}f" if language == "java" and kind == "float" else str(value)
    if isinstance(value, list):
        bare = language == "java" and kind == "Array"  # its String elements are unquoted
        parts = ", ".join(str(_source(v, nested, language)) if bare else
                          _element(v, nested, language) for v in value)
        if language == "javascript":
            return f"[{parts}]"
        if kind == "ArrayList":
            return f"new ArrayList<>(Arrays.asList({parts}))"
        return f"new {nested.get('type', 'Object')}[]{{{parts}}}"
    if isinstance(value, dict):
        if language == "javascript":
            return "{" + ", ".join(f"{k}: {_element(v, {}, language)}"
                                   for k, v in value.items()) + "}"
        puts = " ".join(f'put("{k}", {_element(v, {}, language)});' for k, v in value.items())
        return f"new HashMap<String, String>() {{{{ {puts} }}}}"
    return str(value)


def _element(value: Any, schema: dict[str, Any], language: str) -> str:
    if isinstance(value, str) and (schema.get("type") in ("String", None) or not schema):
        return json.dumps(value)
    return str(_source(value, schema, language))


def _parse_call(text: str, sigs: dict[str, list[str]]) -> dict[str, Any]:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    name = node.func.id
    args = {sigs[name][i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None})
    return {"name": name, "arguments": args}
