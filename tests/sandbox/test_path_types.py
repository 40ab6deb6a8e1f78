"""Path arguments of every type are read by content (fail closed when they cannot be),
signal enums work as in CPython, and closure cells of the sandbox's functions are checked
by identity.

Valid environments that name files with ``numpy.str_``, a ``StrEnum`` or a ``pathlib``
path must play; a ``str`` subclass that names a file outside the tmp is the attempt it
spells, whatever its ``__str__`` says.
"""

from __future__ import annotations

import pytest
from _sandbox_envs import assert_violation, env_source, outcome

from spade.sandbox import Sandbox

MODULE = """
import enum, os, pathlib, signal, sqlite3
import numpy as np

class Name(enum.StrEnum):
    STATE = 'state.txt'

class Sly(str):
    def __str__(self):
        return 'harmless.txt'

    def __fspath__(self):
        return 'harmless.txt'
"""


@pytest.mark.parametrize(
    "code",
    [
        "open(np.str_('a.txt'), 'w').write('1')",
        "open(Name.STATE, 'w').write('1')\nassert open(Name.STATE).read() == '1'",
        "sqlite3.connect(pathlib.Path('scores.db')).execute('CREATE TABLE t(a)')",
        "sqlite3.connect(np.str_('scores.db')).close()",
        "os.mkdir(pathlib.Path('d'))\nos.chmod(Name.STATE if False else 'd', 0o700)",
        "signal.signal(signal.SIGALRM, signal.SIG_DFL)",
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "assert signal.getsignal(signal.SIGALRM) is signal.SIG_IGN",
        "old = signal.signal(signal.SIGALRM, lambda *a: None)\nsignal.signal(signal.SIGALRM, old)",
    ],
    ids=["numpy-str", "strenum", "sqlite-path", "sqlite-numpy-str", "mkdir-path",
         "sig-dfl", "sig-ign", "restore-handler"],
)
def test_valid_path_and_signal_types_play(sandbox: Sandbox, code: str) -> None:
    with sandbox.load(env_source(module=MODULE, reset=code)) as env:
        assert env.reset(seed=0)[0] == "obs"
        assert env.step("x")[1] == 1.0
        assert env.finalize() == ()


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("open(Sly('/etc/passwd'))", "open /etc/passwd"),
        ("os.chmod(Sly('/tmp'), 0o777)", "os.chmod /tmp"),
        ("os.utime(Sly('/usr/lib'))", "os.utime /usr/lib"),
        ("os.utime(Sly('/usr/lib').encode())", "os.utime /usr/lib"),
        ("sqlite3.connect(Sly('/var/x.db'))", "sqlite3.connect /var/x.db"),
    ],
    ids=["open", "chmod", "utime", "utime-bytes", "sqlite"],
)
def test_str_subclass_paths_are_read_by_content(sandbox: Sandbox, code: str, needle: str) -> None:
    assert_violation(outcome(sandbox, env_source(module=MODULE, reset=code)), "filesystem", needle)


def test_a_path_object_of_unknown_type_fails_closed(sandbox: Sandbox) -> None:
    code = """
        class Odd:
            def __fspath__(self):
                return '/etc/passwd'
        import shutil
        shutil.copyfile(Odd(), 'copy.txt')
    """
    assert_violation(outcome(sandbox, env_source(module=MODULE, reset=code)), "filesystem",
                     "path given as")  # fmt: skip


@pytest.mark.parametrize(
    "code",
    [
        # the signal trampoline, through the wrapper environment code can reach
        "for c in signal.signal.__closure__:\n"
        "    if getattr(c.cell_contents, '__name__', '') == 'trampoline':\n"
        "        c.cell_contents = print",
        "for c in signal.signal.__closure__:\n"
        "    if type(c.cell_contents) is dict:\n"
        "        c.cell_contents = {}",
        "import sqlite3\nfor c in sqlite3.connect.__closure__:\n    c.cell_contents = print",
    ],
    ids=["trampoline", "handler-table", "sqlite-wrapper"],
)
def test_a_replaced_closure_cell_is_tampering(sandbox: Sandbox, code: str) -> None:
    fault = outcome(sandbox, env_source(module=MODULE, reset=code))
    assert_violation(fault, "tampering", "closure cell")


def test_a_link_the_kernel_would_refuse_silently_is_named(sandbox: Sandbox) -> None:
    """``readlink`` raises no audit event of its own; another process's fd links are
    refused by the kernel without a word, so the sandbox names the attempt itself."""
    fault = outcome(sandbox, env_source(module=MODULE, reset="os.readlink('/proc/1/fd/2')"))
    assert_violation(fault, "filesystem", "os.readlink /proc/1/fd/2")
    own = "os.readlink('/proc/self/exe')\nos.readlink('/proc/self/fd/0')"
    with sandbox.load(env_source(module=MODULE, reset=own)) as env:
        env.reset(seed=0)
        assert env.finalize() == ()


def test_no_native_handle_is_reachable_from_environment_frames(sandbox: Sandbox) -> None:
    walk = """
        try:
            raise ValueError
        except ValueError as exc:
            frame = exc.__traceback__.tb_frame
        found = []
        while frame is not None:
            for name, value in list(frame.f_locals.items()):
                values = list(value.values()) if type(value) is dict else [value]
                if any('CDLL' in type(v).__name__ or 'Program' in type(v).__name__
                       for v in values):
                    found.append((frame.f_code.co_name, name))
            frame = frame.f_back
        self.found = found
    """
    with sandbox.load(env_source(module=MODULE, reset=walk, obs="repr(self.found)")) as env:
        assert env.reset(seed=0)[0] == "[]"


def test_ctypes_events_are_the_environments_even_inside_an_import(sandbox: Sandbox) -> None:
    """A library being imported does not make native access the library's: only ctypes
    initialising itself is. A library that really re-imports ctypes still loads."""
    code = """
        import importlib.util, sys
        src = "import ctypes\\nctypes.CDLL(None).getpid()\\n"
        spec = importlib.util.spec_from_loader('helper', loader=None)
        mod = importlib.util.module_from_spec(spec)
        exec(compile(src, sys.modules['json'].__file__, 'exec'), mod.__dict__)
    """
    fault = outcome(sandbox, env_source(module=MODULE, reset=code))
    assert fault.kind.value == "violation", fault
    with sandbox.load(env_source(module=MODULE, reset="import sympy\nsympy.Symbol('x')")) as env:
        env.reset(seed=0)
        assert env.finalize() == ()
