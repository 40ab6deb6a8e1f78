"""The tool-use table's cells and notes (BFCL v4, tau2-bench, ACEBench).

Columns: BFCL v4's Overall Acc and category groups as bfcl-eval's leaderboard code computes
them (recorded by the suite from bfcl-eval's own aggregation; a run recorded before that,
whose non-live was Python simple alone, shows its non-live as n/a); tau2-bench pass^1 per
domain and their macro mean; ACEBench normal / special / agent and its summary. A part the
suite recorded without a number is ``unavailable`` when the suite lists it as such (it
needs a user simulator or the internet), else ``n/a`` (e.g. a member category was not
run); never 0. A part it did not record is ``missing``. Results made with different user
simulators are not comparable, so every user model is named in the notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spade.eval._runs import Run, SuiteResult
from spade.eval.report import _columns

if TYPE_CHECKING:
    from spade.eval.report._rows import Cell

UNAVAILABLE = "unavailable"
#: Where a suite's headline is not its ``score`` (the mean over items): the fields holding
#: it (tau2: the macro mean over domains of pass^1; a run recorded before it, its score).
HEADLINE_FIELD: dict[str, tuple[str, ...]] = {"acebench": ("summary",), "tau2": ("pass_k", "1")}
#: Suites with parts played against a user simulator.
USER_SIMULATED = ("tau2", "acebench")

TABLE_NOTES = (
    "Avg (tool use) is the mean of BFCL v4 multi-turn, tau2-bench pass^1 and ACEBench agent, "
    "the three numbers the paper reports; it reports no tool-use average.",
    "BFCL v4: Overall Acc and the groups are computed by bfcl-eval's own leaderboard code "
    "(generate_leaderboard_csv): non-live = mean of simple (itself the mean of Python, Java "
    "and JavaScript), multiple, parallel and parallel multiple; live weighted by category "
    "size; multi-turn = mean of base, miss_func, miss_param and long_context; irrelevance = "
    "mean of non-live and live irrelevance. Overall Acc = 10% non-live + 10% live + 10% "
    "irrelevance + 30% multi-turn + 40% agentic; agentic (web_search, memory) needs the "
    "internet or a hub model, is not run offline and counts 0 there as bfcl-eval counts a "
    "category it did not evaluate, so this Overall Acc is at most 60%. The paper reports "
    "BFCL v4 multi-turn only.",
    "tau2-bench: pass^1 per domain as tau2 reports it; the overall column is their macro "
    "mean (domains weighted equally, not by task count). pass^k for k > 1 is in "
    "results.json and gated by `spade regress`.",
    "ACEBench summary = 0.578 normal + 0.2676 special + 0.1545 agent.",
)
UNAVAILABLE_NOTE = (
    "unavailable: the part needs what the run did not have (a user simulator, the internet); "
    "it is not scored, not counted as 0."
)


def is_tool_use(suite: str) -> bool:
    return _columns.group_of(suite) == _columns.TOOL_USE


def cells(result: SuiteResult, flagged: bool) -> dict[str, Cell]:
    """The suite's headline (when it has one) and its listed categories."""
    from spade.eval.report._rows import Cell  # _rows dispatches here: import at call time

    info = _columns.SUITES.get(result.suite)
    if info is None:
        return {}
    out: dict[str, Cell] = {}
    missing = _unavailable(result.entry)
    field = HEADLINE_FIELD.get(result.suite)
    headline = _headline(result.entry, field) if field else _ABSENT
    old_tau2 = result.suite == "tau2" and "pass_k_mean" not in result.entry
    if old_tau2:
        headline = _ABSENT  # recorded before the macro mean: its score is its headline
    if info.headline and headline is not _ABSENT:
        out[result.suite] = _bare(headline, flagged, bool(missing))
    elif info.headline and (field is None or old_tau2) and result.score is not None:
        out[result.suite] = Cell(result.score, result.stderr, flagged=flagged)
    names = info.categories if info.listed_only else tuple(result.categories)
    for name in names:
        key = f"{result.suite}/{name}"
        if (result.suite, name) == ("bfcl_v4", "non_live") and "leaderboard" not in result.entry:
            out[key] = _bare(None, flagged, False)  # recorded as Python simple alone
            continue
        cat = result.categories.get(name)
        value, stderr = part_value(result.entry, name), None  # a group first: BFCL's
        if value is _ABSENT and cat is not None:  # "irrelevance" is a group and a category
            value, stderr = cat.score, cat.stderr
        if value is not _ABSENT:
            gone = any(m == name or m.startswith(f"{name}_") for m in missing)
            out[key] = _bare(value, flagged, gone, stderr)
    return out


def _headline(entry: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = entry
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def _unavailable(entry: Mapping[str, Any]) -> list[str]:
    """Names the suite recorded as unavailable (``unavailable`` or ``notes.unavailable``)."""
    raw = entry.get("notes")
    notes: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    names: list[str] = []
    for where in (entry.get("unavailable"), notes.get("unavailable")):
        if isinstance(where, Mapping):
            names.extend(str(k) for k in where)
    return names


_ABSENT = object()


def part_value(entry: Mapping[str, Any], name: str) -> Any:
    """A part recorded beside the fine categories: ACEBench's ``normal`` (top level), BFCL's
    category groups (``groups``), tau2's domains (``per_domain.<d>.pass_k["1"]``)."""
    if name in entry:
        return entry[name]
    groups = entry.get("groups")
    if isinstance(groups, Mapping) and name in groups:
        return groups[name]
    per = (entry.get("per_domain") or {}).get(name)
    if isinstance(per, Mapping):
        return (per.get("pass_k") or {}).get("1")
    return _ABSENT


def _bare(value: Any, flagged: bool, unavailable: bool, stderr: float | None = None) -> Cell:
    """A number as a cell; no number is ``unavailable`` when the suite said so, else n/a."""
    from spade.eval.report._rows import Cell

    if isinstance(value, int | float) and not isinstance(value, bool):
        return Cell(float(value), stderr, flagged=flagged)
    return Cell(state=UNAVAILABLE if unavailable else "n/a")


def user_model(result: SuiteResult) -> str | None:
    """The user simulator a suite's result was made with (its entry, else its protocol)."""
    value: Any = result.entry.get("user_model") or result.protocol.get("user_model")
    if value is None:
        return None
    spec = (value.get("spec") or value.get("name") or "?") if isinstance(value, Mapping) else value
    given = result.protocol.get("user_sampling")
    sampling = dict(given) if isinstance(given, Mapping) else {}
    if isinstance(value, Mapping):
        sampling.update({k: value[k] for k in ("temperature", "top_p", "max_tokens") if k in value})
    extra = ", ".join(f"{k}={v}" for k, v in sampling.items() if k in ("temperature", "top_p"))
    return f"{spec} ({extra})" if extra else str(spec)


def user_model_notes(runs: Sequence[Run]) -> list[str]:
    """One note per (suite, user simulator) naming the runs, and a warning for pooled mixes."""
    seen: dict[tuple[str, str], list[str]] = {}
    per_method: dict[tuple[str, str], set[str]] = {}
    for run in runs:
        for suite, result in run.suites.items():
            if suite not in USER_SIMULATED or not result.has_score:
                continue
            who = user_model(result) or "none (parts needing one are unavailable)"
            seen.setdefault((suite, who), []).append(run.run_id)
            per_method.setdefault((run.method, suite), set()).add(who)
    notes = [
        f"{_columns.SUITES[suite].name} user simulator: {who} "
        f"(run{'s' if len(ids) > 1 else ''} {', '.join(ids)})."
        for (suite, who), ids in sorted(seen.items())
    ]
    for (method, suite), whos in sorted(per_method.items()):
        if len(whos) > 1:
            notes.append(
                f"WARNING: row {method!r} pools {suite} runs made with different user "
                f"simulators ({'; '.join(sorted(whos))}): not comparable."
            )
    return notes


def gold_failure_notes(runs: Sequence[Run]) -> list[str]:
    """ACEBench items of the runs whose gold answer upstream's own checker fails (an oracle
    scores 0 on them), once per item with the reason."""
    seen: dict[str, str] = {}
    for run in runs:
        result = run.suites.get("acebench")
        gaps = result.entry.get("upstream_gold_failures") if result is not None else None
        if isinstance(gaps, Mapping):
            seen.update({str(k): str(v) for k, v in gaps.items()})
    return [f"ACEBench {item}: {why}." for item, why in sorted(seen.items())]


def table_notes(rows_have_unavailable: bool) -> list[str]:
    notes = list(TABLE_NOTES)
    if rows_have_unavailable:
        notes.append(UNAVAILABLE_NOTE)
    return notes
