"""tau2-bench v0.2.0 (airline, retail, telecom), run and scored by the ``tau2`` package.

One item is one task (id ``<domain>/<task id>``); each sample is one trial, 4 in the paper
preset. A trial is tau2's own simulation: its ``Orchestrator`` with the domain's
environment (tools, database, policy, the user's telecom tools), our evaluated model as
the agent and our user model behind tau2's ``UserSimulator`` (see
:mod:`spade.eval.suites._tau2_roles`), then tau2's ``evaluate_simulation`` (evaluation type
``all``): the reward is the product over the task's reward basis (DB hash, communicated
information, environment assertions, actions). Results carry pass^k for k = 1..trials:
the mean over a domain's tasks of C(successes, k) / C(trials, k) per domain, as tau2
reports it, and overall the macro mean over domains (``pass_k_mean`` says so). A trial
where the agent or the user model says nothing (no text, no call) is a failed trial
(``agent_error`` / ``user_error``, reward 0), as tau2's runner scores a trial it skips;
the run goes on.

Without ``--user-model`` nothing is scored: the suite is reported as missing (never zero).
``--user-model gold`` is the self-check user: tau2's user side replays the task's gold
user actions (results with it are not comparable). The oracle plays the gold agent
actions; with the gold user it passes every base-split task.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade.eval.agent import EpisodeSuite
from spade.eval.data import DataDir, MissingData
from spade.eval.providers._base import Request
from spade.eval.suites import _tau2_data as data_mod
from spade.eval.suites._base import Item, Loaded, OracleUnavailable, Scored
from spade.eval.suites._episode import kept_episode
from spade.eval.suites._registry import SUITES

from spade.errors import UserError
from spade.policy._types import Message
from spade.seeds import derive_seed

if TYPE_CHECKING:
    from spade.eval.agent._user import UserModel
    from spade.eval.providers._base import Provider


#: ``--user-model gold``: tau2's user side replays the task's gold user actions (the oracle
#: self-check); results made with it are never comparable.
GOLD_USER = "gold"


class UserModelMissing(MissingData):
    """tau2 cannot run without a user simulator: the suite is reported as missing."""

    def __init__(self) -> None:
        super().__init__(Path("--user-model SPEC"),
                         "tau2 needs a user simulator (e.g. --user-model "
                         "openai:http://127.0.0.1:8000/v1#gpt-4.1, or 'gold' with the oracle)")


@SUITES.register("tau2")
class Tau2(EpisodeSuite):

    def __init__(self, protocol: Any, seed: int) -> None:
        super().__init__(protocol, seed)
        self._user: UserModel | None = None
        self._user_spec = protocol.extra.get("user_model") or None
        self._tasks: dict[str, Any] = {}

    def load(self, data: DataDir) -> Loaded:
        if self._user_spec is None:
            raise UserModelMissing()
        package_data = data_mod.import_tau2()
        _ = self.user  # an unreachable user model is an error before any work
        from tau2.data_model.tasks import Task

        items: list[Item] = []
        files: list[Path] = data_mod.user_files(data, package_data)
        domains = list(self.protocol.extra.get("domains") or data_mod.DOMAINS)
        for domain in domains:
            if domain not in data_mod.DOMAINS:
                raise UserError(f"tau2: unknown domain {domain!r} (known: "
                                f"{', '.join(data_mod.DOMAINS)})")
            d = data_mod.load_domain(data, domain, package_data)
            files += d.files
            for raw in d.tasks:
                key = f"{domain}/{raw['id']}"
                self._tasks[key] = Task.model_validate(raw)
                items.append(Item(key, {"domain": domain, "task_id": raw["id"]}, group=domain))
        notes: dict[str, Any] = {"scorer": data_mod.implementation(),
                                 "task_split": "base (v0.2.0)", "limit_mode": "per_domain",
                                 "tasks_per_domain": {d: sum(i.group == d for i in items)
                                                      for d in domains}}
        return Loaded(items, files, notes)

    def select(self, items: list[Item]) -> list[Item]:
        limit = self.protocol.limit
        seen: dict[str, int] = defaultdict(int)
        out = []
        for item in items:
            seen[str(item.group)] += 1
            if limit is None or seen[str(item.group)] <= limit:
                out.append(item)
        return out

    def messages(self, item: Item, sample: int) -> list[Message]:
        task = self._tasks[item.key]
        return [{"role": "user", "content": f"tau2 {item.key}: {task.user_scenario}"}]

    def oracle(self, item: Item, sample: int) -> str:
        from spade.eval.suites._tau2_roles import oracle_script

        task = self._tasks[item.key]
        if task.evaluation_criteria is None:
            raise OracleUnavailable(f"tau2 {item.key} has no evaluation criteria")
        return oracle_script(task)

    def check_oracle(self, items: Sequence[Item]) -> None:
        pass  # every base-split task has gold actions (possibly none) to replay

    @property
    def user(self) -> UserModel | None:
        if self._user is None and self._user_spec not in (None, GOLD_USER):
            from spade.eval.agent._user import UserModel

            self._user = UserModel.from_protocol(self._user_spec, self.protocol)
        return self._user

    def comparable(self) -> bool:
        """Comparable with published numbers only with the paper's user model."""
        paper_user = self.protocol.extra.get("paper_user_model")
        return (super().comparable() and self.user is not None
                and self.user.identity().get("name") == paper_user)

    def run_episode(
        self, item: Item, sample: int, roles: Mapping[str, Provider]
    ) -> tuple[list[Message], Scored]:
        """One trial: tau2's orchestrator with our agent and user, tau2's evaluation."""
        from spade.eval.suites._tau2_run import run_trial

        provider = roles["model"]
        task = self._tasks[item.key]
        seed = derive_seed(self.seed, self.id, item.key, sample)
        request = Request(self, item, sample, self.messages(item, sample),
                          self.protocol.sampling(seed))
        return run_trial(self, str(item.group), task, provider, request, seed, self.user)

    def play(self, requests: Sequence[Request], provider: Provider) -> list[tuple[str, Scored]]:
        """The runner's entry for agentic suites: one episode per request, in order.

        The completion kept for each is what a replay needs (the text, or the episode
        script); the conversation goes into ``details["messages"]``.
        """
        out = []
        for r in requests:
            out.append(kept_episode(*self.run_episode(r.item, r.sample, {"model": provider})))
        return out

    def rollup(self, item_scores: Mapping[str, float], items: Sequence[Item]) -> dict[str, Any]:
        from spade.eval.regress._passk import pass_hat_k

        n = self.protocol.samples
        by_domain: dict[str, list[int]] = defaultdict(list)
        for item in items:
            if item.key in item_scores:
                # every trial scores 0 or 1, so the mean over n trials gives the success count
                by_domain[str(item.group)].append(round(item_scores[item.key] * n))

        def passk(successes: Sequence[int]) -> dict[str, float | None]:
            return {str(k): (sum(pass_hat_k(c, n, k) for c in successes) / len(successes)
                             if successes else None) for k in range(1, n + 1)}

        rates = {d: passk(v) for d, v in by_domain.items()}
        per_domain = {d: {"pass_k": rates[d], "n_tasks": len(v)} for d, v in by_domain.items()}
        return {"pass_k": macro_mean(list(rates.values())),
                "pass_k_mean": PASS_K_MEAN,
                "per_domain": per_domain,
                "user_model": self.user.identity() if self.user is not None else
                {"spec": GOLD_USER, "name": "gold user actions (oracle self-check)"}}

    def close(self) -> None:
        if self._user is not None:
            self._user.close()


#: How the overall pass^k is made from tau2's per-domain numbers (recorded with it).
PASS_K_MEAN = ("macro: the unweighted mean over domains of each domain's pass^k (tau2 "
               "reports pass^k per domain; a domain's size does not weigh in)")


def macro_mean(per_domain: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """``{k: mean over domains}``; None for a k some domain lacks (or with no domain)."""
    keys = {k for p in per_domain for k in p}
    out: dict[str, float | None] = {}
    for k in sorted(keys, key=int):
        values = [p.get(k) for p in per_domain]
        known = [v for v in values if v is not None]
        out[k] = sum(known) / len(known) if known and len(known) == len(values) else None
    return out


def dump_trajectory(messages: Sequence[Any]) -> list[Message]:
    """tau2 messages as the harness's chat dicts (tool calls and results kept)."""
    out: list[Message] = []
    for m in messages:
        entry: Message = {"role": m.role, "content": getattr(m, "content", None) or ""}
        calls = getattr(m, "tool_calls", None)
        if calls:
            entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": json.dumps(c.arguments)}} for c in calls]
        if m.role == "tool":
            entry["tool_call_id"] = m.id
        requestor = getattr(m, "requestor", None)
        if m.role == "tool" and requestor:
            entry["requestor"] = requestor
        out.append(entry)
    return out
