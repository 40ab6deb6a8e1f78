"""Failures of the machine or the install end a command with one line and exit 2: an
unwritable output, a file that is not UTF-8, a missing optional package, an option whose
value would allocate gigabytes. Bugs keep their traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from spade.cli import main
from spade.cli._boundary import describe, missing_extra

ROOT = Path(__file__).resolve().parents[2]


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot create files in: a read-only folder (not for root,
    who writes anyway), else a folder of the kernel's read-only file system."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    for candidate in (ro, Path("/sys/kernel"), Path("/proc/sys")):
        try:
            fd, probe = tempfile.mkstemp(dir=candidate)
        except OSError:
            return candidate
        os.close(fd)
        os.unlink(probe)
    pytest.skip("no unwritable folder on this machine")


def _one_line(capsys: pytest.CaptureFixture[str], prefix: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(prefix) and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv", [
    ["eval", "run", "--model", "oracle", "--suites", "aime25", "--out", "{ro}/run"],
    ["train", "--recipe", "tiny", "--run-dir", "{ro}/run"],
    ["selfplay", "--run-dir", "{ro}/run"],
    ["report", "{tmp}", "--out", "{ro}/table.md"],
    ["report", "{tmp}", "--plot", "{ro}/chart.png"],
    ["report", "{tmp}", "--out", "{file}/table.md"],
    ["eval", "export-inspect", "{tmp}", "--out", "{ro}/logs"],
])
def test_unwritable_outputs_fail_at_parse_time(tmp_path: Path, argv: list[str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ro = _unwritable(tmp_path)
    (tmp_path / "f").write_text("x")
    args = [a.format(ro=ro, tmp=tmp_path, file=tmp_path / "f") for a in argv]
    assert main(args) == 2
    err = _one_line(capsys, f"spade {argv[0]}")
    assert "argument --" in err
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("argv", "flag"), [
    (["eval", "run", "--model", "oracle", "--samples", "100000000"], "--samples"),
    (["eval", "run", "--model", "oracle", "--batch-size", "10000000"], "--batch-size"),
    (["eval", "run", "--model", "oracle", "--max-tokens", "999999999999"], "--max-tokens"),
    (["eval", "run", "--model", "oracle", "--fewshot", "100000"], "--fewshot"),
    (["train", "--steps", "100000000", "--dry-run"], "--steps"),
    (["selfplay", "--cycles", "100000000"], "--cycles"),
])
def test_memory_hungry_options_are_bounded(argv: list[str], flag: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = _one_line(capsys, f"spade {argv[0]}")
    assert flag in err and "at most" in err


def test_a_missing_extra_is_named() -> None:
    exc = ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")
    line = describe(exc)
    assert line is not None and "'eval' extra" in line and "spade-rl[eval]" in line
    assert "'hf' extra" in (missing_extra(ModuleNotFoundError(name="torch.nn")) or "")
    # a module of the project itself, or an unknown one, is a bug: no one-line cover-up
    assert describe(ModuleNotFoundError(name="eval.nothing_here")) is None
    assert describe(ImportError("cannot import name 'x' from 'spade'")) is None


def test_os_errors_of_the_machine_are_one_line_and_bugs_are_not() -> None:
    full = describe(OSError(errno.ENOSPC, "No space left on device"))
    assert full is not None and "No space left" in full and "free some space" in full
    denied = describe(PermissionError(errno.EACCES, "Permission denied", "/x/out.json"))
    assert denied is not None and denied.startswith("/x/out.json: Permission denied")
    assert describe(OSError(errno.EBADF, "Bad file descriptor")) is None
    assert describe(ValueError("a bug")) is None


def _read(path: Path) -> str:
    with open(path, encoding="utf-8") as fh:  # a reader that keeps no name in its error
        return fh.read()


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "data.jsonl"
    bad.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')
    with pytest.raises(UnicodeDecodeError) as err:
        _read(bad)
    line = describe(err.value)
    assert line is not None and line.startswith(f"{bad}:2 is not UTF-8 text"), line


def _without(module: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``spade ARGV`` in a fresh interpreter where ``module`` cannot be imported, as on a
    core install without that extra."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from spade.cli import main\n"
            f"raise SystemExit(main({argv!r}))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_core_install_without_torch_names_the_extra(tmp_path: Path) -> None:
    done = _without("torch", ["train", "--recipe", "tiny", "--dry-run"])
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "torch is not installed" in err and "spade-rl[hf]" in err


def test_a_bad_corpus_line_stops_training_before_the_model_and_the_run_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "a"}\n{"text": "b"}\n{"text": \n', encoding="utf-8")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"extends: tiny\nselfplay:\n  corpus: {{path: {corpus}}}\n",
                      encoding="utf-8")
    run_dir = tmp_path / "run"
    assert main(["train", "--recipe", str(recipe), "--run-dir", str(run_dir)]) == 2
    err = _one_line(capsys, "spade train: error")
    assert f"{corpus}:3" in err
    assert not run_dir.exists()


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    """`spade ... | head`: a closed pipe is no error worth a traceback."""
    code = ("import sys\nfrom spade.cli import main\n"
            "raise SystemExit(main(['report', '--reference-only']))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err, err
