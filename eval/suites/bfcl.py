"""BFCL v4: function calling scored by bfcl-eval itself (in its own venv, see bfcl_worker).

Categories: non_live (simple_python, simple_java, simple_javascript, multiple, parallel,
parallel_multiple, irrelevance),
live (live_simple, live_multiple, live_parallel, live_parallel_multiple, live_irrelevance,
live_relevance) and multi_turn (base, miss_func, miss_param, long_context). web_search
needs the internet and the memory categories a hub embedding model: they are listed as
unavailable, never scored.

The model acts as the bfcl-eval function-calling (FC) handler of its family does, the
run's ``tool_format`` (recorded in the results with the handler's name):

- ``openai_fc`` (an ``openai:`` server's native tool calls; bfcl-eval's
  ``gpt-4o-2024-11-20-FC`` handler): tools compiled by bfcl-eval in the OpenAI style
  (``.`` in names becomes ``_``); a reply's calls are kept as the server sent them, and a
  call whose arguments are not a JSON object fails the whole reply, as bfcl-eval's decoder
  fails it. Held-out functions join the tool list with the FC prompt.
- ``qwen3_fc`` (text replies: ``hf:``, ``vllm:``, ``smollm2``, and replayed text;
  bfcl-eval's ``Qwen/Qwen3-8B-FC`` handler): the function docs shown as that handler shows
  them: as they are (dotted names kept), in its own system block (``# Tools`` ... ``<tools>``
  one ``json.dumps`` line per function ... the ``<tool_call>`` instruction; an entry's own
  system message first), never through the template's ``tools=``; a reply is
  what the handler keeps (the text after the last ``</think>``) read by its own decoder
  (``<tool_call>\n{json}\n</tool_call>`` with ``name`` and ``arguments``). Held-out
  functions come in the user message, as its prompting loop gives them. In multi-turn
  entries every step's prompt is that handler's own rendering of its own chat history,
  kept by the worker as its inference loop keeps it: each earlier reply as the handler
  keeps it (its decoded ``<tool_call>`` objects re-written, reasoning shown only within
  the current turn, the text after ``</think>`` when it found no call), execution results
  as ``<tool_response>`` blocks. Where its formatter fails on that history (a kept tool
  call without a ``name``, say), upstream's inference of the entry fails: the episode stops
  there and the item is scored as bfcl-eval scores an inference error.

``--suite-option``-style ``tool_format`` in the protocol's extras forces one (``auto``: by
provider as above). The project's lenient tool-call parser (for training) is never used
to score. One reply per single-turn entry (its calls are scored, not run); multi-turn
entries play turn by turn on bfcl-eval's executable backends, each reply read by the
handler as its inference loop reads it: a reply it cannot decode, or one without calls,
ends the turn with nothing executed (and nothing sent back); at most
``max_steps_per_turn`` calling steps per turn (upstream's limit: one more calling step
force-quits the entry). Each item's verdict is bfcl-eval's per-entry evaluation of the
result file that handler would have written (``details.bfcl_result``). Group scores and
Overall Acc are bfcl-eval's own leaderboard aggregation (``generate_leaderboard_csv``, run
in the worker on the per-category accuracies): non_live = unweighted mean of simple (itself
the mean of Python, Java and JavaScript), multiple, parallel, parallel_multiple; live =
count-weighted mean of its four AST categories; multi_turn = unweighted mean of its four;
irrelevance = unweighted mean of irrelevance and live_irrelevance; relevance =
live_relevance; overall = 10 % non_live + 10 % live + 10 % irrelevance + 30 % multi_turn +
40 % agentic (web_search and memory, not run offline: bfcl-eval counts a category it did not
evaluate as 0, so this Overall Acc is at most 60 %). A group is recorded only when all its
member categories were run (overall: every category this suite can run).
``--limit N`` takes the first N items of every category.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spade.eval.agent import (
    END_RENDER_FAILED,
    AgentSession,
    Decision,
    NoExecution,
    Reply,
    StepModel,
    encode_script,
    play_decided_turn,
    play_turn,
    step_model_for,
)
from spade.eval.data import DataDir, UnreadableData
from spade.eval.suites._base import Item, Loaded, Scored
from spade.eval.suites._episode import EpisodeSuite
from spade.eval.suites._registry import SUITES

from spade.errors import UserError
from spade.policy._types import Message
from spade.textfile import read_jsonl

if TYPE_CHECKING:
    from spade.eval.agent import Transcript
    from spade.eval.providers._base import Provider, Request
    from spade.eval.suites.bfcl_bridge import BfclBridge, BfclEpisode

NON_LIVE = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
            "parallel_multiple", "irrelevance")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
        "live_irrelevance", "live_relevance")
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
              "multi_turn_long_context")
CATEGORIES = (*NON_LIVE, *LIVE, *MULTI_TURN)
UNAVAILABLE = {
    "web_search": "needs the internet (live search results)",
    "memory": "memory_vector loads an embedding model from a hub; the memory categories "
              "are run as one set",
}
#: group -> (member categories, where bfcl-eval's leaderboard shows it: table, column)
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, str]]] = {
    "overall": (CATEGORIES, ("data_overall", "Overall Acc")),
    "non_live": (("simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
                  "parallel_multiple"), ("data_non_live", "Non-Live Overall Acc")),
    "simple": (("simple_python", "simple_java", "simple_javascript"),
               ("data_non_live", "Simple AST")),
    "live": (("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"),
             ("data_live", "Live Overall Acc")),
    "multi_turn": (MULTI_TURN, ("data_multi_turn", "Multi Turn Overall Acc")),
    "irrelevance": (("irrelevance", "live_irrelevance"), ("data_overall", "Irrelevance Detection")),
    "relevance": (("live_relevance",), ("data_overall", "Relevance Detection")),
}
#: categories of bfcl-eval's Overall Acc that are never run here (counted 0 upstream)
NOT_RUN_IN_OVERALL = ("web_search_base", "web_search_no_snippet", "memory_kv", "memory_vector",
                      "memory_rec_sum")
#: leaderboard columns that say nothing about this run (ranking, price, latency, vendor)
_BOARD_SKIP = ("Rank", "Model Link", "Total Cost ($)", "Latency Mean (s)",
               "Latency Standard Deviation (s)", "Latency 95th Percentile (s)",
               "Organization", "License", "Format Sensitivity Max Delta",
               "Format Sensitivity Standard Deviation")
NO_CALL_REPLY = "None of the available functions fits this request."
#: tool format -> the bfcl-eval handler (model) whose reading it is
TOOL_FORMATS = {"openai_fc": "gpt-4o-2024-11-20-FC", "qwen3_fc": "Qwen/Qwen3-8B-FC"}


def _jsonl(path: Any) -> list[dict[str, Any]]:
    try:
        return read_jsonl(path)
    except json.JSONDecodeError as exc:
        raise UnreadableData(path, f"line {exc.lineno}: not a BFCL record ({exc.msg}: "
                             f"column {exc.colno})") from None


def raw_step(text: str, raw_calls: Any) -> dict[str, Any]:
    """One reply as the worker reads it: its text and, for a native reply, the calls as
    the server sent them (``[[name, arguments string], ...]``)."""
    native = None if raw_calls is None else [[name, args] for _, name, args in raw_calls]
    return {"text": text, "native": native}


def raw_steps(transcript: Transcript) -> list[list[dict[str, Any]]]:
    return [[raw_step(s.text, s.raw_calls) for s in t.steps] for t in transcript.turns]


def tool_format(extra: Mapping[str, Any], model: StepModel) -> str:
    """The run's reading of replies: forced by ``tool_format``, else by the backend."""
    given = str(extra.get("tool_format") or "auto")
    if given != "auto":
        if given not in TOOL_FORMATS:
            raise UserError(f"bfcl_v4: unknown tool_format {given!r} (known: auto, "
                            f"{', '.join(TOOL_FORMATS)})")
        return given
    from spade.eval.agent._native import NativeStepModel

    return "openai_fc" if isinstance(model, NativeStepModel) else "qwen3_fc"


def group_scores(categories: Mapping[str, Any], board: Mapping[str, Mapping[str, Any]]
                 ) -> dict[str, Any]:
    """Group accuracies as bfcl-eval's leaderboard ``board`` shows them (see
    :meth:`BfclV4.leaderboard`); None where a member category was not run or the board
    shows N/A."""
    out: dict[str, Any] = {}
    for group, (members, (table, column)) in GROUPS.items():
        value = board.get(table, {}).get(column)
        ran = all(m in categories for m in members)
        out[group] = float(value) if ran and isinstance(value, int | float) else None
    return out


@SUITES.register("bfcl_v4")
class BfclV4(EpisodeSuite):
    def __init__(self, protocol: Any, seed: int) -> None:
        super().__init__(protocol, seed)
        self._bridge: BfclBridge | None = None
        self._hello: dict[str, Any] = {}
        self._prepared: dict[str, dict[str, Any]] = {}
        self._gold: dict[str, Any] = {}
        self._func_docs: str | None = None
        self._model: tuple[Provider, StepModel] | None = None
        self._format: str | None = None

    # -- configuration -----------------------------------------------------------------
    def categories(self) -> list[str]:
        wanted = list(self.protocol.extra.get("categories") or CATEGORIES)
        for cat in wanted:
            if cat in UNAVAILABLE or cat.startswith(("web_search", "memory")):
                key = "web_search" if cat.startswith("web_search") else "memory"
                raise UserError(f"bfcl_v4 category {cat!r} is unavailable offline: "
                                f"{UNAVAILABLE[key]}")
            if cat not in CATEGORIES:
                raise UserError(f"unknown bfcl_v4 category {cat!r} (known: "
                                f"{', '.join(CATEGORIES)})")
        return wanted

    @property
    def max_steps(self) -> int:
        return int(self.protocol.extra.get("max_steps_per_turn", 20))

    # -- data --------------------------------------------------------------------------
    def load(self, data: DataDir) -> Loaded:
        items: list[Item] = []
        files = []
        for cat in self.categories():
            path = data.require(f"bfcl_v4/BFCL_v4_{cat}.json")
            files.append(path)
            entries = _jsonl(path)
            truths: list[Any] = [None] * len(entries)
            if "relevance" not in cat:
                gpath = data.require(f"bfcl_v4/possible_answer/BFCL_v4_{cat}.json")
                files.append(gpath)
                answers = _jsonl(gpath)
                if len(answers) != len(entries):
                    raise UserError(f"{gpath}: {len(answers)} answers for {len(entries)} "
                                    "entries")
                truths = [a["ground_truth"] for a in answers]  # aligned by position
            items.extend(Item(e["id"], {"category": cat, "entry": e, "ground_truth": t},
                              group=cat) for e, t in zip(entries, truths, strict=True))
        if any(c in MULTI_TURN for c in self.categories()):
            docs = data.path("bfcl_v4/multi_turn_func_doc")
            if not docs.is_dir():
                data.require("bfcl_v4/multi_turn_func_doc/gorilla_file_system.json")
            files.extend(sorted(docs.glob("*.json")))
            self._func_docs = str(docs)
        notes = {"unavailable": UNAVAILABLE, "limit_mode": "per_category",
                 "categories": self.categories()}
        return Loaded(items, files, notes)

    def select(self, items: list[Item]) -> list[Item]:
        limit = self.protocol.limit
        if limit is None:
            return items
        seen: dict[str | None, int] = {}
        out = []
        for item in items:
            seen[item.group] = seen.get(item.group, 0) + 1
            if seen[item.group] <= limit:
                out.append(item)
        return out

    # -- the worker --------------------------------------------------------------------
    def bridge(self) -> BfclBridge:
        if self._bridge is None:
            from spade.eval.suites.bfcl_bridge import BfclBridge

            self._bridge = BfclBridge()
            self._hello = dict(self._bridge.hello)
            if int(self._hello["max_step_limit"]) != self.max_steps:
                raise UserError(f"max_steps_per_turn {self.max_steps} differs from "
                                f"bfcl-eval's limit {self._hello['max_step_limit']}")
        return self._bridge

    def close(self) -> None:
        if self._bridge is not None:
            self._bridge.close()
            self._bridge = None

    def prepared(self, item: Item) -> dict[str, Any]:
        if item.key not in self._prepared:
            self._prepared[item.key] = self.bridge().request(
                "prepare", entry=item.data["entry"], func_doc_dir=self._func_docs or "")
        return self._prepared[item.key]

    # -- episodes ----------------------------------------------------------------------
    def messages(self, item: Item, sample: int) -> list[Message]:
        """The opening the model sees: the tool schemas and the first turn."""
        p = self.prepared(item)
        tools = json.dumps(p["tools"], sort_keys=True, ensure_ascii=False)
        return [{"role": "tools", "content": tools}, *p["question"][0]]

    def _step_model(self, provider: Provider) -> StepModel:
        if self._model is None or self._model[0] is not provider:
            self._model = (provider, step_model_for(provider))
        return self._model[1]

    def play(self, requests: Sequence[Request], provider: Provider) -> list[tuple[str, Scored]]:
        if not requests:
            return []
        model = self._step_model(provider)
        fmt = tool_format(self.protocol.extra, model)
        if self._format not in (None, fmt):
            raise UserError(f"bfcl_v4: one run reads replies one way ({self._format}), "
                            f"not also {fmt}")
        self._format = fmt
        params = requests[0].params
        sessions: list[AgentSession] = []
        episodes: list[BfclEpisode | None] = []
        try:
            for r in requests:
                multi = r.item.data["category"] in MULTI_TURN
                ep = self.bridge().new_episode(
                    r.item.data["entry"], fmt, self.prepared(r.item)["functions"]
                ) if multi else None
                episodes.append(ep)
                sessions.append(self.session(r, fmt, ep))
            single = [s for s, e in zip(sessions, episodes, strict=True) if e is None]
            for s in single:
                assert s.request is not None
                s.begin_turn(self.prepared(s.request.item)["question"][0])
            play_turn(single, model, params, single_step=True)
            multi_sessions = [(s, e) for s, e in zip(sessions, episodes, strict=True) if e]
            self._play_multi(multi_sessions, model, params, fmt)
        finally:
            for ep in episodes:
                if ep is not None and self._bridge is not None:
                    ep.close()
        return self._score(requests, sessions, fmt)

    def session(self, request: Request, fmt: str, episode: BfclEpisode | None
                ) -> AgentSession:
        """A request's session, its tools shown as the format's handler shows them:
        compiled OpenAI tools (``openai_fc``), or the raw docs in the Qwen3 FC handler's own
        system block (``qwen3_fc``; a multi-turn episode's every prompt is the handler's
        rendering of its own history, see the module docstring)."""
        qwen = fmt == "qwen3_fc"
        return AgentSession(env=episode or NoExecution(),
                            tools=list(self.prepared(request.item)["functions" if qwen
                                                                   else "tools"]),
                            seed=int(request.params.seed or 0), request=request,
                            tools_as_block=qwen,
                            render_prompt=episode.prompt if qwen and episode else None)

    def _held_out_turn(self, p: Mapping[str, Any], t: int, fmt: str
                       ) -> tuple[list[Message], list[dict[str, Any]]]:
        """A held-out turn's user message and the tools that join, as the handler's own
        loop gives them: the FC loop adds the compiled tools with its FC prompt, the
        prompting loop (Qwen3 FC) names the function docs in the user message."""
        if fmt == "openai_fc":
            return ([{"role": "user", "content": self._hello["additional_function_prompt"]}],
                    list(p["held_out"][str(t)]))
        text = self._hello["additional_function_prompt_prompting"].format(
            functions=p["held_out_docs"][str(t)])
        return [{"role": "user", "content": text}], []

    def _play_multi(self, pairs: list[tuple[AgentSession, BfclEpisode]], model: StepModel,
                    params: Any, fmt: str) -> None:
        turns = {id(s): self.prepared(s.request.item)  # type: ignore[union-attr]
                 for s, _ in pairs}
        episode = {id(s): e for s, e in pairs}

        def decide(session: AgentSession, reply: Reply) -> Decision:
            got = self.bridge().request("act", episode=episode[id(session)].key,
                                        tool_format=fmt,
                                        step=raw_step(reply.text, reply.raw_calls))
            calls = tuple((c["name"], dict(c["arguments"])) for c in got["calls"])
            return Decision(calls, tuple(got["results"]), got["end"])

        n_turns = max((len(turns[id(s)]["question"]) for s, _ in pairs), default=0)
        for t in range(n_turns):
            live = []
            for s, _ in pairs:
                p = turns[id(s)]
                if s.stopped or t >= len(p["question"]):
                    continue
                user: list[Message] = p["question"][t]
                added: list[dict[str, Any]] = []
                if str(t) in p["held_out"]:
                    user, added = self._held_out_turn(p, t, fmt)
                s.begin_turn(user, add_tools=added)
                if fmt == "qwen3_fc":
                    episode[id(s)].begin_turn(user)
                live.append(s)
            play_decided_turn(live, model, params, decide, max_steps=self.max_steps)

    def _score(self, requests: Sequence[Request], sessions: Sequence[AgentSession], fmt: str
               ) -> list[tuple[str, Scored]]:
        verdicts = self.bridge().request("score", items=[
            {"category": r.item.data["category"], "entry": r.item.data["entry"],
             "ground_truth": r.item.data["ground_truth"], "tool_format": fmt,
             "steps": raw_steps(s.transcript),
             "inference_error": next((t.error for t in s.transcript.turns
                                      if t.end == END_RENDER_FAILED), None)}
            for r, s in zip(requests, sessions, strict=True)])
        out = []
        for r, s, v in zip(requests, sessions, verdicts, strict=True):
            res = v["result"]
            details = {"category": r.item.data["category"], "valid": v["valid"],
                       "tool_format": fmt,
                       "error_type": v["error_type"], "error": v["error"],
                       "turn_ends": [t.end for t in s.transcript.turns],
                       "bfcl_result": res, "transcript": s.transcript.to_dict()}
            extracted = json.dumps(res, ensure_ascii=False)[:2000] if isinstance(res, list) \
                else None
            out.append((encode_script(s.transcript),
                        Scored(extracted, 1.0 if v["valid"] else 0.0, details)))
        return out

    # -- oracle --------------------------------------------------------------------------
    def oracle(self, item: Item, sample: int) -> str:
        """The gold calls as an episode script (first tool with no arguments for
        live_relevance, a plain reply for irrelevance)."""
        cat = item.data["category"]
        if "irrelevance" in cat:
            return json.dumps({"turns": [[NO_CALL_REPLY]]})
        if cat == "live_relevance":
            first = self.prepared(item)["tools"][0]["function"]["name"]
            calls: Any = [{"name": first, "arguments": {}}]
            return json.dumps({"turns": [[{"content": "", "tool_calls": calls}]]})
        if item.key not in self._gold:
            self._gold[item.key] = self.bridge().request(
                "gold", category=cat, entry=item.data["entry"],
                ground_truth=item.data["ground_truth"])
        gold = self._gold[item.key]
        if cat not in MULTI_TURN:
            return json.dumps({"turns": [[{"content": "", "tool_calls": gold}]]})
        turns = [[{"content": "", "tool_calls": t}] if t else [] for t in gold]
        return json.dumps({"turns": turns})

    # -- results -------------------------------------------------------------------------
    def observe(self, record: Mapping[str, Any]) -> None:
        """A resumed run's reading of replies, from its records (for the leaderboard)."""
        fmt = (record.get("details") or {}).get("tool_format")
        if self._format is None and fmt in TOOL_FORMATS:
            self._format = str(fmt)

    def leaderboard(self, categories: Mapping[str, Mapping[str, Any]]
                    ) -> dict[str, dict[str, Any]]:
        """bfcl-eval's leaderboard tables for these per-category accuracies, computed by its
        own ``generate_leaderboard_csv`` in the worker (model: the run's handler)."""
        counts = {c: {"accuracy": v["accuracy"], "total_count": v["n"]}
                  for c, v in categories.items()}
        try:
            tables = self.bridge().request("leaderboard", categories=counts,
                                           tool_format=self._format or "qwen3_fc")
        finally:
            self.close()
        return {name: {k: v for k, v in row.items() if k not in _BOARD_SKIP}
                for name, row in tables.items() if name != "data_format_sensitivity"}

    def rollup(self, item_scores: Mapping[str, float], items: Sequence[Item]) -> dict[str, Any]:
        from spade.eval.suites.bfcl_venv import BFCL_EVAL_VERSION

        by_cat: dict[str, list[float]] = {}
        for item in items:
            if item.key in item_scores:
                by_cat.setdefault(str(item.group), []).append(item_scores[item.key])
        cats = {c: {"accuracy": sum(v) / len(v), "n": len(v)} for c, v in by_cat.items()}
        board = self.leaderboard(cats) if cats else {}
        return {
            "categories": cats,
            "groups": group_scores(cats, board),
            "leaderboard": {"implementation": "bfcl-eval generate_leaderboard_csv",
                            "model": TOOL_FORMATS[self._format or "qwen3_fc"],
                            "not_run_counted_zero": list(NOT_RUN_IN_OVERALL),
                            "tables": board},
            "unavailable": dict(UNAVAILABLE),
            **({"tool_format": {"format": self._format, "text_handler":
                                TOOL_FORMATS[self._format],
                                "native_handler": TOOL_FORMATS["openai_fc"]}}
               if self._format else {}),
            "scorer": {"implementation": "bfcl-eval", "version": BFCL_EVAL_VERSION,
                       "checker_model_config": self._hello.get("checker_model"),
                       "worker_python": self._hello.get("python"),
                       "worker_numpy": self._hello.get("numpy")},
        }
