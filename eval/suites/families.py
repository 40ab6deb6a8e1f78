"""``families``: held-out instances of SPADE's starter environment families, played by the
agent exactly as training plays them.

An item is one family module and one held-out reset seed (``spade.families``: seeds in
``[2**31, 2**32)``, which no training draw reaches), the families in turn so that any
``--limit`` covers them evenly. Each episode runs through the training path itself: the
module in the sandbox, the agent's system prompt and turns (``spade.episodes.run_episodes``,
``max_turns`` from the protocol, 2 as the CPU recipe's agent), one batched generation per
turn step. The score is the environment's own verdict: 1 when the episode's return reaches
the module's success threshold, else 0. A bundled module that faults is an error, never a
zero: nothing is scored that was not played.

The model must be a local one the episode runner can drive token by token (``smollm2``,
``hf:``; its provider's policy); keyed providers (``replay``, ``oracle``) and remote APIs
cannot play it. The completion kept per sample is the episode's replies as JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade.eval.suites._base import Item, Loaded, Scored
from spade.eval.suites._episode import EpisodeSuite
from spade.eval.suites._registry import SUITES

from spade.errors import UserError
from spade.policy._types import Message

if TYPE_CHECKING:
    from spade.eval.data import DataDir
    from spade.eval.providers._base import Provider, Request

    from spade.sandbox import Sandbox

#: items generated when no ``--limit`` is given: four held-out seeds per module
PLAYS_PER_MODULE = 4


def _library_files() -> list[Path]:
    from spade.families._registry import PACKAGE, list_families

    root = resources.files(PACKAGE)
    names = ["families.yaml", *(f"templates/{f.name}.py.tmpl" for f in list_families())]
    return [Path(str(root.joinpath(n))) for n in names]


@SUITES.register("families")
class Families(EpisodeSuite):
    official = False  # SPADE's own slice: no published numbers to compare with

    def load(self, data: DataDir) -> Loaded:
        from spade.families import all_instances, families_version, heldout_plays

        names = tuple(str(n) for n in self.protocol.extra.get("families") or ())
        count = self.protocol.limit or PLAYS_PER_MODULE * len(all_instances(names))
        self._sources: dict[str, str] = {}
        items = []
        for play in heldout_plays(count, names):
            inst = play.instance
            self._sources[inst.name] = inst.source
            sha = hashlib.sha256(inst.source.encode("utf-8")).hexdigest()
            items.append(Item(play.id, {"module": inst.name, "seed": play.seed,
                                        "source_sha256": sha}, group=inst.family))
        notes = {"families_version": families_version(),
                 "seed_split": "held-out reset seeds in [2**31, 2**32); training draws "
                               "31-bit seeds, below 2**31"}
        return Loaded(items, _library_files(), notes)

    def select(self, items: list[Item]) -> list[Item]:
        return items  # load generated exactly the slice

    def template_text(self) -> str:
        from spade.episodes import system_prompt

        return system_prompt("game")

    def messages(self, item: Item, sample: int) -> list[Message]:
        """The opening as far as it is known before the sandbox runs (hashed for resume):
        the agent's system prompt and which module and seed the observation comes from."""
        d = item.data
        return [{"role": "system", "content": self.template_text()},
                {"role": "user", "content": f"families {d['module']} (source sha256 "
                                            f"{d['source_sha256']}) reset seed {d['seed']}"}]

    def _sandbox(self) -> Sandbox:
        if getattr(self, "_box", None) is None:
            from spade.sandbox import Sandbox

            self._box: Sandbox | None = Sandbox(str(self.protocol.extra.get("isolation",
                                                                            "bwrap")))
        assert self._box is not None
        return self._box

    def play(self, requests: Sequence[Request], provider: Provider) -> list[tuple[str, Scored]]:
        """One batched run of the training episode runner over the chunk's requests."""
        from spade.cycle._pool import HandlePool
        from spade.episodes import EpisodeConfig, EpisodeJob, run_episodes
        from spade.policy import TokenPolicy
        from spade.seeds import derive_seed

        policy = getattr(provider, "policy", None)
        if not isinstance(policy, TokenPolicy):
            raise UserError(f"{self.id}: the agent's episodes need a local model driven "
                            f"token by token (smollm2, hf:); {provider.spec} cannot play them")
        if not requests:
            return []
        jobs = [EpisodeJob(r.item.data["module"], int(r.item.data["seed"]), None,
                           sample=r.sample) for r in requests]
        # one base seed; the runner derives each turn's from it, the module, seed and sample
        params = self.protocol.sampling(derive_seed(self.seed, self.id))
        config = EpisodeConfig(max_turns=int(self.protocol.extra.get("max_turns", 2)),
                               max_active=len(jobs))
        sources = {j.env_id: self._sources[j.env_id] for j in jobs}
        with HandlePool(self._sandbox(), sources) as pool:
            trajectories = run_episodes(policy, jobs, pool, params, config)
        out = []
        for job, tr in zip(jobs, trajectories, strict=True):
            if tr.env_fault:
                raise UserError(f"{self.id}: module {job.env_id} faulted on seed {job.seed} "
                                f"({tr.env_fault[:200]}); a bundled module must not fault, "
                                "and a faulted play is not scored")
            replies = [t.reply for t in tr.turns]
            details: dict[str, Any] = {"return": tr.total_return, "turns": tr.num_turns,
                                       "stop_reason": str(tr.stop_reason),
                                       "observation": tr.reset_observation[:500]}
            last = tr.turns[-1].action if tr.turns else None
            out.append((json.dumps({"replies": replies}, ensure_ascii=False),
                        Scored(last, 1.0 if tr.won else 0.0, details)))
        return out

    def rollup(self, item_scores: Mapping[str, float], items: Sequence[Item]) -> dict[str, Any]:
        """Per family: mean score and items."""
        per: dict[str, list[float]] = {}
        for it in items:
            if it.key in item_scores:
                per.setdefault(str(it.group), []).append(item_scores[it.key])
        return {"per_family": {f: {"score": sum(v) / len(v), "n_items": len(v)}
                               for f, v in sorted(per.items())}}

    def close(self) -> None:
        box = getattr(self, "_box", None)
        if box is not None:
            box.close()
            self._box = None
