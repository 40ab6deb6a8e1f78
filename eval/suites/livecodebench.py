"""LiveCodeBench code generation: last fenced code block, graded in the sandbox.

By default the shared public-test subset is used; its results are labelled not
comparable (the official benchmark grades on private tests). Point the suite at official
``code_generation_lite`` release files with ``--lcb-files PATH`` (a ``test*.jsonl`` file or
a folder of them) to grade on public + private tests. The oracle is unavailable: neither
format ships reference solutions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spade.eval.data import DataDir, MissingData
from spade.eval.suites._base import Item, Loaded, OracleUnavailable, Scored, SingleTurnSuite, render
from spade.eval.suites._extract import last_code_block
from spade.eval.suites._lcb_data import load_official, load_public
from spade.eval.suites._lcb_exec import grade, make_sandbox
from spade.eval.suites._registry import SUITES

from spade.policy._types import Message

PUBLIC_FILE = "livecodebench_public/lcb_public_tests_879.json"


@SUITES.register("livecodebench")
class LiveCodeBench(SingleTurnSuite):
    templates = ("lcb_system.txt", "lcb_functional.txt", "lcb_stdin.txt")
    _sandbox: Any = None
    _official_files = False  # True once official release files (private tests) are loaded

    def load(self, data: DataDir) -> Loaded:
        given = self.protocol.extra.get("lcb_files")
        if given:
            root = Path(given).expanduser()
            files = sorted(root.glob("test*.jsonl")) if root.is_dir() else [root]
            if not files or not all(f.is_file() for f in files):
                raise MissingData(root, "official LiveCodeBench test*.jsonl files")
            self._official_files = True
            return Loaded(load_official(files), files)
        path = data.require(PUBLIC_FILE)
        return Loaded(load_public(path), [path], {"subset": "public tests only"})

    def messages(self, item: Item, sample: int) -> list[Message]:
        starter = item.data["starter_code"]
        if starter:
            user = render("lcb_functional.txt", question=item.data["question"],
                          starter_code=starter)
        else:
            user = render("lcb_stdin.txt", question=item.data["question"])
        return [
            {"role": "system", "content": render("lcb_system.txt").strip()},
            {"role": "user", "content": user},
        ]

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        code = last_code_block(completion)
        if code is None:
            return Scored(None, 0.0, {"reason": "no_code_block"})
        if self._sandbox is None:
            self._sandbox = make_sandbox(self._per_test())
        verdict = grade(self._sandbox, code, item.data["tests"], item.data["func_name"],
                        self._per_test())
        return Scored(code, 1.0 if verdict.passed else 0.0, verdict.as_details())

    def comparable(self) -> bool:
        return self._official_files and self.protocol.name == "paper"

    def _per_test(self) -> float:
        return float(self.protocol.extra.get("per_test_timeout_s", 6.0))

    def oracle(self, item: Item, sample: int) -> str:
        raise OracleUnavailable(
            "livecodebench: the oracle needs reference solutions, which neither the public "
            "subset nor the official release files contain"
        )

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
