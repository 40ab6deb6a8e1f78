"""The tool-use contract: tools as decorated methods, one final answer checked by ``check``.

An episode: ``reset`` returns the user instruction; each agent turn either calls tools
(the runner sends every parsed call to :meth:`ToolEnv.call_tool`, which always returns
text) or submits a final answer through :meth:`ToolEnv.step`, which ends the episode with
the reward of :meth:`ToolEnv.check`. Every agent turn counts toward ``max_turns``; the
runner enforces that cap and truncates, so the environment itself only has to terminate on
the answer.
"""

from __future__ import annotations

import json
from abc import ABCMeta, abstractmethod
from typing import Any, ClassVar

import numpy as np

from spade.envs._parsing import parse_final_answer
from spade.envs._schema import SPEC_ATTR, ToolSpec, coerce_arguments
from spade.envs._text_env import TextEnv

#: Method names a tool may not take: they are the episode protocol itself.
RESERVED_NAMES = frozenset(
    {"reset", "step", "check", "call_tool", "tools", "tool_specs", "solution", "close", "render"}
)


class ToolEnv(TextEnv, metaclass=ABCMeta):
    """Base class for generated tool-use environments.

    Subclasses define tools with ``@tool`` methods, return the instruction from ``reset``
    (after ``super().reset(seed=seed)``) and implement :meth:`check`, which reads
    ``self.submitted_answer`` and the environment's own state and returns a reward in
    [0, 1]. ``solution()`` returns ``{"name", "arguments"}`` calls followed by the final
    answer string.
    """

    max_turns: int = 20
    #: The final answer text (``<answer>`` content when present), set by :meth:`step`.
    submitted_answer: str | None = None
    _tool_specs: ClassVar[dict[str, ToolSpec]] = {}
    _tool_methods: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: dict[str, ToolSpec] = {}
        methods: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                for name in [n for n, m in methods.items() if m == attr]:
                    del specs[name], methods[name]  # overridden in a subclass
                spec = getattr(value, SPEC_ATTR, None)
                if not isinstance(spec, ToolSpec):
                    continue
                if attr in RESERVED_NAMES or spec.name in RESERVED_NAMES:
                    raise TypeError(f"{cls.__name__}.{attr}: {spec.name!r} cannot be a tool name")
                if spec.name in specs:
                    raise TypeError(f"{cls.__name__}: two tools are named {spec.name!r}")
                specs[spec.name] = spec
                methods[spec.name] = attr
        cls._tool_specs = specs
        cls._tool_methods = methods

    @classmethod
    def tool_specs(cls) -> list[ToolSpec]:
        """The tools of this class in definition order."""
        return list(cls._tool_specs.values())

    @classmethod
    def tools(cls) -> list[dict[str, Any]]:
        """OpenAI function schemas of this class's tools, in definition order."""
        return [spec.to_openai() for spec in cls._tool_specs.values()]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed, options=options)
        self.submitted_answer = None
        return "", {}

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> str:
        """Run one tool call and return its result as text; bad calls return an error text."""
        spec = self._tool_specs.get(name)
        if spec is None:
            available = ", ".join(self._tool_specs) or "none"
            return f"Error: unknown tool {name!r}. Available tools: {available}."
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (json.JSONDecodeError, RecursionError) as exc:
                return f"Error: arguments of {name} are not valid JSON: {exc}"
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return f"Error: arguments of {name} must be a JSON object."
        try:
            kwargs = coerce_arguments(spec, arguments)
        except Exception as exc:  # ArgumentError, or absurd input (depth, size): never raise
            return f"Error: invalid arguments for {name}: {exc}."
        try:
            result = getattr(self, self._tool_methods[name])(**kwargs)
        except Exception as exc:
            return f"Error: {type(exc).__name__}: {exc}"
        return tool_result_text(result)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Submit the final answer: store it, score it with :meth:`check`, end the episode."""
        self.submitted_answer = parse_final_answer(action)
        reward = float(self.check())
        return "Answer submitted.", reward, True, False, {"answer": self.submitted_answer}

    @abstractmethod
    def check(self) -> float:
        """Reward in [0, 1] for ``self.submitted_answer`` and the final state."""

    def solution(self) -> list[Any] | None:
        """Tool calls ``{"name", "arguments"}`` then the answer string; ``None`` if unknown."""
        return None


def tool_result_text(result: Any) -> str:
    """Text the agent sees for a tool's return value (JSON for data, ``str`` otherwise)."""
    if isinstance(result, str):
        return result
    if isinstance(result, np.generic):
        result = result.item()
    if result is None or isinstance(result, bool | int | float | list | tuple | dict):
        return json.dumps(result, ensure_ascii=False, default=_json_default)
    return str(result)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)  # deterministic across hash seeds
    return str(value)
