"""Warm-start pairs render through the real designer prompt and are checked by the real
validator; a module the validator rejects (or that does not parse back) is dropped."""

from __future__ import annotations

from spade.config import DesignerConfig
from spade.families import all_instances
from spade.families._pairs import jsonl_bytes, render_pair, render_pairs, sha256_of


def _designer() -> DesignerConfig:
    return DesignerConfig(prefill="skeleton", few_shot_examples=1, memory_positives=1,
                          memory_negatives=1, max_document_chars=300)


def test_pair_is_the_designer_prompt_and_the_module_after_the_skeleton() -> None:
    instances = all_instances(("sum_numbers", "letter_at"))
    rates = {"sum_numbers": 0.25, "letter_at": 0.5}
    pair = render_pair(instances[0], 0, _designer(), None, instances, rates, seed=3)
    system, user = pair.messages
    assert system["role"] == "system" and "Environment Designer" in system["content"]
    assert "**math**" in user["content"]
    # memory shows a module of another family with its measured rate
    assert "50%" in user["content"] and "letter" in user["content"]
    assert pair.prefill.startswith("```python\n") and pair.prefill.endswith('"""')
    assert pair.completion.rstrip().endswith("</hint>")
    again = render_pair(instances[0], 0, _designer(), None, instances, rates, seed=3)
    assert again == pair
    other = render_pair(instances[0], 1, _designer(), None, instances, rates, seed=3)
    assert other.id != pair.id


def test_rejected_modules_are_dropped_and_the_bytes_are_stable() -> None:
    instances = all_instances(("sum_numbers",))
    calls: list[int] = []

    def validate(items: list[tuple[str, str]]) -> list[str]:
        calls.append(len(items))
        return ["too_easy: stand-in verdict" if k == 1 else "" for k in range(len(items))]

    pairs, dropped = render_pairs(instances, _designer(), None, {}, seed=0,
                                  prompts_per_module=2, validate=validate)
    assert calls == [len(instances)]
    assert dropped == {instances[1].name: "too_easy: stand-in verdict"}
    assert len(pairs) == 2 * (len(instances) - 1)
    again, _ = render_pairs(instances, _designer(), None, {}, seed=0, prompts_per_module=2,
                            validate=validate)
    assert sha256_of(jsonl_bytes(again)) == sha256_of(jsonl_bytes(pairs))
