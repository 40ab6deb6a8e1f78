"""The committed warm-start data set: it matches its manifest, every pair parses back to
its module, and every module passes the project's own validator today (a validator change
that rejects one fails here: regenerate with ``python -m spade.families.warmstart``)."""

from __future__ import annotations

import pytest
from spade.train.recipe import load_recipe

from spade.designer import parse_design
from spade.families.warmstart import read_manifest, read_pairs


def test_committed_set_matches_its_manifest_and_the_cpu_recipe() -> None:
    from spade.families._pairs import prompt_settings
    from spade.families._registry import families_version

    pairs, digest = read_pairs()
    manifest = read_manifest()
    assert manifest["sha256"] == digest and manifest["pairs"] == len(pairs) > 0
    assert manifest["families_version"] == families_version()
    recipe = load_recipe("cpu_demo")
    assert recipe.warm_start.enabled
    assert manifest["prompt"] == prompt_settings(recipe.selfplay.designer)
    for pair in pairs:
        parsed = parse_design(pair["prefill"] + pair["completion"])
        assert parsed.ok, (pair["id"], parsed.reason)


@pytest.mark.slow
def test_every_module_of_the_set_is_valid() -> None:
    from spade.cycle._setup import sandbox_limits, validation_config
    from spade.sandbox import Sandbox
    from spade.validate import validate_batch

    config = load_recipe("cpu_demo").selfplay
    pairs, _ = read_pairs()
    modules: dict[str, tuple[str, str]] = {}
    for pair in pairs:
        parsed = parse_design(pair["prefill"] + pair["completion"])
        modules[pair["instance"]] = (parsed.source or "", parsed.hint or "")
    with Sandbox(config.sandbox.isolation, sandbox_limits(config)) as sandbox:
        verdicts = validate_batch(list(modules.values()), sandbox=sandbox,
                                  config=validation_config(config))
    rejected = {name: f"{v.stage}: {v.reason}" for name, v in zip(modules, verdicts, strict=True)
                if not v.valid}
    assert rejected == {}
