"""``spade eval run``: evaluate a model on benchmark suites into a resumable run directory.

The run directory is the run's identity: rerunning the same command continues from the
last scored sample (the default ``--out`` is derived from the arguments, so this holds
without ``--out`` too). ``--resume`` insists on continuing; ``--new-run`` moves the
directory aside to ``DIR.prev-N`` and starts over; a directory holding a run with other
arguments is refused. Ctrl-C stops after the current batch and prints the command that
resumes.

Presets: ``paper`` is each suite's published protocol (e.g. AIME: 64 samples of up to
32,768 tokens); ``quick`` is a small slice for a CPU or a smoke test (1 sample, 512
tokens, the first 5 items; Reasoning Gym: 5 of each of its 100 datasets). Without
``--preset`` a local model (smollm2, hf:, vllm:) on a machine without a GPU gets ``quick``,
anything else ``paper``. Explicit sampling options override the preset.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spade.eval.inspect_export import cli as export_cli

from spade.cli import _args
from spade.errors import UserError

SUITE_IDS = ("aime24,aime25,aime26,gpqa_diamond,livecodebench,reasoning_gym,bfcl_v4,tau2,acebench")
#: The games-setting table: what `nox -s train eval` scores without --suites.
DEFAULT_SUITES = "aime25,aime26,gpqa_diamond,livecodebench,reasoning_gym"
#: Where `spade train` puts its runs by default (see spade.rundir.default_run_dir).
TRAIN_RUNS = Path("runs") / "train"
MODEL_HELP = ("smollm2 | hf:PATH[@latest|@best|@step-N] | vllm:PATH | openai:BASE_URL#MODEL | "
              "replay:FILE.jsonl | oracle (PATH: a local model directory or training run; "
              "nothing is downloaded from a model hub)")
#: preset -> protocol overrides (None: the suite's paper preset unchanged)
PRESETS: dict[str, dict[str, int]] = {
    "paper": {},
    "quick": {"samples": 1, "max_tokens": 512, "limit": 5},
}
_LOCAL_SCHEMES = ("smollm2", "hf", "vllm")
#: protocol field -> the type of its option (``--samples`` ...), which ``--set`` checks too
PROTOCOL_TYPES: dict[str, Any] = {
    "samples": _args.samples, "temperature": _args.temperature, "top_p": _args.top_p,
    "top_k": _args.non_negative_int, "max_tokens": _args.max_tokens,
    "limit": _args.positive_int, "fewshot": _args.fewshot,
}


def _add_run(sub: Any) -> None:
    from spade.cli import HelpFormatter

    run = sub.add_parser(
        "run", help="evaluate a model (rerunning the same command resumes it)",
        description=__doc__, formatter_class=HelpFormatter, allow_abbrev=False,
    )
    run.add_argument("--model", metavar="SPEC",
                     help=MODEL_HELP + "; default: the latest checkpoint of the newest "
                          "training run under runs/train/ (what `spade train` wrote)")
    run.add_argument("--suites", metavar="LIST", default=DEFAULT_SUITES,
                     help=f"comma-separated suite ids: {SUITE_IDS}")
    run.add_argument("--out", type=_args.output_dir, metavar="DIR",
                     help="run directory (default: runs/eval/<label or model>-<hash of the "
                          "arguments>, so rerunning the same command resumes)")
    _args.add_run_modes(run, "--out", "--out")
    run.add_argument("--preset", choices=sorted(PRESETS),
                     help="protocol preset (default: quick for a local model without a GPU, "
                          "else paper)")
    run.add_argument("--limit", type=_args.positive_int, metavar="N",
                     help="first N items (Reasoning Gym: first N of every dataset)")
    run.add_argument("--samples", type=_args.samples, metavar="K",
                     help="samples per item (default: the preset's)")
    run.add_argument("--temperature", type=_args.temperature, metavar="T",
                     help="sampling temperature >= 0 (default: the preset's)")
    run.add_argument("--top-p", type=_args.top_p, metavar="P",
                     help="nucleus mass in (0, 1] (default: the preset's)")
    run.add_argument("--top-k", type=_args.non_negative_int, metavar="K",
                     help="top-k cut-off, 0 = off (default: the preset's)")
    run.add_argument("--max-tokens", type=_args.max_tokens, metavar="N",
                     help="completion token budget (default: the preset's)")
    run.add_argument("--fewshot", type=_args.fewshot, metavar="N",
                     help="solved demonstrations before each question: the first N items "
                          "(of each Reasoning Gym dataset), then not scored (default: 0)")
    run.add_argument("--seed", type=_args.non_negative_int, default=0,
                     help="run seed; every sample's seed is derived from it")
    run.add_argument("--label", help="method name for report tables (default: the model name)")
    run.add_argument("--data-dir", type=Path, metavar="DIR",
                     help="benchmark data (default: $SPADE_DATA_DIR, else ../shared/data "
                          "next to the project)")
    run.add_argument("--lcb-files", type=Path, metavar="PATH",
                     help="official LiveCodeBench test*.jsonl file or folder (private tests)")
    run.add_argument("--user-model", metavar="SPEC",
                     help="user simulator for tau2 and ACEBench agent multi_turn: any model "
                          "spec (openai:URL#MODEL, hf:PATH, vllm:PATH); without it those "
                          "parts are unavailable")
    run.add_argument("--acebench-dir", type=Path, metavar="DIR",
                     help="ACEBench checkout (default: $SPADE_ACEBENCH_DIR, else "
                          "../shared/upstream/acebench next to the project)")
    run.add_argument("--batch-size", type=_args.batch_size, metavar="N",
                     help="requests per provider call (default: hf 16, others 64)")
    run.add_argument("--device", type=_args.device, default="auto",
                     help="local models: auto, cpu, cuda or cuda:N")
    run.add_argument("--dtype", type=_args.dtype, default="auto",
                     help="local model weights: auto (float32 on CPU), float32, float16, "
                          "bfloat16")
    run.add_argument("--quiet", action="store_true",
                     help="nothing on stderr but errors (no progress, no summary table)")
    _args.add_set(run, f"the protocol ({', '.join(PROTOCOL_TYPES)})", "temperature=0.6")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    _add_run(sub)
    export_cli.add_parser(sub)


def _suites(text: str) -> tuple[str, ...]:
    from spade.eval.suites import SUITES

    suites = tuple(s.strip() for s in text.split(",") if s.strip())
    if not suites:
        raise UserError("--suites is empty")
    for sid in suites:
        SUITES.get(sid)
    if len(set(suites)) != len(suites):
        raise UserError("--suites lists a suite twice")
    return suites


def _is_local(model: str) -> bool:
    return model.partition(":")[0] in _LOCAL_SCHEMES


def _preset(model: str, preset: str | None, device: str) -> str:
    """The explicit preset, else quick for a local model on a machine without a GPU."""
    if preset:
        return preset
    if not _is_local(model) or device.startswith("cuda"):
        return "paper"
    if device == "cpu":
        return "quick"
    try:
        import torch
    except ImportError:
        return "quick"
    return "paper" if torch.cuda.is_available() else "quick"


def _check_model(model: str, device: str) -> None:
    """Spec form, local path, device: all before anything heavy loads."""
    from spade.modelspec import check_local, check_spec

    check_spec(model, extra=("replay:FILE.jsonl", "oracle"))
    check_local(model)
    if _is_local(model):
        _args.check_device_available(device)


def latest_training_run(root: Path) -> str:
    """``hf:<newest run under root>@latest``: the model `nox -s train eval` evaluates."""
    runs = [d for d in root.glob("*") if (d / "checkpoints").is_dir()] if root.is_dir() else []
    if not runs:
        raise UserError(f"no --model given and no training run with checkpoints under {root}/ "
                        "(run `spade train` first, or pass --model SPEC)")
    newest = max(runs, key=lambda d: (d / "checkpoints").stat().st_mtime)
    return f"hf:{newest}@latest"


def protocol_sets(sets: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """``--set`` pairs as protocol overrides, each checked as its option checks it."""
    out: dict[str, Any] = {}
    for key, value in sets:
        parse = PROTOCOL_TYPES.get(key)
        if parse is None:
            raise UserError(f"--set {key}: not a protocol field; one of "
                            f"{', '.join(PROTOCOL_TYPES)}")
        try:
            out[key] = parse(str(value))
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"--set {key}={value}: {exc}") from None
    return out


def eval_config(model: str, suites: str | Sequence[str], *, out: Path | None = None,
                preset: str | None = None, seed: int = 0, label: str | None = None,
                protocol: Mapping[str, Any] | None = None, user_model: str | None = None,
                lcb_files: Path | None = None, acebench_dir: Path | None = None,
                data_dir: Path | None = None, batch_size: int | None = None,
                device: str = "auto", dtype: str = "auto", quiet: bool = False) -> Any:
    """The run's :class:`spade.eval._runner.EvalConfig` (``protocol``: the overridden
    protocol fields, None values ignored); what ``spade eval run`` and the experiment
    pipeline both evaluate."""
    import dataclasses

    from spade.eval._runner import EvalConfig
    from spade.eval.data import resolve_data_dir

    from spade.rundir import default_run_dir

    suite_ids = _suites(suites if isinstance(suites, str) else ",".join(suites))
    _check_model(model, device)
    preset = _preset(model, preset, device)
    overrides: dict[str, Any] = dict(PRESETS[preset])
    overrides.update({k: v for k, v in (protocol or {}).items() if v is not None})
    extra = {}
    if lcb_files is not None:
        extra["lcb_files"] = str(lcb_files.expanduser().resolve())
    if user_model is not None:
        extra["user_model"] = user_model
    if acebench_dir is not None:
        extra["acebench_dir"] = str(acebench_dir.expanduser().resolve())
    cfg = EvalConfig(
        model=model, suites=suite_ids, out=Path("."), data_dir=resolve_data_dir(data_dir),
        seed=seed, label=label, overrides=overrides, extra=extra,
        batch_size=batch_size, device=None if device == "auto" else device,
        dtype=dtype, quiet=quiet, preset=preset,
    )
    if out is None:
        name = label or model.partition("@")[0].rstrip("/").split("/")[-1]
        out = default_run_dir("eval", name, cfg.identity())
    return dataclasses.replace(cfg, out=Path(out).resolve())


def build_config(args: argparse.Namespace) -> Any:
    """The run's :class:`spade.eval._runner.EvalConfig` from the parsed arguments."""
    if args.model is None:
        args.model = args.model_default = latest_training_run(TRAIN_RUNS)
    given = {"samples": args.samples, "temperature": args.temperature, "top_p": args.top_p,
             "top_k": args.top_k, "max_tokens": args.max_tokens, "limit": args.limit,
             "fewshot": args.fewshot}
    from spade.config import set_dotted

    set_dotted(given, protocol_sets(args.sets))
    return eval_config(
        args.model, args.suites, out=args.out, preset=args.preset, seed=args.seed,
        label=args.label, protocol=given, user_model=args.user_model,
        lcb_files=args.lcb_files, acebench_dir=args.acebench_dir, data_dir=args.data_dir,
        batch_size=args.batch_size, device=args.device, dtype=args.dtype, quiet=args.quiet)


def _quiet_libraries() -> None:
    """Library progress bars and advice off too (tqdm, transformers, the hub)."""
    for var in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS",
                "TRANSFORMERS_NO_ADVISORY_WARNINGS"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def evaluate(cfg: Any, *, resume: bool = False, new_run: bool = False,
             preset_given: bool = True, model_default: str | None = None) -> dict[str, Any]:
    """Run (or resume) the evaluation ``cfg`` in its run directory; prints its summary
    (JSON on stdout, a table on stderr) and returns its results."""
    from spade.eval._progress import Progress
    from spade.eval._runner import run_eval
    from spade.eval.store import RUN_FILE

    from spade.rundir import claim_run_dir

    if cfg.quiet:
        _quiet_libraries()
    say = Progress(quiet=cfg.quiet).note
    claim_run_dir(cfg.out, holds_run=lambda d: (d / RUN_FILE).is_file(),
                  own_names=("samples", RUN_FILE), resume=resume, new_run=new_run, say=say)
    if model_default:
        say(f"no --model: evaluating the newest training run, {model_default}")
    if cfg.preset != "paper" and not preset_given:
        say(f"no GPU for a local model: using the quick preset ({PRESETS['quick']}); "
            "pass --preset paper for the published protocol")
    results = run_eval(cfg)
    Progress(quiet=cfg.quiet).summary(results["suites"], cfg.preset)
    summary = {sid: {k: e.get(k) for k in ("status", "score", "stderr", "n_items", "metric")}
               for sid, e in results["suites"].items()}
    with Progress(quiet=cfg.quiet).chatter():
        inspect_dir = export_cli.export_after_run(cfg.out)
    print(json.dumps({"out": str(cfg.out), "preset": cfg.preset, "inspect": inspect_dir,
                      "suites": summary}, indent=2))
    bad = [sid for sid, e in results["suites"].items() if e["status"] != "ok"]
    if bad and not cfg.quiet:
        print(f"spade eval: not scored: {', '.join(bad)} (see results.json)", file=sys.stderr)
    return dict(results)


def run(args: argparse.Namespace) -> int:
    if args.action == export_cli.ACTION:
        return export_cli.run(args)
    if args.quiet:
        _quiet_libraries()
    cfg = build_config(args)
    args.resolved_out = cfg.out
    evaluate(cfg, resume=args.resume, new_run=args.new_run, preset_given=args.preset is not None,
             model_default=getattr(args, "model_default", None))
    return 0


def resume_command(args: argparse.Namespace) -> str | None:
    from spade.rundir import resume_command as command

    out = getattr(args, "resolved_out", None)
    return None if out is None else command("spade eval", args.argv, ("--out",), Path(out))
