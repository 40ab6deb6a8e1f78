from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spade.errors import UserError
from spade.policy import HFPolicy, OpenAIPolicy, SamplingParams, ScriptedPolicy, make_policy


def test_import_is_light() -> None:
    code = (
        "import sys, spade, spade.policy\n"
        "heavy = {'torch', 'transformers', 'vllm', 'openai'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_scripted_spec() -> None:
    policy = make_policy("scripted", respond=lambda m: "ok", name="designer")
    assert isinstance(policy, ScriptedPolicy) and policy.name == "designer"
    assert policy.chat([[{"role": "user", "content": "hi"}]], SamplingParams())[0].text == "ok"
    with pytest.raises(UserError, match="built into spade selfplay"):
        make_policy("scripted")


def test_openai_spec() -> None:
    policy = make_policy("openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B", api_key_env="K")
    assert isinstance(policy, OpenAIPolicy)
    assert (policy.base_url, policy.model, policy.api_key_env) == (
        "http://127.0.0.1:8000/v1",
        "Qwen/Qwen3-8B",
        "K",
    )
    with pytest.raises(UserError, match="BASE_URL#MODEL"):
        make_policy("openai:http://127.0.0.1:8000/v1")


@pytest.mark.parametrize("spec", ["", "gpt", "hf:", "hf", "vllm:", "llama:x"])
def test_unknown_specs(spec: str) -> None:
    with pytest.raises(UserError, match="unknown policy spec"):
        make_policy(spec)


def test_hf_and_vllm_specs_check_the_path(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        make_policy(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(UserError, match="does not exist"):
        make_policy(f"vllm:{tmp_path / 'missing'}")


def test_smollm2_spec_loads_the_prepared_model(smollm2_path: Path) -> None:
    policy = make_policy("smollm2", device="cpu")
    assert isinstance(policy, HFPolicy) and policy.name == "smollm2-135m-instruct"
    assert policy.model.name_or_path == str(smollm2_path)


@pytest.mark.slow
def test_hf_spec_loads(smollm2_path: Path) -> None:
    assert make_policy(f"hf:{smollm2_path}", device="cpu").name == smollm2_path.name
