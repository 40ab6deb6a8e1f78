"""Check a ``train_ppo_ray`` command against the INSTALLED OpenRLHF, without a GPU.

Run as ``python -m train.openrlhf._probe ARG...`` in an environment that has ``openrlhf``
(installed with ``--no-deps`` on a CPU machine is enough). The CLI module is executed as
``__main__`` for real: its own argument parser parses the arguments and its own
post-parse checks run; the heavy GPU stacks it imports (ray, vLLM, DeepSpeed, flash-attn)
are replaced by inert stand-ins, and the run stops where training would begin
(the first Ray actor group), after ``train()``'s own placement checks (colocated
engines must cover every GPU; a colocated reference model needs the actor's placement).
Prints one JSON line: ``{"ok": true, "flags": N}`` or
``{"ok": false, "error": "..."}``; exit 0 or 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import io
import json
import runpy
import sys
import types
from typing import Any
from unittest import mock

#: Top-level modules replaced by stand-ins (GPU-only or heavy, not needed to parse flags).
STUBBED = ("ray", "vllm", "deepspeed", "flash_attn", "wandb", "torchdata", "PIL",
           "transformers_stream_generator", "peft", "bitsandbytes", "optimum",
           "liger_kernel", "modelscope")
CLI = "openrlhf.cli.train_ppo_ray"


class _Stub(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = mock.MagicMock(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves a stand-in for every module under :data:`STUBBED` (with a real ModuleSpec,
    which transformers' ``find_spec`` checks need)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Stub(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Reached(Exception):
    """Raised where training would start: every check before it has passed."""


def install_stubs() -> None:
    """Serve stand-ins for :data:`STUBBED` from now on (idempotent)."""
    if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StubFinder())


def capture_args(args: list[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """Run the installed CLI on ``args`` up to where training starts; return the final,
    post-processed arguments OpenRLHF would train with and its parser. The CLI's own
    rejections propagate (``SystemExit`` from the parser, ``AssertionError`` from its
    checks)."""
    install_stubs()
    import openrlhf.trainer.ray
    import openrlhf.trainer.ray.launcher
    import openrlhf.utils

    seen: list[argparse.Namespace] = []

    def strategy(parsed: argparse.Namespace) -> Any:
        seen.append(parsed)
        return mock.MagicMock(name="strategy")

    def stop(*_: Any, **__: Any) -> None:  # train() places its first actor group here
        raise _Reached(seen[-1])

    parsers: list[argparse.ArgumentParser] = []
    original = argparse.ArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        parsers.append(self)
        return original(self, *a, **k)

    saved = sys.argv
    sys.argv = [CLI, *args]
    try:
        with mock.patch.object(openrlhf.utils, "get_strategy", strategy), \
                mock.patch.object(openrlhf.trainer.ray, "create_vllm_engines",
                                  mock.MagicMock(name="create_vllm_engines")), \
                mock.patch.object(openrlhf.trainer.ray.launcher, "RayActorGroup", stop), \
                mock.patch.object(argparse.ArgumentParser, "parse_args", capture):
            runpy.run_module(CLI, run_name="__main__")
    except _Reached as reached:
        return reached.args[0], parsers[-1]
    finally:
        sys.argv = saved
    raise RuntimeError("the CLI returned before training started")


def check_flags(args: list[str]) -> dict[str, Any]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            _, parser = capture_args(args)
        except SystemExit:
            lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            return {"ok": False, "error": lines[-1] if lines else "the parser exited"}
        except AssertionError as exc:
            return {"ok": False, "error": f"OpenRLHF's argument check failed: "
                                          f"{' '.join(str(exc).split())}"}
        except Exception as exc:  # the CLI's own post-parse code tripped over the flags
            return {"ok": False, "error": f"OpenRLHF's CLI failed: {type(exc).__name__}: {exc}"}
    flags = {s for a in parser._actions for s in a.option_strings}
    # argparse also accepts unambiguous prefixes: a generated flag must be exact
    inexact = [a for a in args if a.startswith("--") and a not in flags]
    if inexact:
        return {"ok": False, "error": f"not an exact flag of this OpenRLHF: {inexact[0]}"}
    return {"ok": True, "flags": len(flags)}


def main() -> int:
    result = check_flags(sys.argv[1:])
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
