"""Code normalisation survives renaming, comments, docstrings and reformatting."""

from __future__ import annotations

import re

from spade.diversity import code_hash, code_tokens, jaccard, normalize_code, shingles

ORIGINAL = '''
import random
from spade.envs import TextEnv

class VaultEnv(TextEnv):
    """Crack the vault."""
    max_turns = 6
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.secret = self.rng.randint(1, 50)  # the code
        return "Guess 1..50", {}
    def step(self, action):
        guess = int(action)
        if guess == self.secret:
            return "open", 1.0, True, False, {}
        return ("higher" if guess < self.secret else "lower"), 0.0, False, False, {}
'''

RENAMED = '''
import random
from spade.envs import TextEnv


class SafeBoxEnv(TextEnv):
    max_turns = 6

    def reset(self, seed=None, options=None):
        # a different comment
        super().reset(seed=seed)
        self.combination = self.rng.randint(1, 50)
        return ("Guess 1..50", {})

    def step(self, action):
        """Docstring added."""
        attempt = int(action)
        if attempt == self.combination:
            return "open", 1.0, True, False, {}
        return ("higher" if attempt < self.combination else "lower"), 0.0, False, False, {}
'''


def test_renaming_comments_docstrings_formatting_ignored() -> None:
    assert normalize_code(ORIGINAL) == normalize_code(RENAMED)
    assert code_hash(ORIGINAL) == code_hash(RENAMED)
    text = normalize_code(ORIGINAL)
    assert "secret" not in text and "Crack" not in text and "#" not in text
    assert "class v0(TextEnv)" in text and "self.rng.randint" in text and "def reset" in text


def test_literals_change_hash_but_keep_similarity() -> None:
    variant = ORIGINAL.replace("randint(1, 50)", "randint(1, 99)").replace("1..50", "1..99")
    assert code_hash(variant) != code_hash(ORIGINAL)
    a = shingles(code_tokens(normalize_code(ORIGINAL)))
    b = shingles(code_tokens(normalize_code(variant)))
    assert 0.7 < jaccard(a, b) < 1.0


def test_imported_and_builtin_names_kept() -> None:
    text = normalize_code("import math as m\nfrom os import path\nx = m.sqrt(len(path.sep))\n")
    assert "m.sqrt(len(path.sep))" in text and re.search(r"\bv0 =", text)


def test_unparseable_fallback() -> None:
    broken = "def f(:\n    return 1  # comment\n\n\n   x = 2"
    assert normalize_code(broken) == "def f(:\nreturn 1\nx = 2"
    assert code_tokens("def f(:") == ["def", "f", "(", ":"]


def test_shingles_and_jaccard_edges() -> None:
    assert shingles([]) == set()
    assert shingles(["a", "b"]) == {("a", "b")}
    assert jaccard(set(), set()) == 1.0
    assert jaccard({("a",)}, {("b",)}) == 0.0
