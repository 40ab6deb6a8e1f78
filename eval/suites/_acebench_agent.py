"""ACEBench agent episodes (multi_step, multi_turn) on upstream's scenario classes.

The episode loop follows upstream's ``CommonInference.multi_step_inference`` and
``multi_turn_inference`` step for step (at most ``max_dialog_turns`` messages, 40 as
upstream; ``finish conversation`` ends it after the second message; every execution turn
adds the executed message to the process milestones; the final state is the attributes
upstream saves per scenario class). The roles are upstream's classes: ``CommonAgent_Step``
/ ``CommonAgent`` (their prompts and reply routing), ``EXECUTION_STEP`` / ``EXECUTION``
(decoding and running the calls on the scenario instances), the scenes, and
``APIUSER`` for the user, whose chat client is our user model. Only the model behind
``agent.model.inference`` and the user's client are ours.

Upstream keeps scenario instances in a module-global table keyed by model name and test
id; each episode uses a unique model name and removes its instances afterwards, so trials
never share state.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from spade.eval.providers._base import Request
from spade.eval.suites._base import Item, Scored

from spade.errors import UserError
from spade.policy._types import Message
from spade.seeds import derive_seed

if TYPE_CHECKING:
    from spade.eval.agent._user import UserModel
    from spade.eval.providers._base import Provider
    from spade.eval.suites.acebench import ACEBench

MAX_DIALOG_TURNS = 40
FINISH = "finish conversation"


def single_call(
    suite: ACEBench, item: Item, sample: int, provider: Provider
) -> tuple[list[Message], str]:
    """One completion for a normal or special item."""
    messages = suite.messages(item, sample)
    seed = derive_seed(suite.seed, suite.id, item.key, sample)
    req = Request(suite, item, sample, messages, suite.protocol.sampling(seed))
    return messages, provider.generate([req])[0].text


class _AgentModel:
    """What upstream's agent classes call ``model.inference(system, user)`` on."""

    def __init__(self, suite: ACEBench, item: Item, sample: int, provider: Provider) -> None:
        from spade.eval.providers._policy import PolicyProvider

        self.suite, self.item, self.sample, self.provider = suite, item, sample, provider
        self.seed = derive_seed(suite.seed, suite.id, item.key, sample)
        self.scripted = not isinstance(provider, PolicyProvider)
        self.replies: list[str] = []
        self.system: str | None = None
        self._script: list[list[Any]] | None = None

    def _from_script(self, step: int) -> str:
        from spade.eval.agent._models import script_step

        if self._script is None:
            req = Request(self.suite, self.item, self.sample,
                          self.suite.messages(self.item, self.sample),
                          self.suite.protocol.sampling(self.seed))
            text = self.provider.generate([req])[0].text
            try:
                turns = json.loads(text)["turns"]
                if not isinstance(turns, list):
                    raise TypeError("turns must be a list")
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise UserError(f"{self.provider.spec}: acebench id={self.item.key}: not an "
                                f"episode script ({exc})") from None
            self._script = turns
        if step >= len(self._script) or not self._script[step]:
            raise UserError(f"{self.provider.spec}: acebench id={self.item.key} sample="
                            f"{self.sample}: the script has {len(self._script)} step(s), the "
                            f"episode reached step {step + 1}")
        return script_step(self._script[step][0]).text

    def inference(self, system_prompt: str, user_prompt: str) -> str:
        step = len(self.replies)
        self.system = self.system or system_prompt
        if self.scripted:
            text = self._from_script(step)
        else:
            messages = [{"role": "system", "content": system_prompt},
                        {"role": "user", "content": user_prompt}]
            params = self.suite.protocol.sampling(derive_seed(self.seed, "acebench-step", step))
            req = Request(self.suite, self.item, self.sample, messages, params)
            text = self.provider.generate([req])[0].text
        self.replies.append(text)
        return text


class _UserClient:
    """The ``client.chat.completions.create`` that upstream's ``APIUSER`` calls."""

    def __init__(self, user: UserModel, seed: int) -> None:
        self.user, self.seed, self.calls = user, seed, 0
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, *, messages: Sequence[Message], **_sampling: Any) -> Any:
        reply = self.user.reply(messages, seed=derive_seed(self.seed, "user", self.calls))
        self.calls += 1
        msg = SimpleNamespace(content=reply.text)
        return SimpleNamespace(choices=[SimpleNamespace(message=msg)])


def _api_user(suite: ACEBench, row: Mapping[str, Any], user: UserModel, seed: int) -> Any:
    """Upstream's ``APIUSER`` with our user model as its chat client."""
    cls = suite.upstream.mods["model_inference.multi_turn.APIModel_user"].APIUSER
    obj = cls.__new__(cls)  # its __init__ only builds an API client from env variables
    s = user.sampling
    obj.model_name, obj.temperature, obj.top_p, obj.max_tokens = (
        user.spec, s.temperature, s.top_p, s.max_tokens)
    obj.involved_class, obj.messages, obj.language = row["involved_classes"], [], "en"
    obj.client = _UserClient(user, seed)
    return obj


def _final_state(saved: Mapping[str, list[str]], instances: Sequence[Any]) -> list[dict]:
    out = []
    for result_instance in instances:
        for name, instance in result_instance.items():
            out.append({name: {k: v for k, v in instance.__dict__.items()
                               if k in saved[name]}})
    return out


def _run_multi_step(suite: ACEBench, row: Mapping[str, Any], model: _AgentModel,
                    name: str) -> tuple[list[dict], list[Any], list[dict]]:
    mods, up = suite.upstream.mods, suite.upstream
    functions = row["function"] if isinstance(row["function"], list) else [row["function"]]
    agent = mods["model_inference.multi_step.common_agent_step"].CommonAgent_Step(
        model=model, language="en", functions=functions)
    execution = mods["model_inference.multi_step.execution_role_step"].EXECUTION_STEP(
        agent_model_name=name, initial_config=row["initial_config"],
        involved_classes=row["involved_classes"], test_id=str(row["id"]).split("_")[-1],
        language="en")
    scene = mods["model_inference.multi_step.multi_step_scene"].Mulit_Step_Scene(
        question=row["question"], initial_state=row["initial_config"], functions=functions,
        agent_role=agent, language="en")
    history, instances, milestones = scene.dialogue_history, [], []
    for index in range(MAX_DIALOG_TURNS):
        if index == 0 or history[-1]["sender"] == "execution":
            current = agent.respond(scene.get_inference_message())
        else:
            current, instance = execution.respond(history)
            milestones.append(history[-1]["message"])
            if instance not in instances:
                instances.append(instance)
        scene.add_dialogue(current)
        if index > 1 and FINISH in current["message"]:
            break
    return _final_state(up.saved_class, instances), milestones, list(history)


def _run_multi_turn(suite: ACEBench, row: Mapping[str, Any], model: _AgentModel,
                    user: UserModel, name: str) -> tuple[list[dict], list[Any], list[dict]]:
    mods, up = suite.upstream.mods, suite.upstream
    functions = row["function"] if isinstance(row["function"], list) else [row["function"]]
    agent = mods["model_inference.multi_turn.common_agent"].CommonAgent(
        model=model, time="", functions=functions, involved_class=row["involved_classes"],
        language="en")
    api_user = _api_user(suite, row, user, model.seed)
    execution = mods["model_inference.multi_turn.execution_role"].EXECUTION(
        agent_model_name=name, initial_config=row["initial_config"],
        involved_classes=row["involved_classes"], test_id=str(row["id"]).split("_")[-1],
        language="en")
    init = api_user.get_init_prompt(row["question"])
    scene = mods["model_inference.multi_turn.multi_turn_scene"].Scene(
        initial_state=row["initial_config"], functions=functions, agent_role=agent,
        user_role=api_user, init_message=init, language="en")
    history, instances, milestones = scene.dialogue_history, [], []
    for index in range(MAX_DIALOG_TURNS):
        last = history[-1]["recipient"]
        if last == "user":
            scene.get_inference_message()
            api_user.step(history[-1]["message"])
            current = api_user.respond()
        elif last == "agent":
            current = agent.respond(scene.get_inference_message())
        else:
            scene.get_inference_message()
            milestones.append(history[-1]["message"])
            current, instance = execution.respond(history)
            if isinstance(instance, dict) and instance not in instances:
                instances.append(instance)
        scene.add_dialogue(current)
        if index > 1 and FINISH in current["message"]:
            break
    return _final_state(up.saved_class, instances), milestones, list(history)


def _forget_instances(suite: ACEBench, name: str) -> None:
    """Drop the scenario instances upstream cached under this episode's model name."""
    prefix = name.replace("-", "_").replace(".", "_").replace("/", "_") + "_"
    for mod_name in ("model_inference.multi_step.multi_step_utils",
                     "model_inference.multi_turn.multi_turn_utils"):
        table = vars(suite.upstream.mods[mod_name])
        for key in [k for k in table if k.startswith(prefix)]:
            del table[key]


def _as_messages(system: str | None, history: Sequence[Mapping[str, Any]]) -> list[Message]:
    roles = {"user": "user", "agent": "assistant", "execution": "tool"}
    out: list[Message] = [{"role": "system", "content": system}] if system else []
    for turn in history:
        content = turn["message"]
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False,
                                                                    default=str)
        out.append({"role": roles.get(str(turn["sender"]), "user"), "content": text})
    return out


def play_agent_item(
    suite: ACEBench, item: Item, sample: int, provider: Provider, user: UserModel | None
) -> tuple[list[Message], Scored]:
    """Play one agent item and score it with upstream's ``agent_eval``."""
    cat, row, answer = str(item.group), item.data["item"], item.data["answer"]
    model = _AgentModel(suite, item, sample, provider)
    name = f"spade_{uuid.uuid4().hex[:12]}"
    try:
        if cat == "agent_multi_step":
            state, process, history = _run_multi_step(suite, row, model, name)
        else:
            if user is None:
                raise UserError("acebench agent_multi_turn needs --user-model SPEC")
            state, process, history = _run_multi_turn(suite, row, model, user, name)
    finally:
        _forget_instances(suite, name)
    # upstream writes results as JSON lines and scores what it reads back (int keys -> str)
    state = json.loads(json.dumps(state, ensure_ascii=False, default=str))
    e2e, proc, err = suite.upstream.score_agent(cat, row, answer, state, process)
    script = json.dumps({"turns": [[r] for r in model.replies]}, ensure_ascii=False)
    details = {"category": cat, "process_accuracy": proc, "process": [str(p) for p in process],
               "final_state": state, "script": script,
               **err}
    suite.remember_process(item.key, sample, proc)
    return _as_messages(model.system, history), Scored(json.dumps(process, default=str)[:2000],
                                                         e2e, details)


def _milestone_call(stone: str) -> str:
    """A milestone as executable upstream syntax (a few are written with unescaped quotes)."""
    import ast

    stone = stone.strip()
    try:
        ast.parse(stone.strip("[]"), mode="eval")
        return stone
    except SyntaxError:
        pass
    # re-quote each  key='value'  whose value runs up to the next ", key=" or the end
    def fix(m: re.Match[str]) -> str:
        return f"{m.group(1)}={m.group(2)!r}"

    return re.sub(r"(\w+)='(.*?)'(?=, \w+=|\)\]?$|\), )", fix, stone)


def oracle_script(row: Mapping[str, Any], answer: Mapping[str, Any]) -> str:
    """The gold episode: each milestone call in turn, then ``finish conversation``."""
    stones = answer.get("mile_stone") or []
    if stones and isinstance(stones[0], list):
        stones = stones[0]
    steps = [[_milestone_call(str(s))] for s in stones] + [[FINISH]]
    return json.dumps({"turns": steps}, ensure_ascii=False)


def process_scores(suite: ACEBench, items: Sequence[Item]) -> float | None:
    """Mean over items (and their samples) of upstream's process accuracy."""
    values = [suite.process_of(i.key) for i in items]
    have = [v for v in values if v is not None]
    return round(sum(have) / len(have), 3) if have and len(have) == len(values) else None
