"""Static source checks: syntax, the one *Env class, no global RNG (incl. aliasing tricks)."""

from __future__ import annotations

import textwrap

import pytest

from spade.validate._failure import CheckFailed
from spade.validate._source import check_source
from spade.validate._verdict import Stage

HEADER = "from spade.envs import TextEnv\n"
BODY = """
class GuessEnv(TextEnv):
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return "hi", {}

    def step(self, action):
        return "done", 0.0, True, False, {}
"""


def reason(source: str) -> str:
    with pytest.raises(CheckFailed) as info:
        check_source(textwrap.dedent(source), max_chars=100_000)
    assert info.value.stage == Stage.SOURCE
    return info.value.reason


def test_valid_game_and_tool_sources() -> None:
    facts = check_source(HEADER + BODY, max_chars=100_000)
    assert (facts.class_name, facts.kind) == ("GuessEnv", "game")
    tool = """
from spade.envs import ToolEnv, tool
import random
class DeskEnv(ToolEnv):
    @tool
    def look(self, key: str) -> str:
        \"\"\"Look.\"\"\"
        return key
    def check(self):
        self.r = random.Random(3)
        return 0.0
"""
    facts = check_source(tool, max_chars=100_000)
    assert (facts.class_name, facts.kind) == ("DeskEnv", "tool")


def test_syntax_error_names_the_line() -> None:
    text = reason(HEADER + "class BadEnv(TextEnv):\n    def reset(self:\n        pass\n")
    assert text.startswith("syntax error at line 3")


def test_null_bytes_and_size_limit() -> None:
    assert "cannot be parsed" in reason(HEADER + "x = 1\x00\n" + BODY)
    with pytest.raises(CheckFailed, match="characters long"):
        check_source(HEADER + BODY, max_chars=10)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from spade.envs import TextEnv\nx = 1\n", "no class whose name ends in 'Env'"),
        (
            HEADER + BODY + BODY.replace("GuessEnv", "OtherEnv"),
            "2 classes whose names end in 'Env'",
        ),
        ("import gymnasium\nclass GuessEnv(gymnasium.Env):\n    pass\n", "must inherit from"),
        ("class GuessEnv:\n    pass\n", "must inherit from"),
    ],
)
def test_class_rules(source: str, expected: str) -> None:
    assert expected in reason(source)


def test_inheritance_through_alias_module_and_helper_class() -> None:
    aliased = "from spade.envs import TextEnv as Base\nclass AEnv(Base):\n    pass\n"
    assert check_source(aliased, max_chars=10_000).kind == "game"
    module = "import spade.envs as se\nclass BEnv(se.ToolEnv):\n    pass\n"
    assert check_source(module, max_chars=10_000).kind == "tool"
    helper = HEADER + "class Mixin(TextEnv):\n    pass\nclass CEnv(Mixin):\n    pass\n"
    assert check_source(helper, max_chars=10_000).class_name == "CEnv"
    nested_fn = HEADER + "def make():\n    class HiddenEnv(TextEnv):\n        pass\n" + BODY
    assert check_source(nested_fn, max_chars=10_000).class_name == "GuessEnv"


@pytest.mark.parametrize(
    "snippet",
    [
        "import random\nrandom.seed(1)",
        "import random as r\nr.seed(1)",
        "from random import seed\nseed(3)",
        "from random import seed as s\ns(3)",
        "import numpy as np\nnp.random.seed(0)",
        "import numpy\nnumpy.random.seed(0)",
        "from numpy import random as npr\nnpr.seed(0)",
        "import numpy.random as nr\nnr.seed(0)",
        "from numpy.random import seed\nseed(0)",
        "import numpy as np\nnp.random.set_state(None)",
        "import random\nrandom.setstate(None)",
        "import random\ngetattr(random, 'seed')(1)",
        "__import__('random').seed(1)",
        "__import__('ran' 'dom').seed(1)",
        "import importlib\nimportlib.import_module('numpy.random').seed(1)",
    ],
)
def test_global_seeding_is_rejected(snippet: str) -> None:
    text = reason(HEADER + snippet + "\n" + BODY)
    assert text.startswith("global RNG seeding")


@pytest.mark.parametrize(
    "snippet",
    [
        "import random\nWORDS = ['a', 'b']\nrandom.shuffle(WORDS)",
        "import random as rnd\ndef pick():\n    return rnd.randint(1, 6)",
        "from random import choice",
        "from random import *",
        "import numpy as np\nX = np.random.rand(3)",
        "from numpy.random import randint",
        "import random\nR = random.SystemRandom()",
    ],
)
def test_global_generator_use_is_rejected(snippet: str) -> None:
    text = reason(HEADER + snippet + "\n" + BODY)
    assert "global random generator" in text


def test_private_generators_are_fine() -> None:
    allowed = (
        "import random\nimport numpy as np\nfrom numpy.random import default_rng\n"
        "R = random.Random(4)\nG = np.random.default_rng(5)\nH = default_rng(6)\n"
        "S = np.random.SeedSequence(1)\n"
    )
    body = BODY.replace(
        'return "hi", {}', "self.x = self.rng.randint(1, 3)\n        return 'hi', {}"
    )
    assert check_source(HEADER + allowed + body, max_chars=100_000).class_name == "GuessEnv"


def test_reset_parameter_named_seed_is_not_mistaken_for_random_seed() -> None:
    source = (
        HEADER
        + "import random\n"
        + BODY.replace("super().reset(seed=seed)", "super().reset(seed=seed)\n        s = seed")
    )
    assert check_source(source, max_chars=100_000).class_name == "GuessEnv"


class _Cycle:
    """Garbage whose collection runs Python code (a thread switch inside a parse)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        pass


def test_parses_in_threads_side_by_side_never_trip_the_ast_constructor() -> None:
    """Validations run in threads; CPython's AST constructor counts recursion per
    interpreter, so a collection that switches threads mid-parse used to fail a valid
    environment with ``SystemError: AST constructor recursion depth mismatch``."""
    import gc
    import sys
    import threading

    from spade.envs.examples import list_examples

    sources = [e.source() for e in list_examples()]
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(12):
            for source in sources:
                for _ in range(5):
                    _Cycle()
                try:
                    check_source(source, max_chars=200_000)
                except BaseException as exc:  # every failure counts
                    errors.append(exc)

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(10, 2, 2)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
    assert errors == []
