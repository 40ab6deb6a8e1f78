"""One tau2 trial: tau2's environment and orchestrator, our participants, tau2's evaluation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spade.eval.suites._base import Scored

from spade.policy._types import Message

if TYPE_CHECKING:
    from spade.eval.agent._user import UserModel
    from spade.eval.providers._base import Provider, Request
    from spade.eval.suites.tau2 import Tau2


def _brief(info: Any) -> dict[str, Any]:
    """The parts of tau2's RewardInfo worth keeping per trial."""
    out: dict[str, Any] = {
        "reward": info.reward,
        "reward_basis": [r.value for r in (info.reward_basis or [])],
        "reward_breakdown": {getattr(k, "value", str(k)): v
                             for k, v in (info.reward_breakdown or {}).items()},
    }
    if info.db_check is not None:
        out["db_match"] = info.db_check.db_match
    if info.action_checks:
        out["actions_matched"] = [bool(c.action_match) for c in info.action_checks]
    if info.env_assertions:
        out["env_assertions_met"] = [bool(c.met) for c in info.env_assertions]
    if info.communicate_checks:
        out["communicated"] = [bool(c.met) for c in info.communicate_checks]
    if info.info and isinstance(info.info, dict) and info.info.get("note"):
        out["note"] = str(info.info["note"])
    return out


def run_trial(
    suite: Tau2, domain: str, task: Any, provider: Provider, request: Request, seed: int,
    user: UserModel | None,
) -> tuple[list[Message], Scored]:
    """Play ``task`` once and score it (``user=None``: the gold user)."""
    from spade.eval.agent import encode_script, step_model_for
    from spade.eval.suites._tau2_roles import (
        ContextExhausted,
        FailedReply,
        make_agent,
        make_gold_user,
        make_user,
    )
    from spade.eval.suites.tau2 import dump_trajectory
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.orchestrator.orchestrator import Orchestrator
    from tau2.registry import registry

    extra = suite.protocol.extra
    env = registry.get_env_constructor(domain)()
    agent = make_agent(env.get_tools(), env.get_policy(), step_model_for(provider), request,
                       suite.protocol.sampling(seed), seed)
    try:
        user_tools = env.get_user_tools()
    except Exception:  # domains without user tools raise, as in tau2's own run_task
        user_tools = None
    participant = (make_gold_user(task) if user is None else
                   make_user(user_tools, str(task.user_scenario), user, seed))
    orch = Orchestrator(domain=domain, agent=agent, user=participant, environment=env,
                        task=task, max_steps=int(extra.get("max_steps", 200)),
                        max_errors=int(extra.get("max_errors", 10)), seed=None)
    try:
        simulation = orch.run()
    except ContextExhausted as exc:
        messages = dump_trajectory(orch.get_trajectory())
        details = {"domain": domain, "termination": "agent_context_exhausted",
                   "reward": 0.0, "note": str(exc),
                   "script": encode_script(agent.session.transcript)}
        return messages, Scored("agent_context_exhausted", 0.0, details)
    except FailedReply as exc:  # a failed trial, as tau2's runner scores one it skips
        messages = dump_trajectory(orch.get_trajectory())
        termination = f"{exc.role}_error"
        details = {"domain": domain, "termination": termination, "reward": 0.0,
                   "note": str(exc), "script": encode_script(agent.session.transcript)}
        return messages, Scored(termination, 0.0, details)
    info = evaluate_simulation(simulation=simulation, task=task,
                               evaluation_type=EvaluationType.ALL, solo_mode=False,
                               domain=domain)
    script = encode_script(agent.session.transcript)
    termination = simulation.termination_reason
    details = {"domain": domain, "termination": getattr(termination, "value", str(termination)),
               **_brief(info), "script": script}
    messages = dump_trajectory(simulation.messages)
    return messages, Scored(str(details["termination"]), float(info.reward), details)
