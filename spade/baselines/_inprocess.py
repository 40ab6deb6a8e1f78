"""Run a baseline environment source in THIS process: the benchmark's and tests' reference.

Training always plays through the sandbox. This exists to measure what the sandbox costs
and to check that sandboxed plays equal direct ones; it executes the source unisolated, so
it is only for the sources this package generates around installed libraries. (A Reasoning
Gym source enters the package without running its index when reasoning_gym is not imported
yet; import reasoning_gym first in a process that also uses the package directly.)
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from spade.envs import TextEnv


def in_process_env(source: str, name: str = "baseline_env") -> Any:
    """A fresh instance of the one ``*Env`` class that ``source`` defines."""
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    classes = [obj for key, obj in vars(module).items()
               if inspect.isclass(obj) and key.endswith("Env") and issubclass(obj, TextEnv)
               and obj.__module__ == name]
    if len(classes) != 1:
        raise ValueError(f"expected one *Env class, found {len(classes)}")
    return classes[0]()
