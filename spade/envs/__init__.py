"""The environment contract: games, tool use, and how replies become actions.

Generated environments import from here inside the sandbox, so this package stays light:
no torch/transformers, and the reference examples are only loaded on demand.
"""

from __future__ import annotations

from spade.envs._parsing import (
    ToolCall,
    ToolCallError,
    extract_answer,
    extract_boxed,
    format_tool_call,
    parse_final_answer,
    parse_game_action,
    parse_tool_calls,
    strip_think,
)
from spade.envs._schema import ArgumentError, ToolSpec, tool
from spade.envs._text_env import TextEnv, TextSpace
from spade.envs._tool_env import ToolEnv, tool_result_text
from spade.envs.examples import (
    ExampleEnv,
    get_example,
    list_examples,
    load_example_class,
    load_example_source,
)

__all__ = [
    "ArgumentError",
    "ExampleEnv",
    "TextEnv",
    "TextSpace",
    "ToolCall",
    "ToolCallError",
    "ToolEnv",
    "ToolSpec",
    "extract_answer",
    "extract_boxed",
    "format_tool_call",
    "get_example",
    "list_examples",
    "load_example_class",
    "load_example_source",
    "parse_final_answer",
    "parse_game_action",
    "parse_tool_calls",
    "strip_think",
    "tool",
    "tool_result_text",
]
