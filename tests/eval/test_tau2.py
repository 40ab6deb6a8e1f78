"""tau2-bench suite: real tau2 domains, orchestrator and evaluator on the v0.2.0 base split.

The oracle plays the gold agent actions against the gold user; replays of deliberately
wrong action lists are scored by our suite and, independently, by tau2's own entry point
(``tau2.run.run_task``: its orchestrator and ``evaluate_simulation``) with a scripted agent
and user registered in tau2's registry; the two must agree. The user simulator is
exercised over a real OpenAI-compatible HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _evalrun import cli, data_dir, results, samples
from _user_server import user_server

AIRLINE = "tau2/v0.2.0/domains/airline/tasks.json"


@pytest.fixture(scope="module")
def data() -> Path:
    d = data_dir()
    if not (d / AIRLINE).is_file():
        pytest.skip("tau2 v0.2.0 data not in the shared data dir")
    return d


def _suite(data: Path, **extra: Any) -> tuple[Any, list[Any]]:
    from spade.eval._protocol import build
    from spade.eval.data import DataDir
    from spade.eval.suites import SUITES

    suite = SUITES.get("tau2")(build("tau2", {"samples": 1}, {"user_model": "gold", **extra}), 0)
    items = suite.select(suite.load(DataDir(data)).items)
    return suite, items


def test_without_user_model_the_suite_is_missing_not_zero(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    rc = cli("--model", "oracle", "--suites", "tau2", "--limit", "1", "--out", str(out))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "tau2: --user-model SPEC" in err[0]  # as missing data
    entry = results(out)["suites"]["tau2"]
    assert entry["status"] == "missing" and "score" not in entry
    assert entry["missing_file"].startswith("--user-model") and entry["n_items"] == 0


def test_base_split_counts_and_data_identity(data: Path) -> None:
    from spade.eval.data import DataDir

    suite, _ = _suite(data)
    loaded = suite.load(DataDir(data))
    assert loaded.notes["tasks_per_domain"] == {"airline": 50, "retail": 114, "telecom": 114}
    assert loaded.notes["scorer"]["version"] == "26.3"
    names = {p.name for p in loaded.files}
    assert {"tasks.json", "db.json", "db.toml", "user_db.toml", "simulation_guidelines.md"} <= names


def test_oracle_with_gold_user_passes_with_pass_k(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    rc = cli("--model", "oracle", "--suites", "tau2", "--user-model", "gold", "--limit", "1",
             "--samples", "2", "--out", str(out))
    assert rc == 0
    entry = results(out)["suites"]["tau2"]
    assert entry["status"] == "ok" and entry["score"] == 1.0 and entry["n_items"] == 3
    assert entry["pass_k"] == {"1": 1.0, "2": 1.0}
    assert set(entry["per_domain"]) == {"airline", "retail", "telecom"}
    assert entry["comparable"] is False and entry["user_model"]["spec"] == "gold"
    assert entry["protocol"]["user_model"] == "gold" and entry["protocol"]["pass_k"]
    recs = samples(out, "tau2")
    assert len(recs) == 6 and all(r["details"]["termination"] == "user_stop" for r in recs)
    telecom = next(r for r in recs if r["id"].startswith("telecom/"))
    assert telecom["details"]["reward_basis"] and telecom["details"]["env_assertions_met"]
    calls = [m for m in telecom["details"]["messages"] if m.get("tool_calls")]
    assert calls and any(m["role"] == "user" for m in calls)  # the user's own telecom tools


# -- wrong answers, scored by us and by tau2's run_task -----------------------------------------


def _variants(task: Any) -> dict[str, list[dict[str, Any]]]:
    """Gold agent action lists with a known defect (for a task whose gold writes the DB)."""
    gold = [{"name": a.name, "arguments": dict(a.arguments)}
            for a in task.evaluation_criteria.actions]
    writes = [i for i, a in enumerate(gold) if not a["name"].startswith(("get_", "search_",
                                                                           "list_", "calculate"))]
    wrong_arg = json.loads(json.dumps(gold))
    key = next(iter(wrong_arg[writes[0]]["arguments"]))
    wrong_arg[writes[0]]["arguments"][key] = "WRONG-VALUE"
    missing = [a for i, a in enumerate(gold) if i != writes[-1]]
    extra_read = [{"name": gold[0]["name"], "arguments": gold[0]["arguments"]}, *gold]
    return {"gold": gold, "wrong_argument": wrong_arg, "missing_call": missing,
            "extra_read_call": extra_read}


def _script(actions: list[dict[str, Any]], info: list[str]) -> str:
    steps: list[Any] = [{"content": "", "tool_calls": [
        {"id": f"c{k}", "name": a["name"], "arguments": a["arguments"]}]}
        for k, a in enumerate(actions)]
    steps.append(f"[gold agent] done {10**6} " + " ".join(info))
    return json.dumps({"turns": [steps]})


def _run_task_reward(domain: str, task: Any, actions: list[dict[str, Any]],
                     info: list[str]) -> float:
    """tau2's own entry point with a scripted agent and a user that stops at the end."""
    from tau2.agent.llm_agent import LLMAgent
    from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
    from tau2.registry import registry
    from tau2.run import run_task
    from tau2.user.user_simulator import UserSimulator

    class ScriptAgent(LLMAgent):
        def generate_next_message(self, message: Any, state: Any) -> Any:
            k = self.llm_args.setdefault("k", 0)
            self.llm_args["k"] = k + 1
            acts = self.llm_args["actions"]
            if k < len(acts):
                call = ToolCall(id=f"c{k}", name=acts[k]["name"],
                                arguments=acts[k]["arguments"])
                return AssistantMessage(role="assistant", tool_calls=[call]), state
            text = f"[gold agent] done {10**6} " + " ".join(self.llm_args["info"])
            return AssistantMessage(role="assistant", content=text), state

    class StopUser(UserSimulator):
        def _generate_next_message(self, message: Any, state: Any) -> Any:
            done = "[gold agent] done" in (getattr(message, "content", None) or "")
            return UserMessage(role="user", content="###STOP###" if done else "hi"), state

    for name, cls in (("spade_script_agent", ScriptAgent), ("spade_stop_user", StopUser)):
        store = registry._agents if name.endswith("agent") else registry._users
        store.setdefault(name, cls)
    sim = run_task(domain=domain, task=task, agent="spade_script_agent",
                   user="spade_stop_user", llm_agent="none",
                   llm_args_agent={"actions": actions, "info": info}, llm_user="none",
                   llm_args_user={}, max_steps=200, max_errors=10)
    return float(sim.reward_info.reward)


def _writes(task: Any) -> bool:
    reads = ("get_", "search_", "list_", "calculate", "find_", "think")
    return any(not a.name.startswith(reads) for a in task.evaluation_criteria.actions or [])


@pytest.mark.slow
def test_wrong_answers_score_what_tau2_run_task_says(data: Path, tmp_path: Path) -> None:
    limit, trials = 3, 2
    suite, items = _suite(data)
    items = [i for i in items if _pos(items, i) < limit]
    airline = next(i for i in items if i.group == "airline" and _writes(suite._tasks[i.key]))
    retail = next(i for i in items if i.group == "retail" and _writes(suite._tasks[i.key]))
    plan = {airline.key: ("wrong_argument", "missing_call"),
            retail.key: ("gold", "extra_read_call")}
    replay, expected = [], {}
    for item in items:
        task = suite._tasks[item.key]
        info = [str(x) for x in task.evaluation_criteria.communicate_info or []]
        for s in range(trials):
            if item.key not in plan:
                replay.append({"suite": "tau2", "id": item.key, "sample": s,
                               "completion": suite.oracle(item, s)})
                continue
            name = plan[item.key][s]
            actions = _variants(task)[name]
            replay.append({"suite": "tau2", "id": item.key, "sample": s,
                           "completion": _script(actions, info)})
            expected[(item.key, s)] = (name, _run_task_reward(str(item.group), task,
                                                              actions, info))
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in replay), encoding="utf-8")
    out = tmp_path / "run"
    rc = cli("--model", f"replay:{path}", "--suites", "tau2", "--user-model", "gold",
             "--samples", str(trials), "--limit", str(limit), "--out", str(out))
    assert rc == 0
    got = {(r["id"], r["sample"]): r["score"] for r in samples(out, "tau2")}
    assert {k: v for k, (_, v) in expected.items()} == {k: got[k] for k in expected}
    by_variant = {name: v for name, v in expected.values()}
    assert by_variant == {"wrong_argument": 0.0, "missing_call": 0.0, "gold": 1.0,
                          "extra_read_call": 1.0}
    others = [v for (key, _), v in got.items() if key not in plan]
    assert len(others) == (3 * limit - 2) * trials and all(v == 1.0 for v in others)
    entry = results(out)["suites"]["tau2"]
    assert entry["per_domain"]["airline"]["pass_k"]["2"] == pytest.approx(2 / 3)


def _pos(items: list[Any], item: Any) -> int:
    return [i for i in items if i.group == item.group].index(item)


# -- the user simulator over a real local HTTP server ------------------------------------------


def test_user_model_over_local_http_server(data: Path, tmp_path: Path) -> None:
    def reply(messages: list[dict[str, Any]]) -> str:
        last = messages[-1]["content"] or ""
        return "###STOP###" if "[gold agent] done" in last else "Hi, I need help."

    out = tmp_path / "run"
    with user_server(reply) as (spec, seen):
        rc = cli("--model", "oracle", "--suites", "tau2", "--user-model", spec, "--limit", "1",
                 "--samples", "1", "--out", str(out))
    assert rc == 0
    entry = results(out)["suites"]["tau2"]
    assert entry["per_domain"]["airline"]["pass_k"]["1"] == 1.0
    user = entry["user_model"]
    assert user["spec"] == spec and user["name"] == "scripted-user"
    assert user["sampling"] == {"temperature": 0.0, "top_p": 1.0, "top_k": 0, "max_tokens": 4096}
    system = seen[0]["messages"][0]
    guidelines = (data / "tau2/v0.2.0/user_simulator/simulation_guidelines.md").read_text()
    assert system["role"] == "system" and guidelines.strip()[:200] in system["content"]
    assert seen[0]["temperature"] == 0.0
    # the user model is part of the protocol: a rerun with another user model is refused
    with user_server(reply, model="other-user") as (spec2, _):
        rc = cli("--model", "oracle", "--suites", "tau2", "--user-model", spec2, "--limit",
                 "1", "--samples", "1", "--out", str(out))
    assert rc == 2


def test_unreachable_user_model_is_one_line_error(data: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli("--model", "oracle", "--suites", "tau2", "--user-model",
             "openai:http://127.0.0.1:9/v1#nobody", "--limit", "1", "--out", str(tmp_path / "r"))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "127.0.0.1:9" in err[0]


@pytest.mark.slow
def test_smollm2_agent_plays_a_trial_against_a_local_user(data: Path) -> None:
    """A real local model acts through tau2's orchestrator (CPU; a few steps of one task)."""
    from spade.eval._protocol import build
    from spade.eval.data import DataDir
    from spade.eval.providers._base import ProviderOptions, Request, make_provider
    from spade.eval.suites import SUITES

    def reply(messages: list[dict[str, Any]]) -> str:
        return "I want to know the status of my reservation."

    with user_server(reply) as (spec, seen):
        protocol = build("tau2", {"samples": 1, "max_tokens": 16},
                         {"user_model": spec, "domains": ["airline"], "max_steps": 6})
        suite = SUITES.get("tau2")(protocol, 0)
        item = suite.select(suite.load(DataDir(data)).items)[0]
        model = make_provider("smollm2", ProviderOptions(batch_size=1))
        try:
            request = Request(suite, item, 0, suite.messages(item, 0), protocol.sampling(1))
            ((completion, scored),) = suite.play([request], model)
        finally:
            model.close()
            suite.close()
    assert scored.details["termination"] in ("max_steps", "agent_context_exhausted")
    assert scored.score == 0.0 and seen  # tau2 scores an unfinished simulation 0
    roles = [m["role"] for m in scored.details["messages"]]
    assert roles[0] == "assistant" and "user" in roles  # the greeting, then the user
    script = json.loads(completion)["turns"]
    assert script and all(isinstance(t, list) for t in script)


def test_user_model_must_be_a_model() -> None:
    import spade.eval.suites  # noqa: F401  (the package import order the CLI uses)
    from spade.eval.agent._user import UserModel, UserSampling
    from spade.eval.providers.oracle import OracleProvider

    from spade.errors import UserError

    with pytest.raises(UserError, match="must be a model"):
        UserModel("oracle", OracleProvider(), UserSampling())
    with pytest.raises(UserError, match="unknown user_sampling"):
        UserSampling.from_mapping({"temperature": 0.0, "beam": 4})


# -- an empty reply is a failed trial, never a crashed run ----------------------------------


def _replay_run(data: Path, tmp_path: Path, first: str, user: str = "gold"
                ) -> dict[str, Any]:
    """Airline tasks 1 and 2: the first replays ``first`` (one agent step), the second its
    gold episode."""
    from spade.eval._runner import EvalConfig, run_eval

    suite, items = _suite(data, domains=["airline"])
    lines = [{"suite": "tau2", "id": items[0].id, "sample": 0,
              "completion": json.dumps({"turns": [[first]]})},
             {"suite": "tau2", "id": items[1].id, "sample": 0,
              "completion": suite.oracle(items[1], 0)}]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cfg = EvalConfig(model=f"replay:{replay}", suites=("tau2",), out=tmp_path / "run",
                     data_dir=data, overrides={"samples": 1, "limit": 2},
                     extra={"user_model": user, "domains": ["airline"]}, quiet=True)
    return run_eval(cfg)


def test_an_empty_agent_reply_fails_that_trial_only(data: Path, tmp_path: Path) -> None:
    entry = _replay_run(data, tmp_path, "")["suites"]["tau2"]
    assert entry["status"] == "ok" and entry["n_items"] == 2
    recs = {r["id"]: r for r in samples(tmp_path / "run", "tau2")}
    first, second = sorted(recs)
    assert recs[first]["score"] == 0.0 and recs[first]["details"]["termination"] == "agent_error"
    assert recs[second]["score"] == 1.0
    assert entry["score"] == 0.5


def test_an_empty_user_reply_fails_that_trial_only(data: Path, tmp_path: Path) -> None:
    with user_server(lambda messages: "") as (spec, _):
        doc = _replay_run(data, tmp_path, "Hello, how can I help?", user=spec)
    entry = doc["suites"]["tau2"]
    assert entry["status"] == "ok" and entry["n_items"] == 2
    terms = {r["details"]["termination"] for r in samples(tmp_path / "run", "tau2")}
    assert terms == {"user_error"}


def test_overall_pass_k_is_the_macro_mean_of_the_domains() -> None:
    from spade.eval._protocol import build
    from spade.eval.suites import SUITES
    from spade.eval.suites._base import Item

    suite = SUITES.get("tau2")(build("tau2", {"samples": 2}, {"user_model": "gold"}), 0)
    items = [Item("airline/0", {}, group="airline")] + [
        Item(f"retail/{k}", {}, group="retail") for k in range(3)]
    scores = {"airline/0": 1.0, "retail/0": 0.5, "retail/1": 0.0, "retail/2": 0.0}
    got = suite.rollup(scores, items)
    assert got["per_domain"]["airline"]["pass_k"] == {"1": 1.0, "2": 1.0}
    assert got["per_domain"]["retail"]["pass_k"] == {"1": pytest.approx(1 / 6), "2": 0.0}
    assert got["pass_k"] == {"1": pytest.approx((1 + 1 / 6) / 2), "2": 0.5}  # not 0.375
    assert "macro" in got["pass_k_mean"]


# -- replies tau2's own model call retries or refuses ---------------------------------------

HELLO = "Hi, I need help with my reservation. My user id is mia_li_3668."


def _message(content: str | None, calls: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """A chat-completions message as a server sends it (``calls``: name, arguments string)."""
    m: dict[str, Any] = {"role": "assistant", "content": content}
    if calls is not None:
        m["tool_calls"] = [{"id": f"c{k}", "type": "function",
                            "function": {"name": n, "arguments": a}}
                           for k, (n, a) in enumerate(calls)]
    return m


def _tau2_own(task: Any, agent: list[dict[str, Any]], user: list[str],
              monkeypatch: pytest.MonkeyPatch) -> float:
    """tau2's run_task with its own LLMAgent and UserSimulator; litellm's completion answers
    from the scripts (a trial that raises is reward 0, as tau2's runner skips it)."""
    import tau2.utils.llm_utils as llm_utils
    from litellm.main import ModelResponse
    from tau2.run import run_task

    queues = {"agent": list(agent), "user": [_message(t) for t in user]}

    def completion(model: str, **_: Any) -> Any:
        default = _message("###STOP###" if model == "user" else "Goodbye.")
        message = queues[model].pop(0) if queues[model] else default
        return ModelResponse(id="x", model=model, choices=[
            {"index": 0, "finish_reason": "stop", "message": message}],
            usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})

    monkeypatch.setattr(llm_utils, "completion", completion)
    try:
        sim = run_task(domain="airline", task=task, agent="llm_agent", user="user_simulator",
                       llm_agent="agent", llm_args_agent={}, llm_user="user",
                       llm_args_user={}, max_steps=200, max_errors=10)
    except Exception:
        return 0.0
    return float(sim.reward_info.reward)


GOOD_CALL = ("get_user_details", '{"user_id": "mia_li_3668"}')


@pytest.mark.parametrize(("agent", "expected"), [
    # tau2's generate asks again after an empty reply: the trial goes on
    ([_message(""), _message("How can I help?")], 1.0),
    ([_message("  \n"), _message(None, []), _message("How can I help?")], 1.0),
    # a native call tau2 cannot decode fails the trial, next to a good one too
    ([_message(None, [GOOD_CALL, ("get_user_details", "{")]), _message("Found you.")], 0.0),
    ([_message("Checking.", [("get_user_details", '["mia_li_3668"]')]), _message("ok")], 0.0),
], ids=["empty_then_text", "two_empties_then_text", "malformed_next_to_good",
        "arguments_a_list"])
def test_replies_score_what_tau2s_own_agent_loop_gives(
        data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        agent: list[dict[str, Any]], expected: float) -> None:
    from spade.eval._runner import EvalConfig, run_eval

    suite, items = _suite(data, domains=["airline"])
    task = suite._tasks[items[0].key]  # the data's task, equal to the package's
    theirs = _tau2_own(task, agent, [HELLO, "###STOP###"], monkeypatch)
    steps = [{"content": m["content"] or "", **({"tool_calls": [
        {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in m["tool_calls"]]} if "tool_calls" in m else {})} for m in agent]
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"suite": "tau2", "id": items[0].id, "sample": 0,
                                  "completion": json.dumps({"turns": [steps]})}) + "\n")
    said = [HELLO, "###STOP###"]
    with user_server(lambda messages: said.pop(0) if said else "###STOP###") as (spec, _):
        cfg = EvalConfig(model=f"replay:{replay}", suites=("tau2",), out=tmp_path / "run",
                         data_dir=data, overrides={"samples": 1, "limit": 1},
                         extra={"user_model": spec, "domains": ["airline"]}, quiet=True)
        run_eval(cfg)
    [rec] = samples(tmp_path / "run", "tau2")
    assert theirs == expected
    assert rec["score"] == theirs, rec["details"].get("termination")
