"""Each isolation layer on its own: bwrap's view of the host, seccomp, fail-closed, weak levels.

These tests do not rely on the audit hooks, so they show that a bypass of the in-process
detection still does no harm.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
from _sandbox_envs import env_source

from spade.sandbox import (
    EnvFault,
    FaultKind,
    IsolationUnavailable,
    Sandbox,
    SandboxLimits,
    _launch,
    _seccomp,
)


def _in_bwrap(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    argv = _launch.bwrap_argv(_launch.find_bwrap(), SandboxLimits()) + list(command)
    return subprocess.run(argv, env=env or _launch.scrubbed_env(0, "/tmp"),
                          capture_output=True, timeout=30, check=False)  # fmt: skip


def test_bwrap_hides_host_files_and_network() -> None:
    script = (
        "import os, socket\n"
        "print(sorted(os.listdir('/')))\n"
        f"print(os.path.exists('/etc/shadow'), os.path.exists({str(Path.home() / '.ssh')!r}),"
        " os.getuid())\n"
        "print(open('/proc/1/environ', 'rb').read())\n"
        "s = socket.socket()\n"
        "try:\n    s.connect(('1.1.1.1', 53)); print('NET OK')\n"
        "except OSError as e:\n    print('no net', e.errno)\n"
        "try:\n    open(os.__file__, 'a')\nexcept OSError as e:\n    print('ro', e.errno)\n"
    )
    done = _in_bwrap(sys.executable, "-c", script)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    top = eval(out.splitlines()[0])
    # Only what the interpreter needs is bound: a top-level directory shows up only when
    # the interpreter, venv or checkout lives below it.
    needed = {Path(p).parts[1] for p in _launch._interpreter_paths() if len(Path(p).parts) > 1}
    assert {"home", "var", "root", "srv", "opt", "mnt"} & set(top) <= needed
    assert "etc" in top
    assert "False False 65534" in out
    assert "NET OK" not in out and "no net" in out and "ro " in out


def test_bwrap_alone_leaves_nothing_writable_but_tmp_and_dev_null() -> None:
    """Without Landlock or the hook, the sandbox's uid can write only the size-capped /tmp
    (which every worker covers with its own capped tmpfs) and /dev/null: not /dev/shm, /dev
    or /, which would hold unbounded memory shared by every worker."""
    script = (
        "import os\n"
        "for p in ('/dev/shm/x', '/dev/x', '/x', '/tmp/x', '/dev/null'):\n"
        "    try:\n        open(p, 'w').write('x'); print(p, 'written')\n"
        "    except OSError as e:\n        print(p, e.errno)\n"
    )
    done = _in_bwrap(sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    seen = dict(line.split() for line in done.stdout.decode().splitlines())
    assert seen == {"/dev/shm/x": str(errno.EROFS), "/dev/x": str(errno.EROFS),
                    "/x": str(errno.EROFS), "/tmp/x": "written", "/dev/null": "written"}, seen


#: Starts workers the way the fork server does (own pid namespace, the init's listener)
#: and prints, per worker, how it ended and the call its init named.
NAMED_CALLS = """
import os
from spade.sandbox import _landlock, _nsinit, _zygote
libc = _landlock.libc()
clone = _nsinit.clone_number()
notify = _zygote._listener(libc, clone)
seen = []
for code in ('x = os.getpid()', 'libc.syscall(41 if os.uname().machine == "x86_64" '
             'else 198, 2, 1, 0)', 'os.memfd_create("x")', 'os.execv("/bin/true", ["t"])'):
    pid, report = _nsinit.fork_isolated(libc, clone, notify)
    if pid == 0:
        try:
            exec(code)
        finally:
            os._exit(0)
    status = _nsinit.worker_status(os.waitpid(pid, 0)[1])
    end = os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)
    seen.append((end, _nsinit.refused_call(report)))
print(repr((notify is not None, seen)))
"""


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="syscall numbers")
def test_the_workers_init_names_each_call_seccomp_refuses() -> None:
    """The kernel holds a refused call and tells the worker's init, which kills the worker
    and reports the call; a worker that makes no such call ends as it chose."""
    env = {**_launch.scrubbed_env(0, "/tmp"), "PYTHONPATH": _launch.spade_root()}
    done = _in_bwrap(sys.executable, "-c", NAMED_CALLS, env=env)
    assert done.returncode == 0, done.stderr
    works, seen = eval(done.stdout.decode())
    assert works, "the kernel here has no seccomp user notification"
    sigsys = int(signal.SIGSYS)
    assert seen == [(0, None), (sigsys, "socket"), (sigsys, "memfd_create"),
                    (sigsys, "execve")], seen


#: Workers started the fork server's way with their own process listener handed to the
#: init: how each ended and what the init named.
NAMED_PROCESS_CALLS = """
import os, threading
from spade.sandbox import _landlock, _nsinit, _seccomp, _zygote
libc = _landlock.libc()
clone = _nsinit.clone_number()
notify = _zygote._listener(libc, clone)
program = _zygote._process_listener(libc, clone, notify)
START = "ts = [threading.Thread(target=ev.wait) for _ in range({})]\\nfor t in ts: t.start()"
seen = []
for code in ('ev = threading.Event()\\n' + START.format(6) + '\\nev.set()',
             'os.fork()', 'os.kill(1, 0)', 'os.memfd_create("x")',
             'ev = threading.Event()\\n' + START.format(40)):
    pid, handoff = _nsinit.fork_isolated(libc, clone, notify, threads=16)
    if pid == 0:
        try:
            _nsinit.hand_over(libc, handoff, notify[0], program)
            exec(code)
        finally:
            os._exit(0)
    status = _nsinit.worker_status(os.waitpid(pid, 0)[1])
    end = os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)
    seen.append((end, _nsinit.refused_call(handoff)))
print(repr((program is not None, seen)))
"""


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="syscall numbers")
def test_the_workers_init_names_process_calls_and_caps_threads() -> None:
    """With the worker's own listener handed to its init: process creation and a signal
    to another pid are named (the kernel held them), threads under the cap run, the one
    past it ends the worker with the cap named."""
    env = {**_launch.scrubbed_env(0, "/tmp"), "PYTHONPATH": _launch.spade_root()}
    done = _in_bwrap(sys.executable, "-c", NAMED_PROCESS_CALLS, env=env)
    assert done.returncode == 0, done.stderr
    works, seen = eval(done.stdout.decode())
    assert works, "the kernel here cannot hand a worker's listener to its init"
    sigsys = int(signal.SIGSYS)
    assert seen == [(0, None), (sigsys, "clone"), (sigsys, "kill"), (sigsys, "memfd_create"),
                    (sigsys, "threads")], seen


def test_launcher_secrets_never_reach_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_TEST_SECRET", "hunter2-secret")
    env = _launch.scrubbed_env(0, "/tmp")
    assert "SPADE_TEST_SECRET" not in env and set(env) <= {
        "PATH", "LANG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "OPENBLAS_NUM_THREADS",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TMPDIR", "HOME"}  # fmt: skip
    done = _in_bwrap("/bin/sh", "-c", "cat /proc/1/environ /proc/self/environ; env", env=env)
    assert b"hunter2" not in done.stdout + done.stderr


@pytest.mark.parametrize("pid", [2, 77, 1000, 65_536, 4_194_303])
def test_the_precompiled_worker_filter_is_what_libseccomp_compiles_for_the_pid(pid: int) -> None:
    import ctypes

    program = _seccomp.worker_program(ctypes.CDLL(None, use_errno=True))
    assert program is not None and program.slots
    assert program.patched(pid) == _seccomp._compiled(pid)


def _run_filtered(code: str, precompiled: bool = False) -> int:
    """Fork, load the worker filter, run ``code``; the child's raw wait status."""
    import ctypes

    program = _seccomp.worker_program(ctypes.CDLL(None, use_errno=True)) if precompiled else None
    pid = os.fork()
    if pid == 0:
        try:
            _seccomp.install(os.getpid(), program=program)
            exec(code, {"os": os, "socket": socket, "signal": signal, "threading": threading})
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize(
    "code",
    [
        "socket.socket()",
        "socket.socket(socket.AF_UNIX)",
        "os.fork()",
        "os.execv('/bin/true', ['true'])",
        "os.kill(os.getppid(), 0)",
        "os.kill(1, signal.SIGKILL)",
    ],
)
@pytest.mark.parametrize("precompiled", [False, True], ids=["compiled", "precompiled"])
def test_seccomp_kills_forbidden_syscalls(code: str, precompiled: bool) -> None:
    status = _run_filtered(code, precompiled)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS, status


@pytest.mark.parametrize("precompiled", [False, True], ids=["compiled", "precompiled"])
def test_seccomp_keeps_pipe_buffers_at_their_default_size(precompiled: bool) -> None:
    """A pipe's buffer is kernel memory outside the address-space limit: growing it fails
    (EPERM) whatever called fcntl; an ordinary fcntl still works."""
    code = (
        "import fcntl\n"
        "r, w = os.pipe()\n"
        "fcntl.fcntl(w, fcntl.F_GETFL)\n"
        "try:\n"
        "    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)\n"
        "except PermissionError:\n"
        "    os._exit(7)\n"
    )
    status = _run_filtered(code, precompiled)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7, status


@pytest.mark.parametrize("precompiled", [False, True], ids=["compiled", "precompiled"])
def test_seccomp_allows_threads_and_self_signals(precompiled: bool) -> None:
    code = (
        "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "signal.signal(signal.SIGUSR1, lambda *a: None)\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\n"
        "signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)\n"
    )
    status = _run_filtered(code, precompiled)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_missing_bwrap_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda *a, **k: None)
    with pytest.raises(IsolationUnavailable, match="apt-get install bubblewrap"):
        Sandbox("bwrap")


def test_broken_bwrap_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "find_bwrap", lambda: "/bin/false")
    with pytest.raises(IsolationUnavailable, match="cannot create the sandbox"):
        Sandbox("bwrap")


def test_weak_levels_need_an_explicit_opt_in() -> None:
    for level in ("rlimits", "none"):
        with pytest.raises(IsolationUnavailable, match="allow_weak=True"):
            Sandbox(level)
    with pytest.raises(IsolationUnavailable, match="unknown isolation"):
        Sandbox("docker")


@pytest.mark.parametrize("level", ["rlimits", "none"])
def test_weak_levels_warn_and_still_detect(level: str, capsys: pytest.CaptureFixture) -> None:
    limits = SandboxLimits(call_timeout_s=2.0)
    warned = pytest.warns(RuntimeWarning, match="WITHOUT")
    with warned, Sandbox(level, limits, allow_weak=True) as box:
        assert "WARNING" in capsys.readouterr().err
        with box.load(env_source()) as env:
            assert env.reset(seed=0)[0] == "obs"
        with pytest.raises(EnvFault) as caught:
            box.load(env_source(module="import os\nos.fork()"))
        assert caught.value.kind == FaultKind.VIOLATION
        env = box.load(env_source(step="while True:\n    pass"))
        env.reset(seed=0)
        with pytest.raises(EnvFault) as caught:
            env.step("x")
        assert caught.value.kind == FaultKind.TIMEOUT


_BYPASS_FORK = """import _posixsubprocess, os
r, w = os.pipe()
_posixsubprocess.fork_exec([b'/bin/true'], [b'/bin/true'], True, (), None, None, -1, -1, -1,
    -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)"""


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="fork_exec signature of 3.11")
@pytest.mark.parametrize("level", ["bwrap", "rlimits"])
def test_fork_that_bypasses_the_audit_hooks_is_killed_by_seccomp(level: str) -> None:
    """``_posixsubprocess.fork_exec`` raises no audit event; seccomp still stops it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = Sandbox(level, allow_weak=True)
    with box, pytest.raises(EnvFault) as caught:
        box.load(env_source(reset=_BYPASS_FORK)).reset(seed=0)
    assert caught.value.kind == FaultKind.VIOLATION
    assert "seccomp" in caught.value.message
