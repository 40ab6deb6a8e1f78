"""The ACEBench upstream checkout: where it is; its checker and scenarios, loaded at run time.

ACEBench is not on a package index, so the suite imports a checkout of its repository
(``eval_main.py``, ``model_eval/``, ``model_inference/``). The checkout is a setting:
``--acebench-dir DIR``, else ``SPADE_ACEBENCH_DIR``, else ``../shared/upstream/acebench``
beside the project. Nothing of it is copied into the project.

Per-item verdicts come from upstream's own category functions in ``eval_main`` called on a
one-item list (``normal_single_turn_eval``, ``normal_multi_turn_eval``, ``special_eval``,
``agent_eval``). Those functions also write score files and spreadsheets; their file
writers are redirected into a private temporary directory (the captured score rows carry
the error details), and nothing else about them is changed.

Upstream turns model-written call arguments into values with ``eval`` (arithmetic and
lambda arguments, and the scenario executor's method calls). ``eval`` is shadowed in
those modules by :mod:`spade.eval.suites._acebench_guard`, which evaluates the
shapes upstream means (constant arithmetic, a method call with literal arguments on the
episode's own scenario instances) and refuses everything else, so model text never runs as
Python in this process.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from spade.eval.data import project_root
from spade.eval.suites._acebench_guard import restricted_eval_for

from spade.errors import UserError

ENV_VAR = "SPADE_ACEBENCH_DIR"
#: Files the suite needs from the checkout (hashed into the scorer's identity).
REQUIRED = (
    "eval_main.py",
    "category.py",
    "model_eval/checker.py",
    "model_eval/utils.py",
    "model_eval/evaluation_helper.py",
    "model_inference/utils.py",
    "model_inference/prompt_en.py",
    "model_inference/common_inference.py",
    "model_inference/multi_step/common_agent_step.py",
    "model_inference/multi_step/execution_role_step.py",
    "model_inference/multi_step/multi_step_scene.py",
    "model_inference/multi_step/multi_step_utils.py",
    "model_inference/multi_turn/common_agent.py",
    "model_inference/multi_turn/execution_role.py",
    "model_inference/multi_turn/multi_turn_scene.py",
    "model_inference/multi_turn/multi_turn_utils.py",
    "model_inference/multi_turn/APIModel_user.py",
)
#: Upstream modules whose ``eval`` is shadowed by the restricted evaluator.
EVAL_USERS = (
    "model_inference.utils",
    "model_inference.multi_step.execution_role_step",
    "model_inference.multi_step.multi_step_utils",
    "model_inference.multi_turn.common_agent",
    "model_inference.multi_turn.execution_role",
    "model_inference.multi_turn.multi_turn_utils",
)
_TOP_LEVEL = ("eval_main", "category", "model_eval", "model_inference")


def resolve_dir(setting: str | os.PathLike[str] | None = None) -> Path:
    """The checkout: the explicit setting, else ``SPADE_ACEBENCH_DIR``, else beside the project."""
    if setting:
        return Path(setting).expanduser().resolve()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    return (project_root().parent / "shared" / "upstream" / "acebench").resolve()


def check_dir(root: Path) -> None:
    """Raise a one-line :class:`UserError` naming what is missing from the checkout."""
    if not root.is_dir():
        raise UserError(
            f"ACEBench checkout not found at {root}: clone the ACEBench repository and pass "
            f"--acebench-dir DIR or set {ENV_VAR}"
        )
    missing = [rel for rel in REQUIRED if not (root / rel).is_file()]
    if missing:
        shown = ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else "")
        raise UserError(f"ACEBench checkout at {root} lacks {len(missing)} file(s): {shown}")


def code_sha256(root: Path) -> str:
    """One sha256 over the required upstream files (path and bytes), in a fixed order."""
    h = hashlib.sha256()
    for rel in REQUIRED:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


def _literal_assignment(path: Path, name: str) -> Any:
    """A module-level ``NAME = <literal>`` read from source without importing the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise UserError(f"{path}: no {name} assignment (unexpected ACEBench version)")


class _Capture:
    """Stands in for upstream's score-file writer: keeps the rows instead of writing them."""

    def __init__(self) -> None:
        self.rows: list[Any] = []

    def __call__(self, filename: str, data: Any, subdir: str | None = None) -> None:
        self.rows = list(data)


class Upstream:
    """The imported checkout (Python caches its modules by name: one checkout per process)."""

    def __init__(self, root: Path) -> None:
        check_dir(root)
        self.root = root
        self.sha256 = code_sha256(root)
        self._tmp = tempfile.TemporaryDirectory(prefix="acebench-scores-")
        self._import()
        #: Attributes of each scenario class that upstream keeps as the final state.
        self.saved_class: dict[str, list[str]] = _literal_assignment(
            root / "model_inference" / "common_inference.py", "SAVED_CLASS"
        )

    def _import(self) -> None:
        loaded = sys.modules.get("eval_main")
        if loaded is not None:
            where = Path(getattr(loaded, "__file__", "") or "").resolve().parent
            if where != self.root:
                raise UserError(
                    f"another ACEBench checkout ({where}) is already loaded in this process"
                )
        if str(self.root) not in sys.path:
            sys.path.append(str(self.root))
        before = list(sys.path)
        try:
            self.main = importlib.import_module("eval_main")
            self.mods = {name: importlib.import_module(name) for name in EVAL_USERS}
            for name in ("model_inference.prompt_en", "model_eval.evaluation_helper",
                         "model_inference.multi_step.multi_step_scene",
                         "model_inference.multi_step.common_agent_step",
                         "model_inference.multi_turn.multi_turn_scene",
                         "model_inference.multi_turn.APIModel_user"):
                self.mods[name] = importlib.import_module(name)
        except ImportError as exc:
            raise UserError(f"cannot import ACEBench from {self.root}: {exc}") from exc
        finally:
            # eval_main appends "../" to sys.path at import; a cwd-relative entry is dropped
            sys.path[:] = [p for p in sys.path if p in before or p != "../"]
        for name in EVAL_USERS:
            mod = self.mods[name]
            mod.eval = restricted_eval_for(vars(mod))  # type: ignore[attr-defined]

    def _redirect_writers(self, mod: ModuleType) -> None:
        tmp = Path(self._tmp.name)

        def private_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            path = Path(file)
            if not path.is_absolute():
                path = tmp / path
                path.parent.mkdir(parents=True, exist_ok=True)
            return builtins.open(path, mode, *args, **kwargs)

        mod.OUTPUT_PATH = str(tmp) + os.sep  # type: ignore[attr-defined]
        mod.language = "en"  # type: ignore[attr-defined]
        mod.convert_result_to_excel = lambda *a, **k: None  # type: ignore[attr-defined]
        mod.open = private_open  # type: ignore[attr-defined]
        os.makedirs(tmp / "score_all" / "score_en", exist_ok=True)

    def identity(self) -> dict[str, Any]:
        return {"implementation": "ACEBench upstream checkout (eval_main, model_eval)",
                "path": str(self.root), "code_sha256": self.sha256}

    # -- per-item verdicts through upstream's category functions ---------------------------

    def _call(self, fn_name: str, *args: Any) -> tuple[Any, list[Any]]:
        capture = _Capture()
        self._redirect_writers(self.main)
        self.main.save_score_as_json = capture  # type: ignore[attr-defined]
        fn = getattr(self.main, fn_name)
        out = fn(*args)
        return out, capture.rows

    def score_text(
        self, category: str, item: Mapping[str, Any], answer: Mapping[str, Any], text: str,
        model_name: str = "spade",
    ) -> tuple[float, dict[str, Any]]:
        """(accuracy 0/1, first error row) of one normal or special completion."""
        result = [{"id": item["id"], "result": text}]
        args = (result, [dict(item)], [dict(answer)], category, model_name, None)
        if category.startswith("special"):
            acc, rows = self._call("special_eval", *args)
            rows = rows[1:]  # the first row is the summary
        elif category.startswith("normal_multi_turn"):
            acc, rows = self._call("normal_multi_turn_eval", *args)
            rows = rows[1:]
        else:
            acc, rows = self._call("normal_single_turn_eval", *args)
            rows = rows[1:]
        err = next((r for r in rows if isinstance(r, dict) and not r.get("valid", True)), None)
        return float(acc), _brief(err)

    def score_agent(
        self, category: str, item: Mapping[str, Any], answer: Mapping[str, Any],
        final_state: Sequence[Any], process: Sequence[str], model_name: str = "spade",
    ) -> tuple[float, float, dict[str, Any]]:
        """(end-to-end 0/1, process accuracy, error row) of one agent episode."""
        result = [{"id": item["id"], "result": list(final_state), "process": list(process)}]
        os.makedirs(Path(self._tmp.name) / "score_all" / "score_en" / model_name, exist_ok=True)
        (e2e, proc), rows = self._call(
            "agent_eval", result, [dict(item)], [dict(answer)], category, model_name
        )
        err = next((r for r in rows[1:] if isinstance(r, dict) and not r.get("valid", True)),
                   None)
        return float(e2e), float(proc), _brief(err)

    def multi_turn_accuracy(
        self, groups: Sequence[tuple[str, Sequence[bool]]]
    ) -> tuple[float, float]:
        """Upstream's (end, process) accuracy of normal multi-turn items grouped by turn."""
        helper = self.mods["model_eval.evaluation_helper"]
        score_list = [{"turn": t, "valid": list(v)} for t, v in groups]
        end, proc = helper.multiplt_turn_accuracy(score_list)
        return float(end), float(proc)

    def unweighted(self, accuracies: Sequence[float]) -> float:
        helper = self.mods["model_eval.evaluation_helper"]
        return float(helper.calculate_unweighted_accuracy(
            [{"accuracy": a, "total_count": 0} for a in accuracies])["accuracy"])

    def close(self) -> None:
        self._tmp.cleanup()


def _brief(row: Mapping[str, Any] | None) -> dict[str, Any]:
    if not row:
        return {}
    err = row.get("error")
    if isinstance(err, list) and err:
        err = err[0]
    return {"error": str(err)[:300], "error_type": str(row.get("error_type", ""))}
