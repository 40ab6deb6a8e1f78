"""Regenerate the designer's warm-start data set from the families.

    python -m spade.families.warmstart [--recipe cpu_demo] [--prompts 2] [--check]

Renders (designer prompt -> design + hint) pairs for every module of every family with the
recipe's designer settings (``spade.families._pairs``), validates every module with its
hint in the sandbox with the recipe's validation settings, keeps the accepted ones and
writes ``data/warmstart.jsonl`` plus ``data/warmstart.json`` (the set's sha256, the library
version, the prompt settings, what was dropped and why). Deterministic: run it again after
the validator, a template or the prompts change, and commit both files. ``--check``
writes nothing and fails when the committed set differs from a fresh rendering.

A training recipe's ``warm_start`` stage reads the committed set and records its sha256.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from spade.config import RunConfig
from spade.errors import UserError
from spade.families._pairs import (
    Pair,
    jsonl_bytes,
    prompt_settings,
    render_pairs,
    sha256_of,
)
from spade.families._registry import PACKAGE, all_instances, families_version
from spade.families.measure import bundled_rates
from spade.textfile import atomic_write_bytes, atomic_write_text, parse_jsonl

DATA_FILE = "warmstart.jsonl"
MANIFEST_FILE = "warmstart.json"


def data_dir() -> Path:
    """Where the bundled set lives (inside the package, so it ships with it)."""
    return Path(str(resources.files(PACKAGE).joinpath("data")))


def read_manifest(folder: Path | None = None) -> dict[str, Any]:
    path = (folder or data_dir()) / MANIFEST_FILE
    if not path.is_file():
        raise UserError(f"no warm-start data manifest at {path}; regenerate it with "
                        "python -m spade.families.warmstart")
    return dict(json.loads(path.read_text("utf-8")))


def read_pairs(folder: Path | None = None) -> tuple[list[dict[str, Any]], str]:
    """The committed pairs and their sha256; a one-line ``UserError`` when the file does not
    match its manifest (edited or stale)."""
    folder = folder or data_dir()
    path = folder / DATA_FILE
    if not path.is_file():
        raise UserError(f"no warm-start data at {path}; regenerate it with "
                        "python -m spade.families.warmstart")
    raw = path.read_bytes()
    digest = sha256_of(raw)
    expected = read_manifest(folder).get("sha256")
    if digest != expected:
        raise UserError(f"{path}: sha256 {digest[:12]} does not match its manifest "
                        f"({str(expected)[:12]}); regenerate it with "
                        "python -m spade.families.warmstart")
    return parse_jsonl(raw.decode("utf-8")), digest


def _validator(config: RunConfig) -> Any:
    """``validate([(source, hint)]) -> [reason or '']`` on one sandbox, the run's settings."""
    from spade.cycle._setup import sandbox_limits, validation_config
    from spade.sandbox import Sandbox
    from spade.validate import validate_batch

    def validate(items: list[tuple[str, str]]) -> list[str]:
        with Sandbox(config.sandbox.isolation, sandbox_limits(config),
                     allow_weak=config.sandbox.allow_weak) as sandbox:
            verdicts = validate_batch(items, sandbox=sandbox, config=validation_config(config),
                                      concurrency=config.validation.concurrency)
        return ["" if v.valid else f"{v.stage}: {v.reason}" for v in verdicts]

    return validate


def build(config: RunConfig, prompts_per_module: int
          ) -> tuple[list[Pair], dict[str, Any]]:
    """The pairs and their manifest for the run config ``config`` (its designer and
    validation settings, its corpus and its seed)."""
    from spade.corpus import load_corpus

    d = config.designer
    corpus = load_corpus(config.corpus.path or d.setting) if d.use_corpus else None
    rates = bundled_rates()
    pairs, dropped = render_pairs(all_instances(), d, corpus, rates, seed=config.seed,
                                  prompts_per_module=prompts_per_module,
                                  validate=_validator(config))
    data = jsonl_bytes(pairs)
    manifest = {
        "families_version": families_version(),
        "sha256": sha256_of(data),
        "pairs": len(pairs),
        "modules": len({p.instance for p in pairs}),
        "prompts_per_module": prompts_per_module,
        "seed": config.seed,
        "prompt": prompt_settings(d),
        "corpus": None if corpus is None else {"path": corpus.path.name, "sha256": corpus.sha256},
        "validation": config.validation.model_dump(mode="json"),
        "dropped": dropped,
    }
    return pairs, manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spade.families.warmstart",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="cpu_demo",
                        help="training recipe whose designer settings shape the prompts")
    parser.add_argument("--prompts", type=int, default=2, help="prompts per module")
    parser.add_argument("--out", type=Path, default=None, help="folder (default: bundled)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed set instead of writing")
    args = parser.parse_args(argv)
    try:
        if args.prompts < 1:
            raise UserError("--prompts must be at least 1")
        from spade.train.recipe import load_recipe

        config = load_recipe(args.recipe).selfplay
        pairs, manifest = build(config, args.prompts)
        folder = args.out or data_dir()
        if args.check:
            committed = read_manifest(folder).get("sha256")
            if committed != manifest["sha256"]:
                raise UserError(f"the committed warm-start set ({str(committed)[:12]}) differs "
                                f"from a fresh rendering ({manifest['sha256'][:12]}); "
                                "regenerate it")
            print(f"warm-start set up to date: {manifest['pairs']} pairs, "
                  f"sha256 {manifest['sha256']}")
            return 0
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(folder / DATA_FILE, jsonl_bytes(pairs))
        atomic_write_text(folder / MANIFEST_FILE,
                          json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{manifest['pairs']} pairs from {manifest['modules']} modules "
          f"({len(manifest['dropped'])} dropped), sha256 {manifest['sha256']}")
    for name, reason in manifest["dropped"].items():
        print(f"  dropped {name}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
