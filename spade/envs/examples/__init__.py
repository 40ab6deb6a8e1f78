"""Hand-written reference environments and their registry.

Each example is one module shaped like a generated environment (one ``*Env`` class, all
randomness from ``self.rng``). Their privileged hints and skill labels live in
``examples.yaml``, because generated environment sources do not carry them.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from spade.errors import UserError

if TYPE_CHECKING:
    from spade.envs._text_env import TextEnv

#: The cognitive skills of the games setting.
GAME_SKILLS = ("math", "logic", "spatial", "pattern", "optimisation", "causal")
#: The skills of the tool-use setting.
TOOL_SKILLS = (
    "api_orchestration",
    "data_retrieval",
    "state_modification",
    "error_recovery",
    "tool_selection",
    "multi_step_workflow",
)
_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ExampleEnv:
    """One reference environment: its module name, kind, skill, hint and source file."""

    name: str
    kind: Literal["game", "tool"]
    skill: str
    hint: str
    path: Path

    def source(self) -> str:
        """The environment module's source text."""
        return self.path.read_text(encoding="utf-8")


def list_examples() -> list[ExampleEnv]:
    """All reference environments, in registry order."""
    import yaml

    entries = yaml.safe_load((_HERE / "examples.yaml").read_text(encoding="utf-8"))
    examples = []
    for entry in entries:
        kind, skill = entry["kind"], entry["skill"]
        if skill not in (GAME_SKILLS if kind == "game" else TOOL_SKILLS):
            raise ValueError(f"example {entry['name']}: skill {skill!r} does not fit kind {kind!r}")
        path = _HERE / f"{entry['name']}.py"
        examples.append(
            ExampleEnv(entry["name"], kind, skill, " ".join(entry["hint"].split()), path)
        )
    return examples


def get_example(name: str) -> ExampleEnv:
    """The reference environment called ``name``; ``UserError`` listing the names if unknown."""
    examples = list_examples()
    for example in examples:
        if example.name == name:
            return example
    known = ", ".join(e.name for e in examples)
    raise UserError(f"unknown example environment {name!r}; known: {known}")


def load_example_source(name: str) -> str:
    """Source text of the reference environment ``name``."""
    return get_example(name).source()


def load_example_class(name: str) -> type[TextEnv]:
    """Import a reference environment (trusted code) and return its one ``*Env`` class."""
    from spade.envs._text_env import TextEnv

    module = importlib.import_module(f"{__name__}.{get_example(name).name}")
    classes = [
        obj
        for obj_name, obj in vars(module).items()
        if inspect.isclass(obj)
        and obj_name.endswith("Env")
        and obj.__module__ == module.__name__
        and issubclass(obj, TextEnv)
    ]
    if len(classes) != 1:
        raise ValueError(f"example {name} defines {len(classes)} *Env classes, expected one")
    return classes[0]
