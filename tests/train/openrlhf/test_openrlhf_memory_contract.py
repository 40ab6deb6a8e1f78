"""The memory estimate against OpenRLHF's OWN code (the installed openrlhf==0.11.2): the
tokens its log-prob pass puts in one micro-batch (``split_rollout_samples`` with the
arguments its CLI builds from our command) and the logits its ``Actor.forward`` makes
per token. Runs in ``nox -s openrlhf_contract``; skipped where OpenRLHF is not installed."""

from __future__ import annotations

import random
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

try:
    version("openrlhf")
except PackageNotFoundError:
    pytest.skip("openrlhf is not installed (nox -s openrlhf_contract)", allow_module_level=True)

from spade.train.openrlhf._flags import Layout, command
from spade.train.openrlhf._memory import LOGPROB_BYTES_PER_LOGIT, microbatch_tokens
from spade.train.openrlhf._probe import capture_args, install_stubs
from spade.train.recipe import TrainRecipe, load_recipe

pytestmark = pytest.mark.openrlhf
torch = pytest.importorskip("torch")


def _split(recipe: TrainRecipe, lengths: list[int], tmp: Path) -> list[int]:
    """Tokens per micro-batch of OpenRLHF's log-prob pass over samples of ``lengths``."""
    install_stubs()
    from openrlhf.trainer.ppo_utils.experience import Experience
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker

    args, _ = capture_args(command(recipe, Layout(tmp, "/models/m"), "0.11.2"))
    maker = object.__new__(RemoteExperienceMaker)
    maker.args = args
    maker.tokenizer = type("Tokenizer", (), {"pad_token_id": 0})()
    samples = [Experience(sequences=torch.ones(1, n, dtype=torch.long),
                          attention_mask=torch.ones(1, n, dtype=torch.long),
                          action_mask=torch.ones(1, n - 1, dtype=torch.bool),
                          total_length=torch.tensor([float(n)]),
                          response_length=torch.tensor([float(n)]), prompts=["p"],
                          labels=["l"]) for n in lengths]
    return [int(b.attention_mask.sum()) for b in maker.split_rollout_samples(samples)]


@pytest.mark.parametrize("name", ["games_qwen3_4b", "tool_use_qwen3_8b",
                                  "games_qwen3_30b_a3b"])
def test_logprob_microbatches_stay_within_the_bound(name: str, tmp_path: Path) -> None:
    recipe = load_recipe(name).with_overrides(**{"model.device": "cuda"})
    samples, max_len = recipe.grpo.samples_per_step, recipe.cluster.max_len
    rng = random.Random(0)
    bound = microbatch_tokens(recipe)["logprob"]
    for lengths in ([max_len] * samples,
                    [rng.randint(500, max_len) for _ in range(samples)],
                    [rng.randint(1000, 3000) for _ in range(samples)],
                    [760] * samples):
        assert max(_split(recipe, lengths, tmp_path)) <= bound, (name, bound)


def test_rounding_to_the_actors_can_double_the_cap(tmp_path: Path) -> None:
    """With 8 actors, ten first-fit micro-batches become eight: more tokens than the cap
    on one GPU, which is why the estimate allows up to twice the cap."""
    recipe = load_recipe("games_qwen3_4b").with_overrides(**{"cluster.max_len": 8192})
    cap = recipe.cluster.max_tokens_per_gpu
    assert cap is not None
    tokens = _split(recipe, [760] * recipe.grpo.samples_per_step, tmp_path)
    assert len(tokens) == 8 and max(tokens) > cap
    assert max(tokens) <= microbatch_tokens(recipe)["logprob"] == 2 * cap


def test_actor_forward_makes_six_bytes_of_logits_per_token(tiny_model_dir: Path) -> None:
    """OpenRLHF's Actor.forward on a bf16 model: bf16 logits from the model, then the fp32
    copy it takes log-probs from (what LOGPROB_BYTES_PER_LOGIT counts)."""
    install_stubs()
    import sys

    class _NoFusedCrossEntropy:  # flash-attn's fused loss is GPU-only: OpenRLHF's fallback
        @staticmethod
        def find_spec(name: str, *_: Any) -> None:
            if name == "flash_attn.ops.triton.cross_entropy":
                raise ImportError(name)

    sys.meta_path.insert(0, _NoFusedCrossEntropy())  # type: ignore[arg-type]
    from openrlhf.models import Actor

    actor = Actor(str(tiny_model_dir), attn_implementation="sdpa", param_dtype="bf16",
                  packing_samples=False)
    seen: list[Any] = []
    actor.model.register_forward_hook(lambda _m, _i, out: seen.append(
        (out["logits"].dtype, out["logits"].numel())))
    batch, tokens = 2, 24
    seq = torch.randint(0, actor.model.config.vocab_size, (batch, tokens))
    mask = torch.ones_like(seq)
    action = torch.ones((batch, tokens // 2), dtype=torch.bool)
    with torch.no_grad():
        logprobs, output = actor(seq, action, mask, return_output=True)
    assert logprobs.shape == action.shape
    [(model_dtype, numel)] = seen
    vocab = actor.model.config.vocab_size
    assert model_dtype == torch.bfloat16 and numel == batch * tokens * vocab
    assert output["logits"].dtype == torch.float32
    made = numel * 2 + output["logits"].numel() * output["logits"].element_size()
    assert made == batch * tokens * vocab * LOGPROB_BYTES_PER_LOGIT
