"""`spade check-env PATH`: validate one environment file in the sandbox.

Exit codes: 0 valid, 1 invalid, 2 usage or infrastructure error. The command finishes
within ``--timeout`` on any input: the validator's own time budget stops slow environments
first, and a last-resort watchdog reports a timeout verdict and exits if even that hangs.
While it runs, file descriptor 1 points at stderr, so nothing a worker or library prints can
reach stdout; the result is written to the saved real stdout at the end (with ``--json``:
exactly one JSON object).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from spade.errors import SpadeError, UserError
from spade.textfile import read_bytes

#: Seconds kept back from --timeout for sandbox start-up and shutdown.
_GRACE_FRACTION = 0.2
_GRACE_MAX_S = 5.0
_MAX_TIMEOUT_S = 3600.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 1.0 <= value <= _MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"must lie between 1 and {_MAX_TIMEOUT_S:g} seconds")
    return value


#: The sandbox speaks its Python API; on this command the opt-out is a flag.
_CLI_TERMS = (
    ("isolation='rlimits' (or 'none') and allow_weak=True", "--isolation rlimits (or none)"),
    ("isolation='none' and allow_weak=True", "--isolation none"),
)


def _cli_terms(text: str) -> str:
    for api, cli in _CLI_TERMS:
        text = text.replace(api, cli)
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="Python file defining exactly one *Env class")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--hint", default=None, help="the privileged hint to check for leaks")
    parser.add_argument(
        "--isolation",
        choices=["bwrap", "rlimits", "none"],
        default="bwrap",
        help="bwrap (default) is the only level meant for generated code",
    )
    parser.add_argument(
        "--timeout", type=_seconds, default=60.0, help="hard limit for the whole check (s)"
    )
    parser.add_argument(
        "--preload",
        default=None,
        metavar="LIB[,LIB]",
        help="heavy libraries the sandbox imports once before loading the environment "
        "(e.g. reasoning_gym,Gym)",
    )


def run(args: argparse.Namespace) -> int:
    out = _Stdout()
    sandboxes: list[Any] = []  # the running sandbox, for the last-resort watchdog
    watchdog = threading.Timer(args.timeout, _hard_stop, args=(args, out, sandboxes))
    watchdog.daemon = True
    watchdog.start()
    try:
        return _check(args, out, sandboxes)
    except SpadeError as exc:
        text = _cli_terms(str(exc))
        if args.json:
            out.write(
                json.dumps(
                    {"valid": False, "stage": None, "reason": text, "error": type(exc).__name__}
                )
            )
        print(f"spade check-env: error: {text}", file=sys.stderr)
        return 2
    finally:
        watchdog.cancel()
        out.restore()


def _check(args: argparse.Namespace, out: _Stdout, sandboxes: list[Any]) -> int:
    from spade.sandbox import Sandbox, SandboxLimits
    from spade.validate import ValidationConfig, validate_env

    source = _read(Path(args.path))
    timeout = float(args.timeout)
    grace = min(_GRACE_MAX_S, timeout * _GRACE_FRACTION)
    budget = max(0.5, timeout - grace)
    limits = SandboxLimits(
        call_timeout_s=min(5.0, budget / 3), load_timeout_s=min(10.0, budget / 3)
    )
    config = ValidationConfig(time_budget_s=budget)
    if source is None:
        verdict = _not_text(args.path)
    else:
        preload = tuple(n.strip() for n in (args.preload or "").split(",") if n.strip())
        try:
            sandbox = Sandbox(
                isolation=args.isolation, limits=limits, allow_weak=args.isolation != "bwrap",
                preload=preload,
            )  # fmt: skip
        except ValueError as exc:
            raise UserError(str(exc)) from None
        with sandbox:
            sandboxes.append(sandbox)
            verdict = validate_env(source, hint=args.hint, sandbox=sandbox, config=config)
    data = verdict.to_json()
    data["timings"] = {c["stage"]: round(c["seconds"], 6) for c in data["checks"]}
    data["isolation"] = args.isolation
    out.write(json.dumps(data, default=str) if args.json else _human(data))
    return 0 if verdict.valid else 1


def _read(path: Path) -> str | None:
    """The file's text; ``None`` when it is not UTF-8 text (an invalid environment)."""
    data = read_bytes(path, "environment file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _not_text(path: str) -> Any:
    from spade.validate import CheckResult, Stage, Verdict

    reason = f"{path} is not UTF-8 text"
    return Verdict(False, Stage.SOURCE, reason, (CheckResult(Stage.SOURCE, False, reason),))


def _human(data: dict[str, Any]) -> str:
    name = data.get("class_name") or "environment"
    kind = f" ({data['kind']})" if data.get("kind") else ""
    if data["valid"]:
        head = f"VALID: {name}{kind} passed all checks in {data['seconds']:.2f} s"
    else:
        head = f"INVALID at stage {data['stage']}: {data['reason']}"
    lines = [head]
    for check in data["checks"]:
        status = "ok" if check["passed"] else "FAILED"
        note = f"  {check['details']['skipped']}" if "skipped" in check["details"] else ""
        lines.append(f"  {check['stage']:<12} {status:<6} {check['seconds']:8.3f} s{note}")
    return "\n".join(lines)


class _Stdout:
    """Keeps the real stdout aside while the check runs (fd 1 goes to stderr meanwhile)."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.fd = os.dup(1)
        os.dup2(2, 1)
        self.lock = threading.Lock()
        self.written = False

    def write(self, text: str) -> None:
        with self.lock:
            if self.written:
                return
            self.written = True
            data = (text + "\n").encode("utf-8")
            while data:
                data = data[os.write(self.fd, data) :]

    def restore(self) -> None:
        with self.lock:
            if self.fd < 0:
                return
            sys.stdout.flush()
            os.dup2(self.fd, 1)
            os.close(self.fd)
            self.fd = -1


def _hard_stop(args: argparse.Namespace, out: _Stdout, sandboxes: list[Any]) -> None:
    """Last resort when the budget did not stop the check: report, clean up, exit 1."""
    reason = f"check-env did not finish within its timeout of {args.timeout:g} s"
    closer = threading.Thread(target=lambda: [s.close() for s in sandboxes], daemon=True)
    closer.start()
    closer.join(timeout=2.0)
    if args.json:
        out.write(
            json.dumps(
                {
                    "valid": False,
                    "stage": None,
                    "reason": reason,
                    "checks": [],
                    "timings": {},
                    "isolation": args.isolation,
                }
            )
        )
    else:
        out.write(f"INVALID: {reason}")
    os._exit(1)
