"""The family library: every grid point renders a distinct module that starts with the
designer's skeleton for its skill and parses back through the designer's own parser."""

from __future__ import annotations

import ast

import pytest

from spade.designer import parse_design, prefill_text, skills
from spade.errors import UserError
from spade.families import all_instances, families_version, get_family, list_families
from spade.families._pairs import design_reply


def test_every_family_has_many_distinct_modules() -> None:
    names = [f.name for f in list_families()]
    assert len(names) == len(set(names)) >= 5
    for family in list_families():
        instances = family.instances()
        assert len(instances) >= 6, family.name
        assert len({i.source for i in instances}) == len(instances), family.name
        assert family.skill in skills("games")
    assert families_version() >= 1


def test_modules_are_designer_replies() -> None:
    for inst in all_instances():
        ast.parse(inst.source)
        assert "$" not in inst.source and "$" not in inst.hint, inst.name
        reply = design_reply(inst)
        assert reply.startswith(prefill_text("skeleton", "games", inst.skill)), inst.name
        parsed = parse_design(reply)
        assert parsed.ok, (inst.name, parsed.reason)
        assert parsed.source is not None and parsed.source.strip() == inst.source.strip()
        assert parsed.hint == inst.hint


def test_rendering_is_deterministic_and_names_are_stable() -> None:
    first = [(i.name, i.source, i.hint) for i in all_instances()]
    assert first == [(i.name, i.source, i.hint) for i in all_instances()]
    assert first[0][0] == f"{list_families()[0].name}/0"


def test_unknown_family_is_one_clear_error() -> None:
    with pytest.raises(UserError, match="unknown environment family 'nope'; known: "):
        get_family("nope")
