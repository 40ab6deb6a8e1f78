"""The battery end to end in a real sandbox: one minimal env per failure, and valid ones."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from spade.envs.examples import ExampleEnv, list_examples
from spade.sandbox import Sandbox
from spade.validate import Stage, ValidationConfig, Verdict, validate_env

ADD = """
from spade.envs import TextEnv

class AddEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
"""
STEP_RETURN = 'return ("Correct." if ok else "Wrong."), float(ok), True, False, {}'


#: Base seed of these tests' validations (production draws a secret one per validation).
SEED = 1_234_567


def check(sandbox: Sandbox, source: str, hint: str | None = None, **cfg: object) -> Verdict:
    cfg.setdefault("seed", SEED)
    verdict = validate_env(source, hint=hint, sandbox=sandbox, config=ValidationConfig(**cfg))  # type: ignore[arg-type]
    json.dumps(verdict.to_json())  # every verdict must serialise
    return verdict


#: A verdict that took longer than this hung: the budget did not stop it. Far above any
#: budget these tests set, so a loaded host cannot reach it.
HANG_S = 60.0


def invalid_at(verdict: Verdict, stage: Stage) -> str:
    assert not verdict.valid, verdict
    assert verdict.stage == stage, (verdict.stage, verdict.reason)
    assert verdict.checks[-1].stage == stage and not verdict.checks[-1].passed
    return verdict.reason


def test_minimal_valid_game(fast_sandbox: Sandbox) -> None:
    verdict = check(fast_sandbox, ADD)
    assert verdict.valid, verdict.reason
    assert verdict.stage == Stage.DONE
    assert [c.stage for c in verdict.checks] == [
        s for s in Stage if s not in (Stage.SAFETY, Stage.DONE)
    ]
    assert all(c.passed for c in verdict.checks)
    assert (verdict.class_name, verdict.kind) == ("AddEnv", "game")


def test_verdict_json_shape(fast_sandbox: Sandbox) -> None:
    data = check(fast_sandbox, ADD.replace("float(ok), True", "float(ok), 1")).to_json()
    assert data["valid"] is False and data["stage"] == "types"
    assert isinstance(data["reason"], str) and data["reason"]
    assert {"stage", "passed", "reason", "seconds", "details"} <= set(data["checks"][0])
    assert data["checks"][0]["stage"] == "source"
    assert isinstance(data["seconds"], float)


def test_syntax_error_is_a_source_failure(fast_sandbox: Sandbox) -> None:
    reason = invalid_at(
        check(fast_sandbox, ADD.replace("def step(self, action):", "def step(self action):")),
        Stage.SOURCE,
    )
    assert reason == "syntax error at line 13: invalid syntax"


def test_global_seeding_is_a_source_failure(fast_sandbox: Sandbox) -> None:
    source = ADD.replace(
        "super().reset(seed=seed)", "super().reset(seed=seed)\n        r.seed(seed)"
    )
    reason = invalid_at(check(fast_sandbox, "import random as r\n" + source), Stage.SOURCE)
    assert "random.seed" in reason


def test_import_error_is_a_load_failure(fast_sandbox: Sandbox) -> None:
    reason = invalid_at(check(fast_sandbox, "import no_such_module_xyz\n" + ADD), Stage.LOAD)
    assert "no_such_module_xyz" in reason
    needs_args = ADD.replace(
        "max_turns = 1", "max_turns = 1\n    def __init__(self, size):\n        self.size = size"
    )
    invalid_at(check(fast_sandbox, needs_args), Stage.LOAD)


@pytest.mark.parametrize(
    ("replacement", "fragment"),
    [
        ('return ("Correct." if ok else "Wrong."), float(ok), 1, False, {}', "terminated = 1"),
        ('return ("Correct." if ok else "Wrong."), float(ok), True, "no", {}', "truncated = 'no'"),
        ('return ("Correct." if ok else "Wrong."), True, float(ok), False, {}', "swapped"),
        ('return ("Correct." if ok else "Wrong."), float(ok), True, False', "5-tuple"),
        ('return ("Correct." if ok else "Wrong."), float(ok), True, False, []', "info"),
        ("return 7, float(ok), True, False, {}", "observation of type int"),
    ],
)
def test_step_type_rules(fast_sandbox: Sandbox, replacement: str, fragment: str) -> None:
    reason = invalid_at(check(fast_sandbox, ADD.replace(STEP_RETURN, replacement)), Stage.TYPES)
    assert fragment in reason


def test_reset_must_return_a_tuple(fast_sandbox: Sandbox) -> None:
    source = ADD.replace(
        'return f"What is {self.a} + {self.b}?", {}', 'return f"What is {self.a} + {self.b}?"'
    )
    assert "tuple" in invalid_at(check(fast_sandbox, source), Stage.TYPES)
    source = ADD.replace('return f"What is {self.a} + {self.b}?", {}', 'return [f"{self.a}", {}]')
    assert "list" in invalid_at(check(fast_sandbox, source), Stage.TYPES)


def test_numpy_rewards_and_bool_flags_and_odd_info_are_accepted(fast_sandbox: Sandbox) -> None:
    source = "import numpy as np\n" + ADD.replace(
        STEP_RETURN,
        'return "Done.", np.float32(ok), np.bool_(True), np.bool_(False), '
        '{"when": object(), "tags": {"a", "b"}, "n": np.int64(3), "arr": np.arange(3)}',
    )
    verdict = check(fast_sandbox, source)
    assert verdict.valid, verdict.reason


def test_nan_and_out_of_range_rewards(fast_sandbox: Sandbox) -> None:
    nan = ADD.replace(STEP_RETURN, 'return "x", float("nan"), True, False, {}')
    assert "non-finite" in invalid_at(check(fast_sandbox, nan), Stage.REWARDS)
    big = ADD.replace(STEP_RETURN, 'return "x", 2.0 if ok else 0.5, True, False, {}')
    assert "outside [0, 1]" in invalid_at(check(fast_sandbox, big), Stage.REWARDS)
    negative_ok = ADD.replace(STEP_RETURN, 'return "x", 1.0 if ok else -0.5, True, False, {}')
    assert check(fast_sandbox, negative_ok, return_range=(-1.0, 1.0)).valid


SET_ORDER = """
from spade.envs import TextEnv

ANIMALS = {"otter", "badger", "heron", "walrus", "lynx", "gecko", "bison", "ibis", "yak", "newt",
           "crane", "moose", "okapi", "tapir", "koala", "lemur"}

class AnimalEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        names = list(ANIMALS)
        self.target = names[self.rng.randrange(len(names))]
        letters = list(self.target)
        self.rng.shuffle(letters)
        return "Unscramble: " + "".join(letters), {}

    def step(self, action):
        ok = action.strip().lower() == self.target
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [self.target]
"""


@pytest.mark.bwrap
def test_set_iteration_order_fails_determinism_across_hash_seeds(bwrap_sandbox: Sandbox) -> None:
    reason = invalid_at(check(bwrap_sandbox, SET_ORDER), Stage.DETERMINISM)
    assert "different hash seed" in reason
    fixed = SET_ORDER.replace("list(ANIMALS)", "sorted(ANIMALS)")
    verdict = check(bwrap_sandbox, fixed)
    assert verdict.valid, verdict.reason


def test_clock_dependence_fails_determinism(fast_sandbox: Sandbox) -> None:
    source = "import time\n" + ADD.replace(
        "self.b = self.rng.randint(100, 999)", "self.b = 100 + time.perf_counter_ns() % 900"
    )
    invalid_at(check(fast_sandbox, source), Stage.DETERMINISM)


def test_ignoring_the_seed_fails_variety(fast_sandbox: Sandbox) -> None:
    source = ADD.replace("super().reset(seed=seed)", "super().reset(seed=0)")
    reason = invalid_at(check(fast_sandbox, source), Stage.VARIETY)
    assert "1 distinct instance(s) over 8 seeds" in reason


def test_a_few_collisions_are_tolerated(fast_sandbox: Sandbox) -> None:
    source = ADD.replace(
        "self.a = self.rng.randint(100, 999)", "self.a = self.rng.randint(100, 111)"
    )
    source = source.replace("self.b = self.rng.randint(100, 999)", "self.b = 1000")
    verdict = check(fast_sandbox, source)
    assert verdict.valid, verdict.reason
    variety = next(c for c in verdict.checks if c.stage == Stage.VARIETY)
    assert 4 <= variety.details["distinct"] < 8  # collisions among the 8 instance seeds
    assert variety.details["instances_counted"] >= 8  # but the space is big enough


def test_a_tiny_instance_space_is_weak(fast_sandbox: Sandbox) -> None:
    """Five instances: collisions among the instance seeds, then a count over 32 seeds."""
    source = ADD.replace(
        "self.a = self.rng.randint(100, 999)", "self.a = self.rng.randint(100, 104)"
    )
    source = source.replace("self.b = self.rng.randint(100, 999)", "self.b = 1000")
    reason = invalid_at(check(fast_sandbox, source), Stage.VARIETY)
    # which rule fires first depends on how the seeds collide (5 instances either way)
    assert "too few distinct instances: 5 over 32 seeds" in reason or (
        "distinct instance(s) over 8 seeds" in reason), reason


def test_the_same_solution_behind_every_seed_is_weak(fast_sandbox: Sandbox) -> None:
    reason = invalid_at(check(fast_sandbox, CONSTANT_ANSWER), Stage.VARIETY)
    assert "every seed has the same solution ['4217']" in reason


HIDDEN = """
from spade.envs import TextEnv

class GuessEnv(TextEnv):
    max_turns = 7

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.secret = self.rng.randint(1, 100)
        self.left = self.max_turns
        return "I am thinking of a number from 1 to 100; I say higher or lower.", {}

    def step(self, action):
        self.left -= 1
        guess = int(action) if action.strip().isdigit() else -1
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        word = "Higher." if guess < self.secret else "Lower."
        return word, 0.0, self.left <= 0, False, {}
"""


def test_hidden_instances_are_told_apart_by_probe_trajectories(fast_sandbox: Sandbox) -> None:
    """Same opening text for every seed and no solution(): play reveals the instances."""
    verdict = check(fast_sandbox, HIDDEN)
    assert verdict.valid, verdict.reason
    variety = next(c for c in verdict.checks if c.stage == Stage.VARIETY)
    assert "probe trajectories" in variety.details["compared"]
    same = HIDDEN.replace("super().reset(seed=seed)", "super().reset(seed=7)")
    reason = invalid_at(check(fast_sandbox, same), Stage.VARIETY)
    assert "1 distinct instance(s) over 8 seeds" in reason and "probe trajectories" in reason


QUIZ = """
from spade.envs import TextEnv

class QuizEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(100, 999)
        self.letter = self.rng.choice("ABCD")
        wrong = [self.n + d for d in (1, 2, 3)]
        options = wrong[: "ABCD".index(self.letter)] + [self.n] + wrong["ABCD".index(self.letter):]
        lines = " ".join(f"{l}) {v * 7}" for l, v in zip("ABCD", options))
        return f"Which of these is 7 * {self.n}? {lines}. Answer with the letter.", {}

    def step(self, action):
        ok = action.strip().upper() == self.letter
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [self.letter]
"""


def test_too_easy_judges_rates_over_enough_episodes(fast_sandbox: Sandbox) -> None:
    verdict = check(fast_sandbox, QUIZ)  # 25% by chance: not too easy
    assert verdict.valid, verdict.reason
    too_easy = next(c for c in verdict.checks if c.stage == Stage.TOO_EASY)
    for won_played in too_easy.details["wins_per_policy"].values():
        won, played = map(int, won_played.split("/"))
        assert won == 0 or played >= 8  # every policy that ever won was topped up
    # a fixed answer is caught (the same solution behind every seed)
    fixed = QUIZ.replace('self.letter = self.rng.choice("ABCD")', 'self.letter = "1"').replace(
        '"ABCD".index(self.letter)', "1"
    )
    reason = invalid_at(check(fast_sandbox, fixed), Stage.VARIETY)
    assert "same solution" in reason


def test_constant_answers_the_probes_never_type_are_caught(fast_sandbox: Sandbox) -> None:
    """"Yes" wins 70% (varied questions, varied solutions): a case variant no trivial
    policy types, judged over fresh seeds."""
    source = ADD.replace(
        'return f"What is {self.a} + {self.b}?", {}',
        'self.yes = self.a % 10 < 7\n        return f"Is {self.a} + {self.b} even?", {}',
    ).replace("ok = action.strip() == str(self.a + self.b)",
              "ok = action.strip() == ('Yes' if self.yes else f'No {self.a}')").replace(
        "return [str(self.a + self.b)]", "return ['Yes' if self.yes else f'No {self.a}']")
    reason = invalid_at(check(fast_sandbox, source), Stage.TOO_EASY)
    assert "('Yes') wins" in reason or "'Yes' wins" in reason


LOOP = """
from spade.envs import TextEnv

class LoopEnv(TextEnv):
    max_turns = 6

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 10**6)
        return f"Room {self.n}. Where next?", {}

    def step(self, action):
        return "You are still in the maze.", 0.0, False, False, {}
"""


def test_never_ending_episodes_fail_termination(fast_sandbox: Sandbox) -> None:
    # (was: any probe episode reaching max_turns unended failed; now the runner's cap
    # truncating an episode is fine, but an env that never ends any episode is not)
    reason = invalid_at(check(fast_sandbox, LOOP), Stage.TERMINATION)
    assert "no episode ever ended" in reason and "max_turns = 6" in reason
    truncating = LOOP.replace(
        'return "You are still in the maze.", 0.0, False, False, {}',
        "self.t = getattr(self, 't', 0) + 1\n"
        "        return 'Still here.', 0.0, False, self.t >= self.max_turns, {}",
    ).replace("super().reset(seed=seed)", "super().reset(seed=seed)\n        self.t = 0")
    verdict = check(fast_sandbox, truncating)
    assert verdict.valid, verdict.reason
    huge = truncating.replace("max_turns = 6", "max_turns = 5000")
    assert "exceeds the cap" in invalid_at(check(fast_sandbox, huge), Stage.TERMINATION)


RUNNER_CAP = """
from spade.envs import TextEnv

class HigherLowerEnv(TextEnv):
    max_turns = 8

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.secret = self.rng.randint(1, 1000)
        return "Guess my number between 1 and 1000.", {}

    def step(self, action):
        guess = int(action) if action.strip().isdigit() else -1
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        return ("Higher." if guess < self.secret else "Lower."), 0.0, False, False, {}
"""


def test_runner_cap_truncation_is_valid_when_the_env_can_end(fast_sandbox: Sandbox) -> None:
    """The runner truncates at max_turns; the env may end itself only on a win."""
    solution = (
        "\n    def solution(self):\n"
        "        lo, hi, out = 1, 1000, []\n"
        "        while True:\n"
        "            mid = (lo + hi) // 2\n"
        "            out.append(str(mid))\n"
        "            if mid == self.secret:\n"
        "                return out\n"
        "            lo, hi = (mid + 1, hi) if mid < self.secret else (lo, mid - 1)\n"
    )
    source = RUNNER_CAP.replace("max_turns = 8", "max_turns = 12") + solution
    verdict = check(fast_sandbox, source)
    assert verdict.valid, verdict.reason
    termination = next(c for c in verdict.checks if c.stage == Stage.TERMINATION)
    assert termination.details["truncated_by_runner"] > 0
    # without solution() and with no probe ever winning, nothing shows the game can end
    reason = invalid_at(check(fast_sandbox, RUNNER_CAP), Stage.TERMINATION)
    assert "no solution()" in reason


def test_answer_in_observation_is_a_leak(fast_sandbox: Sandbox) -> None:
    source = ADD.replace(
        'return f"What is {self.a} + {self.b}?", {}',
        'return f"What is {self.a} + {self.b}? (psst: it is {self.a + self.b})", {}',
    )
    reason = invalid_at(check(fast_sandbox, source), Stage.ANSWER_LEAK)
    assert "gives away the answer" in reason


def test_always_winning_env_is_too_easy(fast_sandbox: Sandbox) -> None:
    source = ADD.replace("ok = action.strip() == str(self.a + self.b)", "ok = True")
    reason = invalid_at(check(fast_sandbox, source), Stage.TOO_EASY)
    assert "win too often" in reason
    trivial = ADD.replace(
        "ok = action.strip() == str(self.a + self.b)", "ok = action.strip() in ('', '0')"
    )
    assert "'empty'" in invalid_at(check(fast_sandbox, trivial, max_win_rate=0.5), Stage.TOO_EASY)


def test_wrong_solution_fails_the_solution_probe(fast_sandbox: Sandbox) -> None:
    source = ADD.replace("return [str(self.a + self.b)]", "return [str(self.a + self.b + 1)]")
    reason = invalid_at(check(fast_sandbox, source), Stage.SOLUTION)
    assert "does not win" in reason
    bad_shape = ADD.replace("return [str(self.a + self.b)]", "return str(self.a + self.b)")
    assert "list or None" in invalid_at(check(fast_sandbox, bad_shape), Stage.SOLUTION)
    none = ADD.replace("return [str(self.a + self.b)]", "return None")
    verdict = check(fast_sandbox, none)
    assert verdict.valid and "skipped" in verdict.checks[9].details


CONSTANT_ANSWER = ADD.replace(
    'return f"What is {self.a} + {self.b}?", {}',
    'return f"Level {self.a}-{self.b}: name the magic number.", {}',
).replace("str(self.a + self.b)", "'4217'")


#: Ten possible answers behind varied observations (a hint can list them all).
FEW_ANSWERS = ADD.replace(
    'return f"What is {self.a} + {self.b}?", {}',
    'return f"Level {self.a}-{self.b}: name the magic number.", {}',
).replace("str(self.a + self.b)", "str(4210 + self.a % 10)")


def test_hint_leak(fast_sandbox: Sandbox) -> None:
    listing = "The magic number is one of  " + " , ".join(str(4210 + i) for i in range(10))
    reason = invalid_at(check(fast_sandbox, FEW_ANSWERS, hint=listing), Stage.HINT_LEAK)
    assert "421" in reason
    teens = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
             "seventeen", "eighteen", "nineteen"]  # fmt: skip
    spelled = "It is " + ", ".join(f"four thousand two hundred {w}" for w in teens)
    invalid_at(check(fast_sandbox, FEW_ANSWERS, hint=spelled), Stage.HINT_LEAK)
    digits = "Digits: " + "; ".join(" ".join(str(4210 + i)) for i in range(10))
    invalid_at(check(fast_sandbox, FEW_ANSWERS, hint=digits), Stage.HINT_LEAK)
    assert check(fast_sandbox, FEW_ANSWERS, hint="Think about powers of two.").valid
    assert check(fast_sandbox, ADD, hint="Add the hundreds first, then 1 and 2.").valid


TOOL = '''
from spade.envs import ToolEnv, tool

class VaultEnv(ToolEnv):
    max_turns = 5

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.box = f"B{self.rng.randint(1000, 9999)}"
        self.code = str(self.rng.randint(100000, 999999))
        return f"Read the code stored in box {self.box} and answer with it.", {}

    @tool
    def read_box(self, box: str) -> str:
        """Read the code stored in a box."""
        if box != self.box:
            raise KeyError(f"no box {box}")
        return self.code

    def check(self):
        return float(self.submitted_answer == self.code)

    def solution(self):
        return [{"name": "read_box", "arguments": {"box": self.box}}, self.code]
'''


def test_minimal_tool_env_is_valid(fast_sandbox: Sandbox) -> None:
    verdict = check(fast_sandbox, TOOL)
    assert verdict.valid, verdict.reason
    assert verdict.kind == "tool"


def test_tool_that_raises_fails_tool_schema(fast_sandbox: Sandbox) -> None:
    source = TOOL.replace(
        "    def check(self):",
        "    def call_tool(self, name, arguments=None):\n"
        "        if name != 'read_box' or set(arguments or {}) != {'box'}:\n"
        "            raise ValueError('bad call')\n"
        "        return super().call_tool(name, arguments)\n\n    def check(self):",
    )
    reason = invalid_at(check(fast_sandbox, source), Stage.TOOL_SCHEMA)
    assert "raised" in reason and "ValueError" in reason


def test_tool_without_description_fails_tool_schema(fast_sandbox: Sandbox) -> None:
    source = TOOL.replace('        """Read the code stored in a box."""\n', "")
    assert "no description" in invalid_at(check(fast_sandbox, source), Stage.TOOL_SCHEMA)


def test_tool_answer_in_instruction_is_a_leak(fast_sandbox: Sandbox) -> None:
    source = TOOL.replace("and answer with it.", "and answer with it. It is {self.code}.")
    reason = invalid_at(check(fast_sandbox, source), Stage.ANSWER_LEAK)
    assert "gives away the answer" in reason


def test_exception_in_env_code_is_invalid_not_an_error(fast_sandbox: Sandbox) -> None:
    source = ADD.replace("ok = action.strip() == str(self.a + self.b)", "ok = 1 / 0")
    reason = invalid_at(check(fast_sandbox, source), Stage.TYPES)
    assert "ZeroDivisionError" in reason


def test_validator_error_is_never_accepted(
    fast_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spade.validate import _behaviour

    def broken(state: object) -> dict[str, object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(_behaviour, "stage_variety", broken)
    reason = invalid_at(check(fast_sandbox, ADD), Stage.VARIETY)
    assert "validator error" in reason and "boom" in reason


def test_slow_env_runs_out_of_budget(fast_sandbox: Sandbox) -> None:
    source = "import time\n" + ADD.replace(
        "ok = action.strip()", "time.sleep(0.05)\n        ok = action.strip()"
    )
    verdict = check(fast_sandbox, source, time_budget_s=0.5)
    assert not verdict.valid and "time budget of 0.5 s" in verdict.reason
    assert verdict.seconds < HANG_S


def test_hanging_call_is_stopped_by_the_budget(fast_sandbox: Sandbox) -> None:
    source = ADD.replace(
        "ok = action.strip()", "while True:\n            pass\n        ok = action.strip()"
    )
    verdict = check(fast_sandbox, source, time_budget_s=1.0)
    assert not verdict.valid
    assert "time budget" in verdict.reason or "timed out" in verdict.reason
    assert verdict.seconds < HANG_S


SOCKET_IN_RESET = ADD.replace(
    "super().reset(seed=seed)",
    "super().reset(seed=seed)\n        try:\n"
    "            SOCKET.create_connection(('127.0.0.1', 80), timeout=0.2)\n"
    "        except OSError:\n            pass",
)


@pytest.mark.bwrap
def test_socket_in_reset_is_a_safety_failure(bwrap_sandbox: Sandbox) -> None:
    # plain code is rejected by the static scan, before anything runs
    plain = "import socket\n" + SOCKET_IN_RESET.replace("SOCKET", "socket")
    verdict = check(bwrap_sandbox, plain)
    reason = invalid_at(verdict, Stage.SAFETY)
    assert "attempts network access: import socket (line 1)" in reason
    assert Stage.LOAD not in {c.stage for c in verdict.checks}  # nothing was imported
    # a module name built at run time escapes the scan; the sandbox catches the attempt
    hidden = "SOCKET = __import__('so' + 'cket')\n" + SOCKET_IN_RESET
    reason = invalid_at(check(bwrap_sandbox, hidden), Stage.SAFETY)
    assert reason.startswith("attempted network access") and "127.0.0.1" in reason


@pytest.mark.bwrap
def test_reading_the_environment_is_a_safety_failure(bwrap_sandbox: Sandbox) -> None:
    read = "self.key = ENV.get('OPENAI_API_KEY')\n        ok = action.strip()"
    plain = "import os\nENV = os.environ\n" + ADD.replace("ok = action.strip()", read)
    reason = invalid_at(check(bwrap_sandbox, plain), Stage.SAFETY)
    assert "environment" in reason and "os.environ" in reason
    hidden = "ENV = getattr(__import__('o' + 's'), 'envi' + 'ron')\n" + ADD.replace(
        "ok = action.strip()", read
    )
    assert invalid_at(check(bwrap_sandbox, hidden), Stage.SAFETY).startswith("attempted")


def test_config_is_checked() -> None:
    from spade.errors import UserError

    with pytest.raises(UserError):
        ValidationConfig(hash_seeds=(3, 3))
    assert math.isclose(ValidationConfig().max_win_rate, 0.2)


@pytest.mark.bwrap
@pytest.mark.parametrize("example", list_examples(), ids=lambda e: e.name)
def test_reference_examples_are_valid(bwrap_sandbox: Sandbox, example: ExampleEnv) -> None:
    verdict = check(bwrap_sandbox, example.source(), hint=example.hint)
    assert verdict.valid, (verdict.stage, verdict.reason)
    assert verdict.kind == example.kind
    solution = next(c for c in verdict.checks if c.stage == Stage.SOLUTION)
    assert solution.details["returns"] and "skipped" not in solution.details


def test_crash_in_env_code_is_invalid_not_infrastructure(fast_sandbox: Sandbox) -> None:
    source = "import os\n" + ADD.replace("ok = action.strip()", "os._exit(3)\n        ok = 1")
    verdict = check(fast_sandbox, source)
    assert not verdict.valid and verdict.stage in (Stage.TYPES, Stage.SAFETY)


def _hash_parity(text: str, seed: int) -> int:
    code = f"print(hash({text!r}) % 2)"
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    return int(
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
    )


def test_load_failing_only_under_another_hash_seed_fails_determinism(
    fast_sandbox: Sandbox,
) -> None:
    word = next(w for w in (f"w{i}" for i in range(64)) if _hash_parity(w, 0) != _hash_parity(w, 1))
    bad = _hash_parity(word, 1)
    source = f"if hash({word!r}) % 2 == {bad}:\n    raise ImportError('unlucky hash')\n" + ADD
    reason = invalid_at(check(fast_sandbox, source), Stage.DETERMINISM)
    assert "second worker" in reason and "unlucky hash" in reason


#: Varied instances, no solution(), and one magic word that always wins.
MAGIC_WORD = """
from spade.envs import TextEnv

class WordEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.level = self.rng.randint(1, 10**6)
        return f"Level {self.level}: say the magic word.", {}

    def step(self, action):
        ok = action.strip().lower() == "lighthouse"
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}
"""


def test_hint_leak_without_a_solution_plays_the_hints_phrases(fast_sandbox: Sandbox) -> None:
    reason = invalid_at(
        check(fast_sandbox, MAGIC_WORD, hint="Sailors know it: the old LIGHTHOUSE."),
        Stage.HINT_LEAK,
    )
    assert "lighthouse" in reason.lower()
    assert check(fast_sandbox, MAGIC_WORD, hint="Think of the coast at night.").valid


def test_natural_language_replies_must_not_crash(fast_sandbox: Sandbox) -> None:
    fragile = ADD.replace(
        "ok = action.strip() == str(self.a + self.b)",
        "ok = action.strip() == str(self.a + self.b)\n"
        "        if len(action) > 60:\n"
        "            raise ValueError('reply too long')",
    )
    reason = invalid_at(check(fast_sandbox, fragile), Stage.REWARDS)
    assert "natural-language reply" in reason
