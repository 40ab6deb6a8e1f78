"""Check a ``train_ppo_ray`` command against the INSTALLED OpenRLHF, without a GPU.

Run as ``python -m train.openrlhf._probe ARG...`` in an environment that has ``openrlhf``
(installed with ``--no-deps`` on a CPU machine is enough). The CLI module is executed as
``__main__`` for real: its own argument parser parses the arguments and its own
post-parse checks run; the heavy GPU stacks it imports (ray, vLLM, DeepSpeed, flash-attn)
are replaced by inert stand-ins, and the run stops where training would begin
(``get_strategy``). Prints one JSON line: ``{"ok": true, "flags": N}`` or
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


def probe(args: list[str]) -> dict[str, Any]:
    sys.meta_path.insert(0, _StubFinder())
    import openrlhf.utils

    def stop(parsed: argparse.Namespace) -> None:
        raise _Reached(parsed)

    parsers: list[argparse.ArgumentParser] = []
    original = argparse.ArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        parsers.append(self)
        return original(self, *a, **k)

    err = io.StringIO()
    sys.argv = [CLI, *args]
    with mock.patch.object(openrlhf.utils, "get_strategy", stop), \
            mock.patch.object(argparse.ArgumentParser, "parse_args", capture), \
            contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_module(CLI, run_name="__main__")
        except _Reached:
            flags = {s for a in parsers[-1]._actions for s in a.option_strings}
            return {"ok": True, "flags": len(flags)}
        except SystemExit:
            lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            return {"ok": False, "error": lines[-1] if lines else "the parser exited"}
        except AssertionError as exc:
            return {"ok": False, "error": f"OpenRLHF's argument check failed: {exc}"}
        except Exception as exc:  # the CLI's own post-parse code tripped over the flags
            return {"ok": False, "error": f"OpenRLHF's CLI failed: {type(exc).__name__}: {exc}"}
    return {"ok": False, "error": "the CLI returned before training started"}


def main() -> int:
    result = probe(sys.argv[1:])
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
