"""Build one inspect-ai ``EvalLog`` per suite of a run directory.

Mapping: a suite is an inspect *task*; an item is a *sample* (id = the item id) and each of
its samples/trials is an *epoch* (epoch = sample + 1), so inspect's per-sample "mean"
reduction gives our per-item score and the task metric our suite score. The run's identity
(model and its sha256, protocol, data files and their sha256, seeds, code version) goes in
the eval spec's metadata and each sample's seed, prompt hash and details in the sample's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from spade.eval.inspect_export._messages import to_inspect
from spade.eval.inspect_export._prompts import PromptSource

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample, EvalSpec

#: Fields a sample record may carry its full conversation in (agentic suites).
TRANSCRIPT_FIELDS = ("messages", "transcript")


def stable_id(*parts: object) -> str:
    """A short id that is the same every time the same run is exported."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()[:22]


def transcript(rec: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The recorded conversation of an agentic sample, if the record has one."""
    raw = rec.get("details")
    details: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    for source in (rec, details):
        for name in TRANSCRIPT_FIELDS:
            value = source.get(name)
            if isinstance(value, list) and all(isinstance(m, Mapping) for m in value):
                return value
            if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
                return list(value["messages"])
    return None


def _sample(suite: str, rec: Mapping[str, Any], prompts: PromptSource, model: str) -> EvalSample:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score
    from spade.eval._runner import prompt_hash

    key, sample = str(rec["id"]), int(rec.get("sample", 0))
    completion = str(rec.get("completion") or "")
    details = dict(rec.get("details") or {})
    meta: dict[str, Any] = {
        "sample": sample,
        "seed": rec.get("seed"),
        "prompt_hash": rec.get("prompt_hash"),
        "time_s": rec.get("time_s"),
    }
    convo = transcript(rec)
    if convo is not None:
        for name in TRANSCRIPT_FIELDS:
            details.pop(name, None)
        first_user = next((i for i, m in enumerate(convo) if m.get("role") == "user"), 0)
        messages = to_inspect(convo, model=model)
        inputs = messages[: first_user + 1]
        meta["prompt"] = "transcript"
    else:
        rebuilt = prompts.messages(key, sample)
        verified = rebuilt is not None and prompt_hash(rebuilt) == rec.get("prompt_hash")
        if verified and rebuilt is not None:
            inputs = to_inspect(rebuilt)
            meta["prompt"] = "rebuilt (hash verified)"
        else:
            why = prompts.problem or ("hash differs" if rebuilt is not None else "item not found")
            inputs = to_inspect([{"role": "user", "content": f"(prompt not shown: {why})"}])
            meta["prompt"] = f"unavailable: {why}"
        reply = to_inspect([{"role": "assistant", "content": completion}], model=model)
        messages = [*inputs, *reply]
    item = prompts.items.get(key)
    if item is not None and item.group:
        meta["group"] = item.group
    target = details.get("target", "")
    score = Score(
        value=float(rec["score"]),
        answer=None if rec.get("extracted") is None else str(rec["extracted"]),
        metadata=json.loads(json.dumps(details, default=str)) or None,
    )
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    output = ModelOutput.from_content(model, last.text if last is not None else completion)
    return EvalSample(
        id=rec["id"] if isinstance(rec["id"], int | str) else key,
        epoch=sample + 1,
        input=list(inputs),
        target=target if isinstance(target, str) else json.dumps(target, default=str),
        messages=list(messages),
        output=output,
        scores={suite: score},
        metadata=meta,
        total_time=float(rec.get("time_s") or 0.0) or None,
        uuid=stable_id("sample", suite, key, sample),
    )


def _utc(text: str | None) -> str:
    if text:
        try:
            return datetime.fromisoformat(text).astimezone(UTC).isoformat()
        except ValueError:
            pass
    return datetime.now(UTC).isoformat(timespec="seconds")


def _metrics(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The suite's headline, its error, and every numeric category roll-up, as metrics."""
    from inspect_ai.log import EvalMetric

    out: dict[str, EvalMetric] = {}
    for name in ("score", "stderr"):
        if isinstance(entry.get(name), int | float):
            label = "mean" if name == "score" else name
            out[label] = EvalMetric(name=label, value=float(entry[name]))
    for label, value in _named_numbers(entry):
        out[label] = EvalMetric(name=label, value=value)
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, Mapping):
        value = value.get("score", value.get("accuracy"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _named_numbers(entry: Mapping[str, Any]) -> list[tuple[str, float]]:
    """Roll-ups as the suites record them: categories (``score``, ``accuracy`` or a bare
    number), BFCL's ``groups``, ACEBench's parts and summary, pass^k overall and per domain."""
    found: list[tuple[str, Any]] = list((entry.get("categories") or {}).items())
    found += list((entry.get("groups") or {}).items())
    found += [(p, entry.get(p)) for p in ("normal", "special", "agent", "summary")]
    found += [(f"pass^{k}", v) for k, v in (entry.get("pass_k") or {}).items()]
    for domain, doc in (entry.get("per_domain") or {}).items():
        if isinstance(doc, Mapping):
            found += [(f"{domain} pass^{k}", v) for k, v in (doc.get("pass_k") or {}).items()]
    return [(str(n), x) for n, v in found if (x := _number(v)) is not None]


def _spec(
    doc: Mapping[str, Any], args: Mapping[str, Any], suite: str, entry: Mapping[str, Any]
) -> EvalSpec:
    import inspect_ai
    from inspect_ai.log import EvalConfig, EvalDataset, EvalRevision, EvalSpec
    from inspect_ai.model import GenerateConfig, ModelConfig

    model = dict(doc.get("model") or {})
    protocol = dict(entry.get("protocol") or {})
    code = dict(doc.get("code_version") or {})
    data = [dict(d) for d in entry.get("data") or [] if isinstance(d, Mapping)]
    run_id = str(doc.get("run_id") or "")
    revision = None
    if code.get("git_commit"):
        revision = EvalRevision(
            type="git", origin="", commit=str(code["git_commit"]), dirty=code.get("git_dirty")
        )
    roles: dict[str, ModelConfig | list[ModelConfig]] | None = None
    user = entry.get("user_model")
    if user:
        user_doc = dict(user) if isinstance(user, Mapping) else {"spec": str(user)}
        name = str(user_doc.get("spec") or user_doc.get("name") or user)
        roles = {
            "user": ModelConfig(model=name, args=json.loads(json.dumps(user_doc, default=str)))
        }
    metadata = {
        "spade_run_id": run_id,
        "method": doc.get("method"),
        "model": model,
        "protocol": protocol,
        "data": data,
        "seed": doc.get("seed"),
        "suite_status": entry.get("status"),
        "comparable": entry.get("comparable"),
        "metric": entry.get("metric"),
        "code_version": code,
        "run_finished": doc.get("finished"),
    }
    for name in ("scorer", "notes", "unavailable", "pass_k", "categories", "user_model"):
        if entry.get(name) is not None:
            metadata[name] = entry[name]
    return EvalSpec(
        eval_id=stable_id("eval", run_id, suite, doc.get("created")),
        run_id=stable_id("run", run_id, doc.get("created")),
        created=_utc(doc.get("created")),
        task=suite,
        task_id=stable_id("task", suite, json.dumps(protocol, sort_keys=True, default=str)),
        task_args={k: v for k, v in protocol.items() if k != "name"},
        dataset=EvalDataset(
            name=suite,
            location=",".join(str(d.get("path")) for d in data) or None,
            samples=entry.get("n_items"),
        ),
        model=str(model.get("spec") or model.get("name") or "unknown"),
        model_generate_config=GenerateConfig(
            temperature=protocol.get("temperature"),
            top_p=protocol.get("top_p"),
            top_k=protocol.get("top_k"),
            max_tokens=protocol.get("max_tokens"),
            seed=doc.get("seed"),
        ),
        model_args=json.loads(json.dumps(model, default=str)),
        model_roles=roles,
        config=EvalConfig(
            epochs=entry.get("n_samples") or None,
            epochs_reducer=["mean"],
            limit=protocol.get("limit"),
        ),
        revision=revision,
        packages={"spade": str(code.get("spade") or ""), "inspect_ai": inspect_ai.__version__},
        metadata=json.loads(json.dumps(metadata, default=str)),
    )


def build_log(
    doc: Mapping[str, Any],
    args: Mapping[str, Any],
    suite: str,
    records: Sequence[Mapping[str, Any]],
    prompts: PromptSource,
) -> EvalLog:
    """The inspect log of one suite: spec, every sample record, results and status."""
    from inspect_ai._util.error import EvalError
    from inspect_ai.log import EvalLog, EvalResults, EvalScore, EvalStats

    entry = dict((doc.get("suites") or {}).get(suite) or {})
    spec = _spec(doc, args, suite, entry)
    samples = [_sample(suite, r, prompts, spec.model) for r in records]
    status = entry.get("status", "ok")
    results = None
    if status in ("ok", "partial") and samples:
        results = EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=[
                EvalScore(
                    name=suite,
                    scorer=str(entry.get("scorer") or suite),
                    reducer="mean",
                    scored_samples=entry.get("n_items"),
                    metrics=_metrics(entry),
                )
            ],
        )
    error = None
    log_status: Literal["started", "success", "cancelled", "error"] = (
        "success" if status == "ok" and doc.get("finished") else "started"
    )
    if status == "partial":
        log_status = "cancelled"
    elif status not in ("ok", "partial"):
        log_status = "error"
        why = entry.get("missing_file") or entry.get("error") or status
        text = f"suite status {status}: {why}"
        error = EvalError(message=text, traceback=text, traceback_ansi=text)
    created = spec.created
    return EvalLog(
        status=log_status,
        eval=spec,
        results=results,
        stats=EvalStats(
            started_at=created, completed_at=_utc(doc.get("updated") or doc.get("created"))
        ),
        error=error,
        samples=samples,
    )
