"""Environments the trainer ships for its own checks (the learning benchmark).

Each is one module shaped like a generated environment and runs in the sandbox like one.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["LEARNING_ENVS", "learning_env_source"]

#: name -> one-line description
LEARNING_ENVS = {
    "small_sum": "add two one-digit numbers; the answer in \\boxed{}",
    "even_reply": "win by replying with an even number of characters (random models: ~50%)",
}


def learning_env_source(name: str) -> str:
    """Source text of a bundled learning-check environment."""
    if name not in LEARNING_ENVS:
        raise KeyError(f"unknown learning environment {name!r}; known: {sorted(LEARNING_ENVS)}")
    return resources.files("spade.train.envs").joinpath(f"{name}.py").read_text(encoding="utf-8")
