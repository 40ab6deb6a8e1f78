"""One parser for every model spec, whoever builds the model from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade.errors import UserError
from spade.modelspec import (
    EVAL_SPECS,
    MODEL_SPECS,
    POLICY_SPECS,
    check_local,
    parse_spec,
)


@pytest.mark.parametrize(("text", "accepted", "scheme", "argument"), [
    ("smollm2", MODEL_SPECS, "smollm2", ""),
    ("hf:/models/qwen", MODEL_SPECS, "hf", "/models/qwen"),
    ("vllm:runs/a@best", MODEL_SPECS, "vllm", "runs/a@best"),
    ("openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B", MODEL_SPECS, "openai",
     "http://127.0.0.1:8000/v1#Qwen/Qwen3-8B"),
    ("scripted", POLICY_SPECS, "scripted", ""),
    ("replay:out/replies.jsonl", EVAL_SPECS, "replay", "out/replies.jsonl"),
    ("oracle", EVAL_SPECS, "oracle", ""),
    ("hf:runs/train/cpu_demo@latest", EVAL_SPECS, "hf", "runs/train/cpu_demo@latest"),
])
def test_every_scheme_parses(text: str, accepted: tuple[str, ...], scheme: str,
                             argument: str) -> None:
    spec = parse_spec(text, accepted)
    assert (spec.text, spec.scheme, spec.argument) == (text, scheme, argument)


def test_parts_of_a_spec() -> None:
    run = parse_spec("hf:runs/train/cpu_demo@latest")
    assert run.local_path == Path("runs/train/cpu_demo")
    assert parse_spec("smollm2").local_path is None
    assert parse_spec("openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B").openai_target == (
        "http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B")


@pytest.mark.parametrize(("text", "accepted", "message"), [
    ("", MODEL_SPECS, "unknown model spec ''; expected one of: smollm2 | hf:PATH"),
    ("hf", MODEL_SPECS, "unknown model spec 'hf'"),
    ("hf:", MODEL_SPECS, "unknown model spec 'hf:'"),
    ("smollm2:x", MODEL_SPECS, "unknown model spec 'smollm2:x'"),
    ("llama:x", MODEL_SPECS, "unknown model spec 'llama:x'"),
    ("scripted", MODEL_SPECS, "unknown model spec 'scripted'"),  # self-play's only
    ("oracle", POLICY_SPECS, "unknown model spec 'oracle'"),  # evaluation's only
    ("openai:http://127.0.0.1:8000/v1", MODEL_SPECS, "openai needs BASE_URL#MODEL"),
    ("openai:#m", MODEL_SPECS, "openai needs BASE_URL#MODEL"),
])
def test_a_malformed_spec_is_one_line(text: str, accepted: tuple[str, ...],
                                      message: str) -> None:
    with pytest.raises(UserError) as err:
        parse_spec(text, accepted)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_policies_and_providers_read_specs_with_the_parser() -> None:
    from spade.eval.providers import make_provider

    from spade.policy import make_policy

    with pytest.raises(UserError, match=r"unknown policy spec 'oracle'; expected one of: "
                                        r"scripted \| smollm2"):
        make_policy("oracle")
    with pytest.raises(UserError, match=r"unknown model spec 'scripted'; expected one of: "
                                        r"smollm2 \| .* \| replay:FILE.jsonl \| oracle$"):
        make_provider("scripted")
    with pytest.raises(UserError, match="policy spec 'openai:x': openai needs"):
        make_policy("openai:x")
    with pytest.raises(UserError, match="model spec 'openai:x': openai needs"):
        make_provider("openai:x")


def test_a_local_spec_names_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        check_local(f"hf:{tmp_path / 'none'}@latest")
    with pytest.raises(UserError, match="looks like a model hub id"):
        check_local("vllm:Qwen/Qwen3-8B")
    check_local(f"hf:{tmp_path}@latest")
    check_local("openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B")


def test_every_evaluation_scheme_has_a_provider() -> None:
    from spade.eval.providers import ENTRY_POINTS

    assert {s.partition(":")[0] for s in EVAL_SPECS} == set(ENTRY_POINTS)
