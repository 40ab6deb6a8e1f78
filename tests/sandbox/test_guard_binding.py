"""The audit hook cannot be fooled by environment code that edits what the hook looks up.

Regression tests for red-team findings: replaced builtins (``memoryview``, ``len``), the
sandbox modules' globals reached through frames, the sandbox modules imported by name,
frame access into the worker, fd wrappers fed int subclasses, and ``posix.environ``.
"""

from __future__ import annotations

import types

import pytest
from _sandbox_envs import assert_violation, env_source, outcome

from spade.sandbox import FaultKind, Sandbox

#: Replaces ``memoryview`` (in the namespace given by ``{ns}``) with a filter that drops
#: violation reports and zeroes the count in every frame the worker writes.
FILTER = """
import json
_real = memoryview
def _filter(data):
    try:
        message = json.loads(bytes(data[4:]).decode('utf-8'))
        if isinstance(message, list) and len(message) == 6:
            if message[0] == 'v':
                return _real(b'')
            message[3], message[4] = 0, []
            body = json.dumps(message).encode('utf-8')
            return _real(len(body).to_bytes(4, 'big') + body)
    except Exception:
        pass
    return _real(data)
"""
ATTEMPTS = """
import os, socket
try:
    socket.create_connection(('127.0.0.1', 9), timeout=0.1)
except Exception:
    pass
try:
    os.listdir('/')
except Exception:
    pass
os.environ.get('OPENAI_API_KEY')
"""


def categories(fault: object) -> set[str]:
    return {v.category for v in fault.violations}  # type: ignore[attr-defined]


def test_replaced_memoryview_cannot_drop_reports(sandbox: Sandbox) -> None:
    src = env_source(reset=FILTER + "import builtins\nbuiltins.memoryview = _filter\n" + ATTEMPTS)
    fault = outcome(sandbox, src, step=False)
    assert fault.kind == FaultKind.VIOLATION
    assert {"network", "filesystem", "environment", "tampering"} <= categories(fault), fault
    assert "builtins.memoryview" in " ".join(map(str, fault.violations))


def test_sandbox_globals_reached_through_frames_change_nothing(sandbox: Sandbox) -> None:
    patch = FILTER + """
import inspect
frame = inspect.currentframe()
patched = 0
while frame is not None:
    g = frame.f_globals
    for name in ('_guard', '_wrappers', '_attribution', '_wire'):
        mod = g.get(name)
        if mod is not None:
            patched += 1
            mod.memoryview = _filter
            mod.len = lambda o: 0
            for table in ('_LIST_EVENTS', '_WRITE_EVENTS', '_PROCESS_EVENTS', 'NATIVE_MODULES'):
                setattr(mod, table, frozenset())
            mod._NETWORK_PREFIXES = ('nothing.',)
            mod.benign_env_key = lambda key: True
            mod.make_encoder = None
    g['_describe'] = None
    frame = frame.f_back
assert patched, 'no sandbox module reached'
"""
    fault = outcome(sandbox, env_source(reset=patch + ATTEMPTS), step=False)
    assert {"network", "filesystem", "environment"} <= categories(fault), fault


def test_replaced_len_is_named_as_tampering(sandbox: Sandbox) -> None:
    src = env_source(reset="import builtins\nbuiltins.__dict__['len'] = lambda o: 0")
    fault = outcome(sandbox, src, step=False)
    assert_violation(fault, "tampering", "builtins.len")


def test_sandbox_modules_are_hidden_and_importing_them_is_tampering(sandbox: Sandbox) -> None:
    probe = ("str(sorted(k for k in __import__('sys').modules if k.startswith('spade.sandbox')))"
             " + str(hasattr(__import__('spade'), 'sandbox'))")  # fmt: skip
    with sandbox.load(env_source(obs=probe)) as env:
        assert env.reset(seed=0)[0] == "[]False"
        assert env.violations == ()
    for code in ("import spade.sandbox._guard", "import spade.sandbox",
                 "from spade.sandbox import _worker"):  # fmt: skip
        assert_violation(outcome(sandbox, env_source(reset=code)), "tampering", "spade.sandbox")


def test_the_fork_servers_module_list_is_used_only_while_it_still_matches() -> None:
    from spade.sandbox._worker import hidden_modules, hide_sandbox_modules

    zygote = {"json": 1, "ctypes": 2, "spade.sandbox._guard": 3, "_ctypes": 4, "numpy": 5}
    known = hidden_modules(zygote)
    assert sorted(known[0]) == ["_ctypes", "ctypes", "spade.sandbox._guard"]
    package = types.SimpleNamespace(sandbox=object())
    same = dict(zygote)
    hide_sandbox_modules(same, package, known)
    assert sorted(same) == ["json", "numpy"] and not hasattr(package, "sandbox")
    # A module imported after the list was taken: every name is read again.
    grown = {**zygote, "spade.sandbox._late": 6}
    hide_sandbox_modules(grown, types.SimpleNamespace(), known)
    assert sorted(grown) == ["json", "numpy"]


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nsys._getframe(1).f_globals['_describe'] = None",
        "class E(Exception):\n    def __str__(self):\n"
        "        return str(self.__traceback__.tb_frame)\nraise E()",
    ],
    ids=["getframe", "tb_frame"],
)
def test_frames_of_the_worker_are_off_limits(sandbox: Sandbox, code: str) -> None:
    fault = outcome(sandbox, env_source(step=code))
    assert_violation(fault, "tampering", "sandbox's own frames")


def test_own_frames_and_library_frame_use_are_fine(sandbox: Sandbox) -> None:
    src = env_source(
        module="import sys, collections, typing\nP = collections.namedtuple('P', 'x y')\n"
        "T = typing.TypeVar('T')\n",
        reset="sys._getframe(0)\ntry:\n    raise ValueError\nexcept ValueError as e:\n"
        "    e.__traceback__.tb_frame\nimport traceback\ntraceback.format_stack()",
    )
    with sandbox.load(src) as env:
        env.reset(seed=0)
        assert env.violations == ()


def test_fd_wrappers_see_int_subclasses_and_keywords(sandbox: Sandbox) -> None:
    src = env_source(reset="import os\nclass I(int):\n    pass\nfor fd in range(3, 30):\n"
                     "    try:\n        os.close(I(fd))\n"
                     "    except OSError:\n        pass")  # fmt: skip
    assert_violation(outcome(sandbox, src), "tampering", "control fd")
    src = env_source(reset="import os\nfor fd in range(3, 30):\n    try:\n"
                     "        os.dup2(os.open('/dev/null', os.O_RDONLY), fd2=fd)\n"
                     "    except OSError:\n        pass")  # fmt: skip
    assert_violation(outcome(sandbox, src), "tampering", "control fd")


def test_posix_environ_is_guarded(sandbox: Sandbox) -> None:
    fault = outcome(sandbox, env_source(reset="import posix\ndict(posix.environ)"), step=False)
    assert_violation(fault, "environment", "enumeration")
    fault = outcome(sandbox, env_source(reset="import posix\nposix.environ.get(b'SECRET')"))
    assert_violation(fault, "environment", "SECRET")
    with sandbox.load(env_source(obs="__import__('posix').environ[b'PATH'].decode()")) as env:
        assert env.reset(seed=0)[0].startswith("/")
        assert env.violations == ()


#: Raises the sandbox's own audit events by hand with objects whose comparisons and
#: attributes run environment code, hoping the hook calls them (then it would run on top
#: of the hook's frame, which it may edit); each object records whether it ever ran.
FAKE_EVENTS = """
import sys
ran = []
class Sly:
    def __eq__(self, other):
        ran.append('eq')
        return False
    __hash__ = object.__hash__
    @property
    def f_code(self):
        ran.append('f_code')
        raise AttributeError
    @property
    def tb_frame(self):
        ran.append('tb_frame')
        return None
    @property
    def __class__(self):
        ran.append('__class__')
        return Sly
for event, args in [
    ("spade.environ", (Sly(), "KEY")), ("spade.fd", (Sly(), Sly())),
    ("socket.__new__", (None, Sly(), 1, 0)), ("sys._getframe", (Sly(),)),
    ("object.__getattr__", (Sly(), "tb_frame")), ("spade.sqlite", (Sly(),)),
    ("spade.resource", ((Sly(), [Sly()]),)),
]:
    try:
        sys.audit(event, *args)
    except Exception:
        pass
print("RAN=" + repr(ran))
"""


def test_hand_raised_events_never_run_environment_code_in_the_hook(sandbox: Sandbox) -> None:
    fault = outcome(sandbox, env_source(module=FAKE_EVENTS))  # the fake reads are attempts
    assert "RAN=[]" in fault.output, fault.output
