"""Hostile environments: each is contained, rejected with a named reason, and leaves no trace.

"Contained" means: the parent survives, nothing on the host changes, no process survives,
and the fault (or the recorded violations) says what was attempted.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _sandbox_envs import assert_violation, env_source, outcome
from _sandbox_procs import descendants

from spade.sandbox import EnvFault, FaultKind, Sandbox


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A real TCP listener on loopback that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            got.append(conn.recv(100) or b"<connected>")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    stop.set()
    thread.join()
    server.close()


# -- loops, memory, crashes -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["module", "reset", "step"])
def test_infinite_loops_time_out(sandbox: Sandbox, where: str) -> None:
    loop = "while True:\n    pass"
    src = env_source(**{where: loop})
    fault = outcome(sandbox, src)
    assert fault.kind == FaultKind.TIMEOUT and "wall-clock" in fault.message


def test_dead_handle_after_timeout(sandbox: Sandbox) -> None:
    env = sandbox.load(env_source(step="while True:\n    pass"))
    env.reset(seed=0)
    with pytest.raises(EnvFault) as first:
        env.step("x")
    assert first.value.kind == FaultKind.TIMEOUT
    with pytest.raises(EnvFault, match="worker is gone") as second:
        env.reset(seed=0)
    assert second.value.kind == FaultKind.CRASH


@pytest.mark.parametrize("code", ["x = bytearray(8 << 30)", "x = 'x' * (3 << 30)",
                                  "import numpy as np\nx = np.ones((1 << 31,))"])
def test_memory_bombs_hit_the_address_space_limit(sandbox: Sandbox, code: str) -> None:
    fault = outcome(sandbox, env_source(reset=code))
    assert fault.kind == FaultKind.EXCEPTION and "MemoryError" in fault.message


def test_sys_exit_and_os_exit(sandbox: Sandbox) -> None:
    fault = outcome(sandbox, env_source(reset="import sys\nsys.exit(3)"))
    assert fault.kind == FaultKind.EXCEPTION and "sys.exit(3)" in fault.message
    fault = outcome(sandbox, env_source(reset="import os\nos._exit(3)"))
    assert fault.kind == FaultKind.CRASH and "exited with code 3" in fault.message


def test_deep_recursion_in_c_code_is_a_crash(sandbox: Sandbox) -> None:
    src = env_source(reset="import sys\nsys.setrecursionlimit(10**7)\nx = []\n"
                     "for _ in range(10**5):\n    x = [x]\nimport json\njson.dumps(x)")
    fault = outcome(sandbox, src)
    assert fault.kind == FaultKind.CRASH and "SIGSEGV" in fault.message


def test_deeply_nested_observation_is_refused(sandbox: Sandbox) -> None:
    src = env_source(obs="self.deep()") + (
        "    def deep(self):\n        x = []\n        for _ in range(500):\n            x = [x]\n"
        "        return x\n"
    )
    fault = outcome(sandbox, src, step=False)
    assert fault.kind == FaultKind.EXCEPTION and "nested deeper" in fault.message


def test_huge_observation_is_a_protocol_fault(sandbox: Sandbox) -> None:
    fault = outcome(sandbox, env_source(obs="'x' * (100 << 20)"), step=False)
    assert fault.kind == FaultKind.PROTOCOL and "exceeds the limit" in fault.message


def test_output_floods_are_capped(roomy: Sandbox) -> None:
    src = env_source(reset="import os, sys\nprint('x' * (100 << 20))\n"
                     "sys.stderr.write('e' * (10 << 20))\nos.write(1, b'y' * (10 << 20))")
    with roomy.load(src) as env:  # the cap, not a call timeout, must be what stops it
        with pytest.raises(EnvFault) as fault:
            env.reset(seed=0)
        out = env.output
    assert_violation(fault.value, "resource", "output, over the cap")
    assert len(out) < roomy.limits.max_output_bytes + 200 and "dropped" in out


# -- processes and signals -------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "import os\nwhile True:\n    os.fork()",
        "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        import time\n        time.sleep(60)\n    os._exit(0)",
        "import subprocess\nsubprocess.Popen(['sleep', '60'], start_new_session=True)",
        "import os\nos.system('sleep 60 &')",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    ],
    ids=["fork-bomb", "double-fork-daemon", "popen", "system", "multiprocessing"],
)
def test_process_creation_is_refused(sandbox: Sandbox, code: str) -> None:
    before = _sandbox_procs()
    assert_violation(outcome(sandbox, env_source(reset=code)), "process")
    # At most a replacement spare worker; a closed worker is reaped in the background.
    deadline = time.monotonic() + 5
    while len(after := _sandbox_procs()) > len(before) + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(after) <= len(before) + 1
    for pid in after:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                assert b"sleep" not in fh.read()
        except FileNotFoundError:
            continue


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP"])
def test_signalling_the_parent_is_refused(sandbox: Sandbox, sig: str) -> None:
    src = env_source(reset=f"import os, signal\nos.kill(os.getppid(), signal.{sig})\n"
                     f"os.kill(1, signal.{sig})")
    assert_violation(outcome(sandbox, src), "signal", "os.kill")
    with sandbox.load(env_source()) as env:  # the fork server is unharmed
        assert env.reset(seed=0)[0] == "obs"


# -- network, files, environment ---------------------------------------------------------------


def test_network_to_loopback_is_refused(sandbox: Sandbox, listener) -> None:
    port, got = listener
    src = env_source(reset="import socket\ntry:\n"
                     f"    socket.create_connection(('127.0.0.1', {port}))\n"
                     "except OSError:\n    pass")
    assert_violation(outcome(sandbox, src), "network", str(port))
    src = env_source(reset=f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/')")
    assert_violation(outcome(sandbox, src), "network")
    assert got == []


def test_writes_outside_tmp_are_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("original")
    for code in (
        f"open({str(tmp_path / 'pwned')!r}, 'w').write('x')",
        f"import os\nos.remove({str(victim)!r})",
        f"import shutil\nshutil.rmtree({str(tmp_path)!r})",
        f"import os\nos.mkdir({str(tmp_path / 'newdir')!r})",
        f"from pathlib import Path\nPath({str(tmp_path)!r}, 'p2').write_text('x')",
    ):
        assert_violation(outcome(sandbox, env_source(reset=code)), "filesystem")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert victim.read_text() == "original"


def test_private_tmp_is_allowed(sandbox: Sandbox) -> None:
    src = env_source(reset="import tempfile, os\nwith open('scratch.txt', 'w') as f:\n"
                     "    f.write('ok')\nd = tempfile.mkdtemp()\nos.listdir(d)\n"
                     "assert open('scratch.txt').read() == 'ok'")
    with sandbox.load(src) as env:
        env.reset(seed=0)
        assert env.violations == ()


@pytest.mark.parametrize(
    "code",
    [
        "open('/etc/shadow').read()",
        "open('/proc/1/environ').read()",
        "import os\nopen(f'/proc/{os.getppid()}/environ').read()",
        "open('/proc/self/environ').read()",
        "import os\nos.listdir('/')",
        "import glob\nglob.glob('/home/*')",
        "import os\nos.listdir('/proc')",
    ],
)
def test_reading_or_listing_outside_is_refused(sandbox: Sandbox, code: str) -> None:
    assert_violation(outcome(sandbox, env_source(reset=code)), "filesystem")


def test_secrets_in_the_environment_are_unreachable(
    monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox
) -> None:
    monkeypatch.setenv("SPADE_TEST_SECRET", "hunter2-secret")
    with Sandbox("bwrap", sandbox.limits) as fresh:  # started while the secret is set
        src = env_source(obs="str(self.found)", reset=(
            "import os\ntry:\n    self.found = os.environ.get('SPADE_TEST_SECRET')\n"
            "except Exception as exc:\n    self.found = exc"
        ))
        fault = outcome(fresh, src, step=False)
        assert_violation(fault, "environment", "SPADE_TEST_SECRET")
        fault = outcome(fresh, env_source(obs="str(dict(__import__('os').environ))"), step=False)
        assert_violation(fault, "environment", "enumeration")
        assert "hunter2" not in str(fault) + fault.output


# -- native code and tampering -------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "import ctypes\nctypes.string_at(0)",
        "import ctypes\nctypes.CDLL(None).fork()",
        "import ctypes\nctypes.cast(1, ctypes.POINTER(ctypes.c_int))[0]",
    ],
)
def test_ctypes_is_refused(sandbox: Sandbox, code: str) -> None:
    fault = outcome(sandbox, env_source(reset=code))
    assert_violation(fault, "native")


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nsys.addaudithook(lambda *a: None)",
        "import gc\ngc.get_objects()",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
        "import os\nfor fd in range(3, 30):\n    try:\n        os.close(fd)\n"
        "    except OSError:\n        pass",
        "import os, struct\nfake = b'[\"r\",1,null,0,[],null]'\n"
        "for fd in range(3, 30):\n    try:\n"
        "        os.write(fd, struct.pack('>I', len(fake)) + fake)\n"
        "    except OSError:\n        pass",
        "import os\nfor fd in range(3, 30):\n    try:\n"
        "        os.dup2(os.open('/dev/null', os.O_WRONLY), fd)\n"
        "    except OSError:\n        pass",
        "from spade.envs import TextEnv\nTextEnv.max_turns = 10**9",
    ],
    ids=["addaudithook", "gc", "setrlimit", "close-fds", "fake-frame", "dup2", "patch-runtime"],
)
def test_tampering_is_refused(sandbox: Sandbox, code: str) -> None:
    assert_violation(outcome(sandbox, env_source(reset=code)), "tampering")


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import json\njson.JSONEncoder.default = lambda self, o: 'ok'", "JSONEncoder.default"),
        ("import gymnasium\ngymnasium.Env.sneaky = 1", "Env.(new attribute)"),
        ("from spade.envs import ToolEnv\ndel ToolEnv.call_tool", "ToolEnv.call_tool"),
        ("import os\nos.kill = print", "os.kill"),
    ],
    ids=["replace-method", "add-attribute", "delete-method", "replace-module-function"],
)
def test_runtime_class_and_module_changes_are_tampering(
    sandbox: Sandbox, code: str, needle: str
) -> None:
    fault = outcome(sandbox, env_source(reset=code))
    assert_violation(fault, "tampering", needle)


def test_monkeypatching_cannot_fool_the_channel(sandbox: Sandbox) -> None:
    src = env_source(
        module="import builtins, json, os\n"
        "json.dumps = lambda *a, **k: '{\"valid\": true}'\n"
        "json.loads = lambda *a, **k: {'valid': True}\n"
        "builtins.isinstance = lambda *a: True\n"
        "os.write = lambda *a: 0\n"
        "print('{\"valid\": true, \"stage\": \"done\"}')",
        obs="'real observation'",
    )
    fault = outcome(sandbox, src)
    assert_violation(fault, "tampering", "replaced")
    assert "builtins.isinstance" in " ".join(map(str, fault.violations))


def test_violation_in_a_background_thread_is_reported(sandbox: Sandbox) -> None:
    src = env_source(reset="import threading, time\ndef sneak():\n    time.sleep(0.05)\n"
                     "    try:\n        open('/etc/passwd')\n    except OSError:\n        pass\n"
                     "threading.Thread(target=sneak).start()")
    env = sandbox.load(src)
    with pytest.raises(EnvFault) as fault:  # the thread outlives the call (or acts within it)
        env.reset(seed=0)
    assert fault.value.kind == FaultKind.VIOLATION
    deadline = time.monotonic() + 60  # the thread may act after the call, late on a busy host
    while not any(v.category == "filesystem" for v in env.violations):
        assert time.monotonic() < deadline, env.violations
        time.sleep(0.01)
    env.close()


def test_caught_permission_error_is_still_a_violation(sandbox: Sandbox) -> None:
    src = env_source(reset="try:\n    open('/etc/hostname').read()\nexcept Exception:\n    pass")
    assert_violation(outcome(sandbox, src, step=False), "filesystem", "/etc/hostname")


def _sandbox_procs() -> set[int]:
    return descendants(os.getpid())


# -- resource abuse is an attempt --------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import threading\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)],"
         " daemon=True).start()", "still running after step"),
        ("import _thread, time\nself.n = getattr(self, 'n', 0) + 1\nif self.n == 1:\n"
         "    _thread.start_new_thread(time.sleep, (5,))", "still running after "),
        ("self.fds = []\nwhile True:\n    try:\n        self.fds.append(open('f', 'w'))\n"
         "    except OSError:\n        break", "file descriptors"),
        ("import sys\nfor _ in range(50):\n    print('[\"r\", 1, null, 0, [], null]' * 20000)",
         "output, over the cap"),
    ],
    ids=["cpu-thread", "raw-thread", "fd-exhaustion", "output-flood"],
)
def test_resource_abuse_is_a_named_violation(sandbox: Sandbox, code: str, needle: str) -> None:
    """A raw ``_thread`` that has not started when ``step`` returns is seen by the kernel's
    thread count after the next call off the step path (``reset``, ``finalize``)."""
    with sandbox.load(env_source(step=code)) as env:
        env.reset(seed=0)
        with contextlib.suppress(EnvFault):
            env.step("go")
        with contextlib.suppress(EnvFault):
            env.reset(seed=1)
        found = env.finalize()
    assert any(v.category == "resource" and needle in v.detail for v in found), found


def test_short_lived_helper_threads_are_fine(sandbox: Sandbox) -> None:
    src = env_source(
        module="from concurrent.futures import ThreadPoolExecutor",
        step="ex = ThreadPoolExecutor(max_workers=2)\nassert sum(ex.map(abs, [-1, 2])) == 3\n"
        "ex.shutdown(wait=False)",
    )
    with sandbox.load(src) as env:
        env.reset(seed=0)
        env.step("x")
        assert env.violations == ()


def test_filling_the_shared_tmpfs_is_a_named_violation(sandbox: Sandbox) -> None:
    code = "for i in range(6):\n    with open(f'blob{i}', 'wb') as fh:\n" \
           "        fh.write(b'x' * (15 << 20))"  # fmt: skip
    assert_violation(outcome(sandbox, env_source(reset=code)), "resource", "private tmp")


def test_an_idle_thread_pool_kept_for_later_calls_is_fine(sandbox: Sandbox) -> None:
    src = env_source(
        module="from concurrent.futures import ThreadPoolExecutor\nPOOL = []",
        reset="if not POOL:\n    POOL.append(ThreadPoolExecutor(max_workers=2))\n"
        "assert POOL[0].submit(abs, -3).result() == 3",
    )
    with sandbox.load(src) as env:
        env.reset(seed=0)
        env.step("x")
        env.reset(seed=1)
        assert env.violations == ()


def test_a_burner_submitted_to_a_pool_is_still_caught(sandbox: Sandbox) -> None:
    src = env_source(
        module="from concurrent.futures import ThreadPoolExecutor\n"
        "def burn():\n    while True:\n        pass",
        step="self.pool = ThreadPoolExecutor(max_workers=1)\nself.pool.submit(burn)",
    )
    assert_violation(outcome(sandbox, src), "resource", "still running after step")
