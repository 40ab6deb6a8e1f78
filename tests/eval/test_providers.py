"""Providers, the checkpoint resolver, protocols and CLI errors."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _evalrun import cli, data_dir, results, samples
from spade.eval._protocol import build, paper
from spade.eval.providers._base import ProviderOptions
from spade.eval.providers._checkpoint import resolve_checkpoint

from spade.errors import UserError


class _ChatServer(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []  # noqa: RUF012 - one server per test

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "tiny", "object": "model",
                                                "created": 0, "owned_by": "test"}]})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(req)
        # like a server that honours seeds: the reasoning text is drawn from the request's seed
        rng = random.Random(req["seed"]) if "seed" in req else random.Random()
        text = f"Thinking {rng.randrange(10**9)}. Bases 21 and 49 work: \\boxed{{70}}"
        self._send({
            "id": "x", "object": "chat.completion", "created": 0, "model": req["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })


@pytest.fixture
def chat_server() -> Iterator[str]:
    _ChatServer.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_provider_against_a_local_server(tmp_path: Path, chat_server: str) -> None:
    out = tmp_path / "run"
    assert cli("--model", f"openai:{chat_server}#tiny", "--suites", "aime25", "--limit", "2",
               "--samples", "2", "--temperature", "0.5", "--max-tokens", "64",
               "--out", str(out), "--data-dir", str(data_dir())) == 0
    e = results(out)["suites"]["aime25"]
    assert e["score"] == 0.5 and e["n_items"] == 2  # I-1 is 70, I-2 is not
    assert results(out)["model"]["name"] == "tiny"
    assert len(_ChatServer.seen) == 4
    req = _ChatServer.seen[0]
    assert req["temperature"] == 0.5 and req["max_tokens"] == 64 and req["top_p"] == 0.95
    assert req["top_k"] == 20 and isinstance(req["seed"], int)
    assert "\\boxed{}" in req["messages"][0]["content"]
    assert samples(out, "aime25")[0]["extracted"] == "70"


def test_every_sample_of_an_item_has_its_own_seed(tmp_path: Path, chat_server: str) -> None:
    args = ["--model", f"openai:{chat_server}#tiny", "--suites", "aime25", "--limit", "3",
            "--samples", "4", "--data-dir", str(data_dir())]
    assert cli(*args, "--out", str(tmp_path / "a")) == 0
    assert len(_ChatServer.seen) == 12 and len({r["seed"] for r in _ChatServer.seen}) == 12
    first = samples(tmp_path / "a", "aime25")
    assert len({r["completion"] for r in first}) == 12  # k samples of an item differ
    assert cli(*args, "--out", str(tmp_path / "b"), "--batch-size", "5") == 0
    again = samples(tmp_path / "b", "aime25")
    key = lambda r: (str(r["id"]), r["sample"])  # noqa: E731
    # the same command (even batched differently) gives the same samples
    assert sorted((key(r), r["seed"], r["completion"]) for r in again) == sorted(
        (key(r), r["seed"], r["completion"]) for r in first)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_cli_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "run")
    assert cli("--model", "oracle", "--suites", "aime24,nope", "--out", out) == 2
    assert "unknown suite 'nope'" in _one_line_error(capsys)
    assert cli("--model", "hf:/does/not/exist", "--suites", "aime24", "--out", out) == 2
    assert "does not exist" in _one_line_error(capsys)
    assert cli("--model", "openai:http://127.0.0.1:9/v1#m", "--suites", "aime24",
               "--out", out) == 2
    assert "cannot reach OpenAI-compatible server" in _one_line_error(capsys)
    assert cli("--model", "openai:ftp://127.0.0.1:9/v1#m", "--suites", "aime24",
               "--out", out) == 2
    assert "http(s) URL" in _one_line_error(capsys)
    assert cli("--model", "openai:http://127.0.0.1:9/v1", "--suites", "aime24",
               "--out", out) == 2
    assert "openai needs BASE_URL#MODEL" in _one_line_error(capsys)
    assert cli("--model", "gpt4", "--suites", "aime24", "--out", out) == 2
    assert "unknown model spec" in _one_line_error(capsys)
    assert cli("--model", f"replay:{tmp_path}/none.jsonl", "--suites", "aime24",
               "--out", out) == 2
    assert "replay file not found" in _one_line_error(capsys)
    assert cli("--model", "oracle", "--suites", "aime24", "--samples", "0", "--out", out) == 2
    assert "--samples" in _one_line_error(capsys)


def _model_dir(p: Path) -> Path:
    p.mkdir(parents=True)
    (p / "config.json").write_text("{}")
    return p


def test_checkpoint_resolver(tmp_path: Path) -> None:
    model = _model_dir(tmp_path / "model")
    assert resolve_checkpoint(str(model)) == model
    run = tmp_path / "run"
    for n in (100, 20, 300):
        _model_dir(run / "checkpoints" / f"step-{n}")
    (run / "checkpoints" / "step-400").mkdir()  # incomplete: no config.json
    assert resolve_checkpoint(str(run)).name == "step-300"
    assert resolve_checkpoint(f"{run}@latest").name == "step-300"
    assert resolve_checkpoint(f"{run}@step-20").name == "step-20"
    with pytest.raises(UserError, match="no best checkpoint"):
        resolve_checkpoint(f"{run}@best")
    (run / "checkpoints" / "best.txt").write_text("step-100\n")
    assert resolve_checkpoint(f"{run}@best").name == "step-100"
    for bad, msg in ((f"{run}@step-7", "no checkpoint step-7"), (f"{run}@first", "selector"),
                     (f"{model}@best", "model directory"), (str(tmp_path), "neither")):
        with pytest.raises(UserError, match=msg):
            resolve_checkpoint(bad)


class _FakeEngine:
    """vLLM's LLM surface used by VLLMPolicy (vLLM cannot be installed here)."""

    def __init__(self) -> None:
        from transformers import AutoTokenizer

        from spade.policy import prepare_smollm2

        self.tokenizer = AutoTokenizer.from_pretrained(prepare_smollm2(), local_files_only=True)
        self.calls: list[tuple[list[dict], dict]] = []

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    def generate(self, prompts: list[dict], params: Any, use_tqdm: bool = False) -> list[Any]:
        per = params if isinstance(params, list) else [params] * len(prompts)
        assert len(per) == len(prompts)
        self.calls.append((prompts, per[0], per))
        out = []
        for p in per:  # honours each request's seed, as vLLM does
            rng = random.Random(p["seed"]) if p.get("seed") is not None else random.Random()
            text = f"Hmm {rng.randrange(1000)}. ANSWER: B"
            ids = self.tokenizer.encode(text)
            out.append(SimpleNamespace(outputs=[SimpleNamespace(
                text=text, token_ids=ids, logprobs=None, finish_reason="stop")]))
        return out


def test_vllm_provider_with_a_fake_engine(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import shutil

    from spade.eval.providers import vllm as vllm_provider

    from spade.policy import prepare_smollm2

    model = tmp_path / "model"  # the real config and tokenizer, no weights: vLLM is faked
    shutil.copytree(prepare_smollm2(), model, ignore=shutil.ignore_patterns("*.safetensors"))
    engine = _FakeEngine()
    prov = vllm_provider.make(str(model), ProviderOptions(),
                              engine=engine, sampling_params_cls=dict)
    from spade.eval._runner import EvalConfig, run_eval

    cfg = EvalConfig(model="vllm:fake", suites=("gpqa_diamond",), out=tmp_path / "run",
                    data_dir=data_dir(), overrides={"limit": 8, "samples": 2}, quiet=True)
    res = run_eval(cfg, provider=prov)
    e = res["suites"]["gpqa_diamond"]
    assert e["n_items"] == 8 and 0.0 < e["score"] < 1.0  # "B" is right for some shuffles
    prompts, params, per = engine.calls[0]
    assert len(prompts) == 16 and params["temperature"] == 0.7 and params["max_tokens"] == 32768
    assert len({p["seed"] for p in per}) == 16  # one seed per (item, sample)
    assert "prompt_token_ids" in prompts[0]
    assert res["model"]["name"] == "model"
    assert res["model"]["sha256_scope"] == "weights+config+tokenizer+chat_template"


def test_protocol_names() -> None:
    assert paper("aime24").samples == 64 and paper("aime24").top_k == 20
    assert build("aime24", {"samples": 64, "temperature": 1.0}).name == "paper"
    assert build("aime24", {"samples": 4}).name == "custom"
    assert build("aime24", {"limit": 3}).name == "custom"
    assert build("gpqa_diamond", {}).temperature == 0.7
    assert build("livecodebench", {}, {"lcb_files": "x"}).name == "paper"
    rec = build("livecodebench", {"max_tokens": 100}).as_record()
    assert rec["max_tokens"] == 100 and rec["per_test_timeout_s"] == 6.0 and rec["name"] == "custom"


def test_a_prompt_longer_than_the_window_is_reported(tmp_path: Path) -> None:
    from spade.eval._runner import EvalConfig, run_eval
    from spade.eval.providers._policy import PolicyProvider

    from spade.policy import ScriptedPolicy

    policy = ScriptedPolicy(lambda m: "\\boxed{1}", context_window=40)
    prov = PolicyProvider(policy, "scripted", {"spec": "scripted", "name": "s"}, 4)
    cfg = EvalConfig(model="scripted", suites=("aime25",), out=tmp_path / "run",
                     data_dir=data_dir(), overrides={"limit": 2, "samples": 1}, quiet=True)
    entry = run_eval(cfg, provider=prov)["suites"]["aime25"]
    assert entry["prompt_too_long"] == 2 and entry["score"] == 0.0
    assert {r["finish_reason"] for r in samples(tmp_path / "run", "aime25")} == {
        "prompt_too_long"}
