"""ACEBench (English): normal, special and agent categories, scored by the upstream checkout.

Data: ``acebench/data_en/data_<category>.json`` and ``possible_answer/`` (JSON lines). The
prompts are upstream's (``model_inference/prompt_en``: the normal, preference and special
system prompts, and the agent prompts of the scenario classes); the model answers in
upstream's text form ``[ApiName(key='value', ...)]``. Verdicts come from upstream's own
category functions (see :mod:`spade.eval.suites._acebench_upstream`); agent episodes run
upstream's scenario classes (:mod:`spade.eval.suites._acebench_agent`).

``--limit N`` takes the first N items of every category. ``agent_multi_turn`` needs a user
simulator (``--user-model SPEC``); without one its items are listed as unavailable, the
agent part and the summary are reported as ``null`` (never zero). The summary is
upstream's: 0.578 normal + 0.2676 special + 0.1545 agent, each the unweighted mean of its
categories (normal multi-turn categories by turn group, agent by end-to-end accuracy).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade.eval.agent import EpisodeSuite
from spade.eval.data import DataDir, UnreadableData
from spade.eval.providers._base import Request
from spade.eval.suites._acebench_upstream import Upstream, resolve_dir
from spade.eval.suites._base import Item, Loaded, Scored
from spade.eval.suites._episode import kept_episode
from spade.eval.suites._registry import SUITES

from spade.errors import UserError
from spade.policy._types import Message
from spade.textfile import read_jsonl

if TYPE_CHECKING:
    from spade.eval.agent._user import UserModel
    from spade.eval.providers._base import Provider

DATA = "acebench/data_en"
NORMAL = (
    "normal_single_turn_single_function", "normal_single_turn_parallel_function",
    "normal_multi_turn_user_adjust", "normal_multi_turn_user_switch", "normal_similar_api",
    "normal_preference", "normal_atom_bool", "normal_atom_enum", "normal_atom_number",
    "normal_atom_list", "normal_atom_object_deep", "normal_atom_object_short",
)
SPECIAL = ("special_incomplete", "special_error_param", "special_irrelevant")
AGENT = ("agent_multi_step", "agent_multi_turn")
CATEGORIES = NORMAL + SPECIAL + AGENT
WEIGHTS = {"normal": 0.578, "special": 0.2676, "agent": 0.1545}
NEEDS_USER = ("agent_multi_turn",)
_GOLD_MILESTONES = ("its gold milestones do not lead to its gold final state (a milestone "
                    "names a product the menu does not have, or leaves out a login the state "
                    "needs): replaying the gold, as the oracle does, fails upstream's check")
#: Items whose gold answer upstream's own checker fails, with the reason: the oracle scores
#: 0 on them, whatever the harness does. Listed in results (``upstream_gold_failures``,
#: for the items a run scored) and in the report.
UPSTREAM_GOLD_FAILURES: dict[str, str] = {
    "normal_single_turn_parallel_function_42":
        "upstream's checker rejects its gold: two calls of one function with an empty "
        "list argument",
    "normal_preference_40":
        "upstream's checker rejects its gold: a list holding the string 'None' where the "
        "checker's type lookup expects None",
    **{f"agent_multi_step_{i}": _GOLD_MILESTONES for i in (0, 1, 12, 13, 14, 15, 16, 17)},
}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return read_jsonl(path)
    except json.JSONDecodeError as exc:
        raise UnreadableData(path, f"line {exc.lineno}: not JSON ({exc.msg})") from None


def _escape_spaces(value: Any) -> str:
    """``repr`` with spaces in strings written as ``\\x20``: upstream deletes every
    whitespace character of a normal multi-turn answer before decoding it."""
    if isinstance(value, str):
        return repr(value).replace(" ", "\\x20")
    if isinstance(value, list):
        return "[" + ",".join(_escape_spaces(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_escape_spaces(k)}:{_escape_spaces(v)}"
                              for k, v in value.items()) + "}"
    return repr(value)


def call_text(name: str, args: Mapping[str, Any], escape_spaces: bool = False) -> str:
    """``name(k=repr(v), ...)``: one call in upstream's answer form."""
    render = _escape_spaces if escape_spaces else repr
    return f"{name}(" + ", ".join(f"{k}={render(v)}" for k, v in args.items()) + ")"


def _function_names(item: Mapping[str, Any]) -> set[str]:
    funcs = item.get("function") or []
    return {str(f.get("name")) for f in (funcs if isinstance(funcs, list) else [funcs])}


def oracle_text(category: str, item: Mapping[str, Any], answer: Mapping[str, Any]) -> str:
    """The reference answer of a normal or special item in the form its prompt asks for."""
    gt = answer["ground_truth"]
    if category == "special_irrelevant":
        return f'["{gt}"]'
    if category == "special_incomplete":
        parts = [f"Missing necessary parameters ({', '.join(map(str, v))}) for the api ({k})"
                 for k, v in gt.items()]
        return "[" + ", ".join(json.dumps(p) for p in parts) + "]"
    if category == "special_error_param":
        parts = [f"There is incorrect value ({', '.join(map(str, v))}) for the parameters "
                 f"({k}) in the conversation history." for k, v in gt.items()]
        return "[" + ", ".join(json.dumps(p) for p in parts) + "]"
    first = gt[0] if isinstance(gt, list) else gt
    names = _function_names(item)
    calls = []
    for key, args in first.items():
        name = key if key in names else re.sub(r"_\d+$", "", key)  # upstream's repeat suffix
        calls.append(call_text(name, args, escape_spaces=category.startswith(
            "normal_multi_turn")))
    return "[" + ", ".join(calls) + "]"


@SUITES.register("acebench")
class ACEBench(EpisodeSuite):

    def __init__(self, protocol: Any, seed: int) -> None:
        super().__init__(protocol, seed)
        self._upstream: Upstream | None = None
        self._user: UserModel | None = None
        spec = protocol.extra.get("user_model") or None
        self._user_spec = None if spec == "gold" else spec  # the gold user is tau2's only
        self._process: dict[tuple[str, int], float] = {}  # agent items: upstream's process score

    # -- data ---------------------------------------------------------------------------

    @property
    def upstream(self) -> Upstream:
        if self._upstream is None:
            self._upstream = Upstream(resolve_dir(self.protocol.extra.get("acebench_dir")))
        return self._upstream

    def load(self, data: DataDir) -> Loaded:
        upstream = self.upstream  # a missing checkout is an error before any work
        items: list[Item] = []
        files: list[Path] = []
        unavailable: dict[str, str] = {}
        for cat in CATEGORIES:
            qpath = data.require(f"{DATA}/data_{cat}.json")
            apath = data.require(f"{DATA}/possible_answer/data_{cat}.json")
            files += [qpath, apath]
            answers = {str(a["id"]): a for a in _read_jsonl(apath)}
            for row in _read_jsonl(qpath):
                key = str(row["id"])
                if key not in answers:
                    raise UserError(f"{apath}: no answer for {key}")
                items.append(Item(key, {"item": row, "answer": answers[key]}, group=cat))
        if self._user_spec is not None:
            _ = self.user  # an unreachable user model is an error before any work
        else:
            for cat in NEEDS_USER:
                unavailable[cat] = "needs a user simulator (--user-model SPEC)"
        notes: dict[str, Any] = {"scorer": upstream.identity(), "limit_mode": "per_category"}
        if unavailable:
            notes["unavailable"] = unavailable
        return Loaded(items, files, notes)

    def select(self, items: list[Item]) -> list[Item]:
        limit = self.protocol.limit
        by_cat: dict[str, int] = defaultdict(int)
        out = []
        for item in items:
            if item.group in NEEDS_USER and self._user_spec is None:
                continue
            by_cat[str(item.group)] += 1
            if limit is None or by_cat[str(item.group)] <= limit:
                out.append(item)
        return out

    # -- single-turn categories ------------------------------------------------------------

    def messages(self, item: Item, sample: int) -> list[Message]:
        cat, row = str(item.group), item.data["item"]
        if cat in AGENT:
            return [{"role": "user", "content": str(row["question"])}]
        prompts = self.upstream.mods["model_inference.prompt_en"]
        functions = row["function"]
        if isinstance(functions, (dict, str)):
            functions = [functions]
        if cat.startswith("special"):
            system = prompts.SYSTEM_PROMPT_FOR_SPECIAL_DATA_EN.format(
                time=row.get("time", ""), function=functions)
        elif "preference" in cat:
            system = prompts.SYSTEM_PROMPT_FOR_PREFERENCE_DATA_EN.format(
                profile=row.get("profile", ""), function=functions)
        else:
            system = prompts.SYSTEM_PROMPT_FOR_NORMAL_DATA_EN.format(
                time=row.get("time", ""), function=functions)
        user = prompts.USER_PROMPT_EN.format(question=row["question"])
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        cat = str(item.group)
        acc, err = self.upstream.score_text(cat, item.data["item"], item.data["answer"],
                                            completion)
        return Scored(completion.strip()[:2000], acc, {"category": cat, **err})

    def oracle(self, item: Item, sample: int) -> str:
        cat = str(item.group)
        if cat in AGENT:
            from spade.eval.suites._acebench_agent import oracle_script

            return oracle_script(item.data["item"], item.data["answer"])
        return oracle_text(cat, item.data["item"], item.data["answer"])

    # -- episodes ------------------------------------------------------------------------

    @property
    def user(self) -> UserModel | None:
        if self._user is None and self._user_spec is not None:
            from spade.eval.agent._user import UserModel

            self._user = UserModel.from_protocol(self._user_spec, self.protocol)
        return self._user

    def run_episode(
        self, item: Item, sample: int, roles: Mapping[str, Provider]
    ) -> tuple[list[Message], Scored]:
        """One item: a single model call for normal/special, a scenario episode for agent."""
        from spade.eval.suites._acebench_agent import play_agent_item, single_call

        if str(item.group) in AGENT:
            return play_agent_item(self, item, sample, roles["model"], self.user)
        messages, completion = single_call(self, item, sample, roles["model"])
        scored = self.score(item, sample, completion)
        details = {**scored.details, "script": completion}  # the raw text, for replays
        return ([*messages, {"role": "assistant", "content": completion}],
                Scored(scored.extracted, scored.score, details))

    def remember_process(self, key: str, sample: int, value: float) -> None:
        self._process[(key, sample)] = value

    def observe(self, record: Mapping[str, Any]) -> None:
        """Take the process score of an agent record loaded from the store (resume)."""
        details = record.get("details") or {}
        if "process_accuracy" in details:
            self.remember_process(str(record["id"]), int(record["sample"]),
                                  float(details["process_accuracy"]))

    def process_of(self, key: str) -> float | None:
        values = [v for (k, _), v in self._process.items() if k == key]
        return sum(values) / len(values) if values else None

    def user_identity(self) -> dict[str, Any] | None:
        return self.user.identity() if self.user is not None else None

    def comparable(self) -> bool:
        """Comparable with published numbers only complete and with the paper's user model."""
        paper_user = self.protocol.extra.get("paper_user_model")
        return (super().comparable() and self.user is not None
                and self.user.identity().get("name") == paper_user)

    # -- aggregates ----------------------------------------------------------------------

    def play(self, requests: Sequence[Request], provider: Provider) -> list[tuple[str, Scored]]:
        """The runner's entry for agentic suites: every request of the batch, in order.

        Normal and special items go to the provider as one batch; agent items are played
        one episode at a time. The completion kept for each is what a replay needs (the
        text, or the episode script); the conversation goes into ``details["messages"]``.
        """
        singles = [r for r in requests if str(r.item.group) not in AGENT]
        texts = {id(r): c.text for r, c in zip(singles, provider.generate(singles), strict=True)}
        out = []
        for r in requests:
            if id(r) in texts:
                text = texts[id(r)]
                scored = self.score(r.item, r.sample, text)
                messages = [*r.messages, {"role": "assistant", "content": text}]
                out.append((text, Scored(scored.extracted, scored.score,
                                         {**scored.details, "messages": messages})))
                continue
            out.append(kept_episode(*self.run_episode(r.item, r.sample, {"model": provider})))
        return out

    def rollup(self, item_scores: Mapping[str, float], items: Sequence[Item]) -> dict[str, Any]:
        from spade.eval.suites._acebench_agent import process_scores

        per_cat: dict[str, list[Item]] = defaultdict(list)
        for item in items:
            if item.key in item_scores:
                per_cat[str(item.group)].append(item)
        acc: dict[str, float] = {}
        extra: dict[str, Any] = {}
        up = self.upstream
        for cat, cat_items in per_cat.items():
            if cat.startswith("normal_multi_turn"):
                acc[cat], extra[f"{cat}_process"] = up.multi_turn_accuracy(
                    _turn_groups(cat_items, item_scores))
            else:
                acc[cat] = round(sum(item_scores[i.key] for i in cat_items) / len(cat_items), 3)
        for cat in AGENT:
            if cat in per_cat:
                extra[f"{cat}_process"] = process_scores(self, per_cat[cat])
        parts: dict[str, float | None] = {}
        for part, cats in (("normal", NORMAL), ("special", SPECIAL), ("agent", AGENT)):
            have = [acc[c] for c in cats if c in acc]
            parts[part] = up.unweighted(have) if len(have) == len(cats) else None
        summary = None
        if all(v is not None for v in parts.values()):
            summary = round(sum(WEIGHTS[p] * float(v or 0) for p, v in parts.items()), 3)
        gaps = {i.key: UPSTREAM_GOLD_FAILURES[i.key] for i in items
                if i.key in UPSTREAM_GOLD_FAILURES and i.key in item_scores}
        return {"categories": acc, "process_accuracy": extra, **parts, "summary": summary,
                "user_model": self.user_identity(),
                **({"upstream_gold_failures": gaps} if gaps else {})}

    def close(self) -> None:
        if self._user is not None:
            self._user.close()
        if self._upstream is not None:
            self._upstream.close()


def _turn_groups(
    items: Sequence[Item], scores: Mapping[str, float]
) -> list[tuple[str, list[bool]]]:
    """Consecutive items of one dialogue (``..._<dialogue>_<turn>`` ids), as upstream groups."""
    groups: list[tuple[str, list[bool]]] = []
    for item in items:
        dialogue = item.key.split("_")[-2]
        ok = scores[item.key] >= 1.0
        if groups and groups[-1][0] == dialogue:
            groups[-1][1].append(ok)
        else:
            groups.append((dialogue, [ok]))
    return groups
