"""Schema derivation from type hints and docstrings, and argument coercion."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, Union  # noqa: UP035

import jsonschema
import pytest

from spade.envs import ArgumentError, ToolSpec, tool
from spade.envs._schema import SPEC_ATTR, coerce_arguments, derive_spec, parse_docstring


def _params(func: object) -> dict[str, object]:
    spec = getattr(func, SPEC_ATTR)
    assert isinstance(spec, ToolSpec)
    return spec.parameters


def test_every_supported_type() -> None:
    @tool
    def f(
        self: object,
        s: str,
        i: int,
        x: float,
        b: bool,
        ints: list[int],
        table: dict[str, float],
        nested: list[dict[str, list[bool]]],
        maybe: Optional[int],  # noqa: UP045 (the typing spelling must work too)
        pipe: str | None,
        mode: Literal["fast", "slow"],
        level: Literal[1, 2, 3],
        mixed: Literal["a", 1, None],
    ) -> str:
        return ""

    props = _params(f)["properties"]
    assert props == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean"},
        "ints": {"type": "array", "items": {"type": "integer"}},
        "table": {"type": "object", "additionalProperties": {"type": "number"}},
        "nested": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "boolean"}},
            },
        },
        "maybe": {"type": ["integer", "null"]},
        "pipe": {"type": ["string", "null"]},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "mixed": {"type": ["integer", "string", "null"], "enum": ["a", 1, None]},
    }
    assert _params(f)["required"] == list(props)
    jsonschema.Draft202012Validator.check_schema(_params(f))


def test_loose_annotations_that_models_write() -> None:
    """Bare list/dict/tuple, typing.List/Dict/Tuple/Union and Any derive usable schemas."""

    @tool
    def f(
        self: object,
        items: list,  # type: ignore[type-arg]
        record: dict,  # type: ignore[type-arg]
        pair: tuple,  # type: ignore[type-arg]
        names: List[str],  # noqa: UP006
        scores: Dict[str, int],  # noqa: UP006
        point: Tuple[int, int],  # noqa: UP006
        many: tuple[float, ...],
        either: Union[int, None],  # noqa: UP007
        anything: Any,
        loose: List,  # type: ignore[type-arg]  # noqa: UP006
        note: Any = None,
    ) -> str:
        return ""

    params = _params(f)
    props = params["properties"]
    assert props == {
        "items": {"type": "array"},
        "record": {"type": "object"},
        "pair": {"type": "array"},
        "names": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
        "point": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "integer"}],
            "minItems": 2,
            "maxItems": 2,
        },
        "many": {"type": "array", "items": {"type": "number"}},
        "either": {"type": ["integer", "null"]},
        "anything": {},
        "loose": {"type": "array"},
        "note": {"default": None},
    }
    jsonschema.Draft202012Validator.check_schema(params)
    spec = getattr(f, SPEC_ATTR)
    coerced = coerce_arguments(
        spec,
        {
            "items": [1, "a", None],
            "record": '{"k": [1]}',
            "pair": [1, 2, 3],
            "names": ["x"],
            "scores": {"a": "3"},
            "point": ["1", 2.0],
            "many": [1, "2.5"],
            "either": None,
            "anything": {"deep": [None]},
            "loose": [],
        },
    )
    assert coerced["record"] == {"k": [1]} and coerced["point"] == [1, 2]
    assert coerced["scores"] == {"a": 3} and coerced["many"] == [1.0, 2.5]
    assert coerced["anything"] == {"deep": [None]} and coerced["items"] == [1, "a", None]
    with pytest.raises(ArgumentError, match="array of 2 items"):
        coerce_arguments(spec, {**coerced, "point": [1, 2, 3]})
    with pytest.raises(ArgumentError, match="expected array"):
        coerce_arguments(spec, {**coerced, "items": 5})


def test_defaults_are_optional_and_recorded() -> None:
    @tool
    def f(self: object, q: str, limit: int = 10, ratio: float = 1, tag: str = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return ""

    params = _params(f)
    assert params["required"] == ["q"]
    assert params["properties"]["limit"] == {"type": "integer", "default": 10}
    assert params["properties"]["ratio"] == {"type": "number", "default": 1.0}
    assert params["properties"]["tag"] == {"type": ["string", "null"], "default": None}
    assert params["additionalProperties"] is False


def test_no_parameters_has_no_required_list() -> None:
    @tool
    def ping(self: object) -> str:
        """Ping."""
        return "pong"

    assert _params(ping) == {"type": "object", "properties": {}, "additionalProperties": False}
    jsonschema.Draft7Validator.check_schema(_params(ping))


def test_docstring_description_and_args() -> None:
    @tool
    def search(self: object, query: str, max_results: int = 5, *, exact: bool = False) -> str:
        """Search the catalogue for products
        matching a query.

        Results are ranked by relevance.

        Args:
            query: Words to look for;
                quotes force a phrase.
            max_results (int): How many hits
                to return.
            exact: Only exact matches.

        Returns:
            A JSON list.
        """
        return ""

    spec: ToolSpec = getattr(search, SPEC_ATTR)
    assert spec.description == "Search the catalogue for products matching a query."
    props = spec.parameters["properties"]
    assert props["query"]["description"] == "Words to look for; quotes force a phrase."
    assert props["max_results"]["description"] == "How many hits to return."
    assert props["exact"]["description"] == "Only exact matches."
    schema = spec.to_openai()
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "search"
    assert schema["function"]["parameters"] == spec.parameters
    assert schema["function"]["parameters"] is not spec.parameters  # a copy


def test_parse_docstring_edge_cases() -> None:
    assert parse_docstring("") == ("", {})
    assert parse_docstring("Args:\n    a: x") == ("", {"a": "x"})
    assert parse_docstring("One line.") == ("One line.", {})
    summary, args = parse_docstring("Do it.\n\nArgs:\n    a: first\n\nafterwards text")
    assert (summary, args) == ("Do it.", {"a": "first"})


def test_name_and_description_overrides() -> None:
    @tool(name="lookup-user", description="Custom.")
    def f(self: object, x: int) -> str:
        """Ignored."""
        return ""

    spec: ToolSpec = getattr(f, SPEC_ATTR)
    assert (spec.name, spec.description) == ("lookup-user", "Custom.")


class Point:
    pass


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        ("Point", "unsupported type Point"),
        ("set[int]", "unsupported type"),
        ("bytes", "unsupported type bytes"),
        ("dict[int, str]", "dict keys must be str"),
        ("int | str", "unsupported type"),
        ("tuple[int, ...,  str]", "unsupported type"),
        ("Literal[b'raw']", "Literal values"),
        ("NoSuchName", "cannot resolve type hints"),
    ],
)
def test_unsupported_annotation_is_a_type_error_at_definition(
    annotation: str, message: str
) -> None:
    namespace: dict[str, object] = {"tool": tool, "Literal": Literal, "Point": Point}
    source = f"@tool\ndef f(self, x: {annotation}) -> str:\n    return ''\n"
    with pytest.raises(TypeError, match=message) as info:
        exec(source, namespace)
    assert "tool f" in str(info.value)


def test_other_definition_errors() -> None:
    with pytest.raises(TypeError, match="needs a type annotation"):
        derive_spec(lambda self, x: x, name="f")

    def no_self(x: int) -> str:
        return ""

    def star(self: object, *args: int) -> str:
        return ""

    def bad_default(self: object, x: int = "many") -> str:  # type: ignore[assignment]
        return ""

    with pytest.raises(TypeError, match="first parameter must be 'self'"):
        derive_spec(no_self)
    with pytest.raises(TypeError, match=r"\*args"):
        derive_spec(star)
    with pytest.raises(TypeError, match=r"parameter 'x'.*expected integer"):
        derive_spec(bad_default)
    with pytest.raises(TypeError, match="tool name"):
        derive_spec(star, name="has space")
    with pytest.raises(TypeError, match="plain methods"):
        tool(staticmethod(no_self))  # type: ignore[arg-type]


# ---------------------------------------------------------------- coercion


@tool
def _sample(
    self: object,
    n: int,
    x: float,
    flag: bool,
    name: str,
    ids: list[int],
    weights: dict[str, float],
    mode: Literal["a", "b"] = "a",
    note: str | None = None,
) -> str:
    return ""


_SPEC: ToolSpec = getattr(_sample, SPEC_ATTR)
_BASE = {"n": 1, "x": 1.5, "flag": True, "name": "z", "ids": [], "weights": {}}


@pytest.mark.parametrize(
    ("key", "given", "expected"),
    [
        ("n", 3, 3),
        ("n", 3.0, 3),
        ("n", "3", 3),
        ("n", " -12 ", -12),
        ("x", 2, 2.0),
        ("x", "2.5", 2.5),
        ("x", "1e3", 1000.0),
        ("flag", "TRUE", True),
        ("flag", "false", False),
        ("name", 17, "17"),
        ("name", "", ""),
        ("ids", ["1", 2, 3.0], [1, 2, 3]),
        ("ids", "[4, 5]", [4, 5]),
        ("weights", {"a": 1}, {"a": 1.0}),
        ("weights", '{"a": "0.5"}', {"a": 0.5}),
        ("mode", "b", "b"),
        ("note", None, None),
    ],
)
def test_safe_coercions(key: str, given: object, expected: object) -> None:
    out = coerce_arguments(_SPEC, {**_BASE, key: given})
    assert out[key] == expected
    assert type(out[key]) is type(expected)


@pytest.mark.parametrize(
    ("key", "given", "message"),
    [
        ("n", "3.5", "argument 'n': expected integer, got string \"3.5\""),
        ("n", 3.5, "expected integer, got number 3.5"),
        ("n", True, "expected integer, got boolean true"),
        ("n", "three", "expected integer"),
        ("n", None, "expected integer, got null"),
        ("x", "abc", "expected number"),
        ("x", float("nan"), "expected number"),
        ("x", "NaN", "expected number"),
        ("x", False, "expected number"),
        ("flag", 1, "expected boolean, got integer 1"),
        ("flag", "yes", "expected boolean"),
        ("name", 1.5, "expected string, got number 1.5"),
        ("name", True, "expected string"),
        ("name", ["x"], "expected string, got array"),
        ("ids", [1, "x"], "argument 'ids[1]': expected integer"),
        ("ids", "[1,", "expected array"),
        ("ids", {"a": 1}, "expected array"),
        ("weights", {"a": "heavy"}, "argument 'weights.a': expected number"),
        ("mode", "c", 'argument \'mode\': string "c" is not one of "a", "b"'),
    ],
)
def test_rejected_values(key: str, given: object, message: str) -> None:
    with pytest.raises(ArgumentError) as info:
        coerce_arguments(_SPEC, {**_BASE, key: given})
    assert message in str(info.value)


def test_missing_and_unknown_are_all_reported() -> None:
    with pytest.raises(ArgumentError) as info:
        coerce_arguments(_SPEC, {"n": "x", "bogus": 1})
    text = str(info.value)
    assert "missing required argument(s): x, flag, name, ids, weights" in text
    assert "unexpected argument(s): bogus" in text
    assert "argument 'n': expected integer" in text


def test_long_values_are_shortened_in_errors() -> None:
    with pytest.raises(ArgumentError) as info:
        coerce_arguments(_SPEC, {**_BASE, "n": "y" * 500})
    assert len(str(info.value)) < 120
