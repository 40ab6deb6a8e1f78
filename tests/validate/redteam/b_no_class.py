"""Red-team corpus: (buggy) no class at all."""

def reset(seed=None):
    return "hi", {}
