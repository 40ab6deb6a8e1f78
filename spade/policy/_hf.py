"""Generation with transformers: batched, CPU or GPU, local model directories only.

Log-probs: for each sampled token, ``log softmax(logits / T)`` of the raw model logits, i.e.
the policy's log-probability at the sampling temperature BEFORE top-k/top-p truncation —
the quantity GRPO trainers recompute (TRL and OpenRLHF divide the logits by the temperature
and apply no truncation). With greedy decoding (T = 0) it is the plain ``log softmax``.

Batching: requests sharing their sampling settings (all but the seed) are sorted by length
(longest first), cut into chunks of ``max_batch_size``, left-padded with an attention mask
and decoded together over one KV cache. Reproducibility: every row samples from its own
generator seeded with its request's seed (see ``_hf_runtime``), so a request's completion
does not depend on the rest of its batch; seeded requests never touch torch's global RNG.
A prompt that fills the context window comes back empty with finish reason
``prompt_too_long``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from spade.errors import UserError
from spade.policy._stops import first_stop, stop_prefix_length
from spade.policy._template import ChatTemplate, TemplatedPolicy
from spade.policy._types import BatchParams, Generation, SamplingParams, per_request


def check_model_dir(path: str | Path) -> Path:
    """A local transformers model directory, or a one-line UserError saying what is wrong."""
    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"model path does not exist: {p}")
    if not p.is_dir() or not (p / "config.json").is_file():
        raise UserError(f"not a transformers model directory (no config.json): {p}")
    return p


class HFPolicy(TemplatedPolicy):
    """``TokenPolicy`` over a transformers causal LM and its tokenizer."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "hf",
        max_batch_size: int = 64,
        max_batch_tokens: int = 1 << 16,
        template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.max_batch_size = max(1, max_batch_size)
        #: rows x (longest prompt + token budget) per forward: a few long prompts get a
        #: small batch of their own instead of padding a wide one (memory and time)
        self.max_batch_tokens = max(1, max_batch_tokens)
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        extra = [gen_eos] if isinstance(gen_eos, int) else list(gen_eos or [])
        self.template = ChatTemplate(
            tokenizer, extra_eos_ids=extra, template_kwargs=template_kwargs
        )
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else self.template.eot_id

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        *,
        device: str | None = None,
        dtype: str = "auto",
        name: str | None = None,
        **kwargs: Any,
    ) -> HFPolicy:
        """Load a local model directory (never the hub). ``dtype="auto"``: float32 on CPU,
        the checkpoint's dtype on GPU."""
        p = check_model_dir(path)
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype == "auto" and device == "cpu":
            dtype = "float32"
        torch_dtype: Any = "auto" if dtype == "auto" else getattr(torch, dtype)
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        dtype_kw = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
        try:
            tokenizer = AutoTokenizer.from_pretrained(p, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(
                p, local_files_only=True, **{dtype_kw: torch_dtype}
            )
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"cannot load model from {p}: {first}") from exc
        model = cast(Any, model).to(device)
        model.eval()
        return cls(model, tokenizer, name=name or p.name, **kwargs)

    @property
    def context_window(self) -> int:
        config = self.model.config
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        window = getattr(text, "max_position_embeddings", None)
        return int(window or min(self.tokenizer.model_max_length, 1 << 20))

    def generate(
        self, prompts: Sequence[Sequence[int]], params: BatchParams
    ) -> list[Generation]:
        rows = per_request(params, len(prompts))
        results: list[Generation | None] = [None] * len(prompts)
        window = self.context_window
        groups: dict[SamplingParams, list[int]] = {}
        for i, p in enumerate(prompts):
            if len(p) >= window:
                results[i] = Generation("", (), (), "prompt_too_long")
            elif rows[i].max_new_tokens <= 0 or not p:
                results[i] = Generation("", (), (), "length")
            else:
                groups.setdefault(replace(rows[i], seed=None), []).append(i)
        for shared, members in groups.items():
            members.sort(key=lambda i: -len(prompts[i]))
            for chunk in self._chunks(members, prompts, shared.max_new_tokens):
                self._run_chunk(chunk, prompts, rows, shared, window, results)
        return [r for r in results if r is not None]

    def _chunks(self, members: list[int], prompts: Sequence[Sequence[int]],
                max_new: int) -> list[list[int]]:
        """Batches of ``members`` (longest prompt first) within both batch limits."""
        out: list[list[int]] = []
        for i in members:
            chunk = out[-1] if out else None
            width = len(prompts[chunk[0]]) + max_new if chunk else 0
            if (chunk is None or len(chunk) >= self.max_batch_size
                    or (len(chunk) + 1) * width > self.max_batch_tokens):
                out.append([i])
            else:
                chunk.append(i)
        return out

    def _run_chunk(self, chunk: list[int], prompts: Sequence[Sequence[int]],
                   rows: list[SamplingParams], shared: SamplingParams, window: int,
                   results: list[Generation | None]) -> None:
        from spade.policy._hf_runtime import generate_batch

        stops = list(shared.stop)
        tail = 4 * max((len(s) for s in stops), default=0) + 4

        def stopped(row: list[int]) -> bool:
            return first_stop(self._text(row[-tail:]), stops) is not None

        out, logprobs = generate_batch(
            self.model,
            [list(prompts[i]) for i in chunk],
            pad_id=self.pad_id,
            eos_ids=sorted(self.template.eos_ids),
            budgets=[min(shared.max_new_tokens, window - len(prompts[i])) for i in chunk],
            seeds=[rows[i].seed for i in chunk],
            temperature=shared.temperature,
            top_k=shared.top_k,
            top_p=shared.top_p,
            stopped=stopped if stops else None,
        )
        for i, row, lps in zip(chunk, out, logprobs, strict=True):
            results[i] = self._finish(row, lps, stops)

    def _text(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def _finish(self, row: list[int], logprobs: list[float], stops: Sequence[str]) -> Generation:
        """Trim one generated row at EOS (kept) or at a stop string; pads are dropped."""
        cut = next((k + 1 for k, t in enumerate(row) if t in self.template.eos_ids), None)
        ids = row if cut is None else row[:cut]
        at = stop_prefix_length(ids, stops, self._text) if stops else None
        if at is not None:
            ids = ids[:at]
            text = self._text(ids)
            found = first_stop(text, stops)
            text = text[: found[0]] if found else text
            return Generation(text, tuple(ids), tuple(logprobs[: len(ids)]), "stop")
        reason = "length" if cut is None else "stop"
        return Generation(self._text(ids), tuple(ids), tuple(logprobs[: len(ids)]), reason)
