"""The tamper check's fast path: one generated function compares every closure cell."""

from __future__ import annotations

import types
from typing import Any

import pytest

from spade.sandbox._tamper import identity_check, make_tamper_check


def _cells(n: int) -> tuple[Any, ...]:
    def make(i: int) -> Any:
        held = [i]

        def inner() -> list[int]:
            return held

        return inner.__closure__[0]  # type: ignore[index]

    return tuple(make(i) for i in range(n))


def test_identity_check_sees_each_cell_in_order() -> None:
    cells = _cells(150)  # past ten (c10 sorts before c2) and past one part of 64
    check = identity_check(cells, tuple(c.cell_contents for c in cells))
    assert check() is True
    for i in (0, 2, 10, 63, 64, 127, 149):
        original = cells[i].cell_contents
        cells[i].cell_contents = list(original)  # equal, but another object
        assert check() is False
        cells[i].cell_contents = original
        assert check() is True
    assert identity_check((), ())() is True


def test_identity_check_raises_on_an_emptied_cell() -> None:
    cells = _cells(3)
    check = identity_check(cells, tuple(c.cell_contents for c in cells))
    del cells[1].cell_contents
    with pytest.raises(NameError):
        check()


def test_a_replaced_or_emptied_cell_is_named_once() -> None:
    cells = _cells(12)
    listed = [(c, c.cell_contents, f"owner{i}") for i, c in enumerate(cells)]
    listed.append(listed[3])  # a cell two functions share is listed twice
    records: list[tuple[str, str]] = []
    check, prepare = make_tamper_check([], lambda *r: records.append(r), listed)
    prepare()
    check()
    assert records == []
    cells[3].cell_contents = object()
    del cells[7].cell_contents
    check()
    check()
    assert sorted(records) == [
        ("tampering", "replaced a closure cell of the sandbox's owner3"),
        ("tampering", "replaced a closure cell of the sandbox's owner7"),
    ]


def test_a_replaced_removed_or_added_attribute_is_named() -> None:
    module = types.ModuleType("watched_module")
    module.dumps, module.loads = len, repr

    class Watched:
        def step(self) -> None: ...

    records: list[tuple[str, str]] = []
    watched = [(module, "dumps", len), (module, "loads", repr)]
    watched += [(Watched, name, value) for name, value in list(Watched.__dict__.items())]
    check, prepare = make_tamper_check(watched, lambda *r: records.append(r), [])
    prepare()
    check()
    assert records == []
    module.dumps = str
    check()
    assert records == [("tampering", "replaced watched_module.dumps")]
    del module.loads
    Watched.extra = 1  # type: ignore[attr-defined]
    check()
    assert records[1:] == [
        ("tampering", "replaced watched_module.loads"),
        ("tampering", "replaced test_a_replaced_removed_or_added_attribute_is_named."
                      "<locals>.Watched.(new attribute)"),
    ]
