"""The OS layers hold when the in-process detection is blind or defeated.

Each attack goes through a path the audit hook cannot see: sqlite opens database files
natively, and these environments first remove the authorizer the hook put on their
connection. What stops them is the kernel (Landlock, the pid namespace, the undumpable
fork server), so each test reads back what the environment itself observed: every attempt
must have failed.
"""

from __future__ import annotations

import json
import os

import pytest
from _sandbox_envs import assert_violation, env_source, outcome
from _sandbox_procs import descendants

from spade.sandbox import EnvFault, FaultKind, Sandbox
from spade.sandbox._worker import HOOK_MODULES

#: File names of the code that runs inside the audit hook, as the env code spells them.
HOOK_FILES = repr(tuple(f"/{name}.py" for name in HOOK_MODULES))

#: Tries to open each path as a sqlite database for writing, with the hook's authorizer
#: removed; the observation is a JSON map path -> "opened" or the error.
BLIND_ATTACH = """
import json, os, sqlite3
def attempts(paths):
    seen = {}
    for path in paths:
        conn = sqlite3.connect(':memory:')
        conn.set_authorizer(None)
        try:
            conn.execute("ATTACH '%s' AS x" % path)
            conn.execute('CREATE TABLE x.t(a)')
            seen[path] = 'opened'
        except Exception as exc:
            seen[path] = type(exc).__name__
        conn.close()
    return json.dumps(seen)
"""


def blind(sandbox: Sandbox, paths_expr: str) -> dict[str, str]:
    src = env_source(module=BLIND_ATTACH, obs=f"attempts({paths_expr})")
    with sandbox.load(src) as env:
        obs, _ = env.reset(seed=0)
    return json.loads(obs)


def test_landlock_is_in_force_here(sandbox: Sandbox) -> None:
    if sandbox.landlock == 0:
        pytest.skip("this kernel has no Landlock; the fallback is covered by the audit hook")
    assert sandbox.landlock >= 1


def test_no_host_fd_of_bwrap_or_the_server_is_reachable(sandbox: Sandbox) -> None:
    """The /proc/1/fd/2 write: pid 1 is the fork server (bwrap stays outside the pid
    namespace), its fd 2 is /dev/null, and Landlock denies /proc/<other pid> anyway."""
    seen = blind(sandbox, "['/proc/1/fd/2', '/proc/1/fd/0', '/proc/%d/fd/2' % os.getppid()]")
    assert all(v != "opened" for v in seen.values()), seen
    fault = outcome(sandbox, env_source(reset="open('/proc/1/fd/2', 'w').write('x' * 100)"))
    assert_violation(fault, "filesystem", "/proc/1/fd/2")


def test_fork_server_memory_cannot_be_rewritten(sandbox: Sandbox) -> None:
    """The /proc/<ppid>/mem take-over: undumpable, outside the worker's Landlock domain."""
    if sandbox.landlock == 0:
        pytest.skip("without Landlock only the undumpable server and the hook stand here")
    seen = blind(sandbox, "['/proc/%d/mem' % os.getppid(), '/proc/1/mem', '/proc/self/mem']")
    assert all(v != "opened" for v in seen.values()), seen
    src = env_source(reset="f = open('/proc/%d/mem' % __import__('os').getppid(), 'r+b')")
    assert_violation(outcome(sandbox, src), "filesystem", "/mem")


def test_another_workers_tmp_is_unreachable(sandbox: Sandbox) -> None:
    if sandbox.landlock == 0:
        pytest.skip("without Landlock the workers' tmp dirs share a uid")
    writer = env_source(
        module="import os, sqlite3",
        obs="(sqlite3.connect('mine.db').execute('CREATE TABLE t(a)') and "
        "os.path.realpath('mine.db'))",
    )
    # Every worker is pid 2 of its own pid namespace, so the writer's tmp path names the
    # reader's own (empty) tmp: the writer's table must not be there.
    reader = BLIND_ATTACH.replace("conn.execute('CREATE TABLE x.t(a)')",
                                  "conn.execute('SELECT count(*) FROM x.t')")
    with sandbox.load(writer) as first:
        path, _ = first.reset(seed=0)
        with sandbox.load(env_source(module=reader, obs=f"attempts({[path]!r})")) as env:
            seen = json.loads(env.reset(seed=0)[0])
    assert all(v != "opened" for v in seen.values()), seen


def test_own_tmp_and_memory_databases_still_work(sandbox: Sandbox) -> None:
    seen = blind(sandbox, "['mine.db', ':memory:', '']")
    assert set(seen.values()) == {"opened"}, seen


def test_host_files_stay_out_of_reach_without_the_hook(sandbox: Sandbox) -> None:
    paths = ["/etc/passwd", "/var/x.db", "/usr/lib/spade-probe.db", "/tmp/shared.db"]
    seen = blind(sandbox, repr(paths))
    assert all(v != "opened" for v in seen.values()), seen
    assert not os.path.exists("/usr/lib/spade-probe.db")


def test_sqlite_attach_is_an_attempt(sandbox: Sandbox) -> None:
    src = env_source(
        module="import sqlite3",
        reset="c = sqlite3.connect(':memory:')\ntry:\n"
        "    c.execute(\"ATTACH '/etc/passwd' AS p\")\nexcept Exception:\n    pass",
    )
    assert_violation(outcome(sandbox, src), "filesystem", "sqlite ATTACH /etc/passwd")
    uri = env_source(
        module="import sqlite3", reset="sqlite3.connect('file:/etc/x.db?mode=rwc', uri=True)"
    )
    assert_violation(outcome(sandbox, uri), "filesystem", "/etc/x.db")


def test_every_sandbox_process_is_under_seccomp(sandbox: Sandbox) -> None:
    """The fork server and its workers run with a filter (bwrap's own processes stay
    outside the sandbox and never run environment code)."""
    with sandbox.load(env_source()) as env:
        env.reset(seed=0)
        filtered, bwraps = [], []
        for pid in descendants(os.getpid()):
            try:
                with open(f"/proc/{pid}/status") as fh:
                    status = dict(line.split(":\t", 1) for line in fh if ":\t" in line)
                with open(f"/proc/{pid}/comm") as fh:
                    comm = fh.read().strip()
            except OSError:
                continue
            (bwraps if comm == "bwrap" else filtered).append(status["Seccomp"].strip())
        assert filtered and set(filtered) == {"2"}, filtered


@pytest.mark.parametrize(
    "code",
    [
        "d = os.open('/usr', os.O_RDONLY)\nos.open('../etc/passwd', os.O_RDONLY, dir_fd=d)",
        "d = os.open('.', os.O_RDONLY)\nos.open('../other/x', os.O_WRONLY | os.O_CREAT, dir_fd=d)",
        "d = os.open('.', os.O_RDONLY)\nos.mkdir('../escape', dir_fd=d)",
        "d = os.open('/usr', os.O_RDONLY)\nos.remove('../etc/hostname', dir_fd=d)",
        "d = os.open('.', os.O_RDONLY)\nos.rename('a', '../b', src_dir_fd=d, dst_dir_fd=d)",
    ],
)
def test_dir_fd_calls_are_resolved_against_their_directory(sandbox: Sandbox, code: str) -> None:
    src = env_source(module="import os", reset="open('a', 'w').close()\n" + code)
    assert_violation(outcome(sandbox, src), "filesystem")


def test_dir_fd_inside_the_private_tmp_is_fine(sandbox: Sandbox) -> None:
    src = env_source(
        module="import os",
        reset="os.mkdir('sub')\nd = os.open('sub', os.O_RDONLY)\n"
        "fd = os.open('f.txt', os.O_WRONLY | os.O_CREAT, dir_fd=d)\nos.write(fd, b'ok')\n"
        "os.close(fd)\nos.rename('f.txt', 'g.txt', src_dir_fd=d, dst_dir_fd=d)\n"
        "assert os.listdir(d) == ['g.txt']",
    )
    with sandbox.load(src) as env:
        env.reset(seed=0)
        assert env.violations == ()


def test_signal_handlers_never_run_on_top_of_the_hook(sandbox: Sandbox) -> None:
    """A handler gets the interrupted frame; it must never be the audit hook's."""
    src = env_source(
        module="import signal, time, sys",
        obs="json_out()",
        reset="""
        hits, calls = [], [0]
        def handler(sig, frame):
            frame0 = frame
            calls[0] += 1
            while frame is not None:
                if frame.f_code.co_filename.endswith(HOOK_FILES):
                    hits.append(frame.f_code.co_name)
                    self.where = (frame0.f_code.co_filename, frame0.f_code.co_name)
                frame = frame.f_back
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            open('x', 'w').close()
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.seen = (len(hits), calls[0])
        """,
    ).replace("json_out()", "str(self.seen) + ' ' + str(getattr(self, 'where', ''))")
    src = src.replace("HOOK_FILES", HOOK_FILES)
    with sandbox.load(src) as env:
        obs, _ = env.reset(seed=0)
    hits, calls = (int(x) for x in obs.split(")", 1)[0].strip("(").split(","))
    assert calls > 10 and hits == 0, obs  # obs names the interrupted frame of a hit


def test_finalizers_never_run_inside_the_hook(roomy: Sandbox) -> None:
    src = env_source(
        module="import sys, gc",
        obs="str(len(self.hits))",
        reset="""
        hits = self.hits = []
        class Cycle:
            def __del__(self):
                f = sys._getframe(0)  # audited; a finalizer inside the hook would be hidden
                while f is not None:
                    if f.f_code.co_filename.endswith(HOOK_FILES):
                        hits.append(1)
                    f = f.f_back
        for i in range(3000):
            a = Cycle(); a.me = a
            open('x', 'w').close()
        gc.collect()
        """,
    ).replace("HOOK_FILES", HOOK_FILES)
    with roomy.load(src) as env:  # 3000 hooked opens take seconds on a loaded machine
        obs, _ = env.reset(seed=0)
    assert obs == "0"


#: Takes the raw ``os.write`` out of the fd guard's closure (not audited) and writes a
#: well-formed "clean reply" frame to every fd that might be the reply pipe.
FORGE = """
import json, os
raw = next(c.cell_contents for c in os.write.__closure__
           if getattr(c.cell_contents, '__name__', '') == 'write'
           and c.cell_contents is not os.write)
body = json.dumps(['r', 1, 'forged', 0, [], None]).encode()
for fd in range(3, 16):
    try:
        raw(fd, len(body).to_bytes(4, 'big') + bytes(16) + body)
    except OSError:
        pass
"""


def test_a_forged_frame_from_a_bypassed_guard_is_a_protocol_fault(sandbox: Sandbox) -> None:
    """The report channel is sealed: frames not written by the hook fail the parent's check,
    so dropping or forging reports through raw fd access ends the environment."""
    with sandbox.load(env_source(step=FORGE)) as env:
        env.reset(seed=0)
        with pytest.raises(EnvFault) as fault:
            env.step("x")
    assert fault.value.kind in (FaultKind.PROTOCOL, FaultKind.VIOLATION), fault.value
    assert "not sealed" in str(fault.value) or fault.value.violations, fault.value


@pytest.mark.parametrize(
    "code",
    [
        "os.setpriority(os.PRIO_PROCESS, 1, 19)",
        "os.sched_setaffinity(1, {0})",
        "os.setpriority(os.PRIO_USER, 0, 19)",
        "os.setpriority(os.PRIO_PGRP, 0, 19)",
    ],
)
def test_priority_and_affinity_of_others_are_out_of_reach(sandbox: Sandbox, code: str) -> None:
    fault = outcome(sandbox, env_source(module="import os", reset=code))
    assert_violation(fault, "seccomp", "killed by seccomp")


def test_own_priority_and_affinity_are_fine(sandbox: Sandbox) -> None:
    src = env_source(
        module="import os",
        # Only ever up from the nice value the test runs at (lower needs CAP_SYS_NICE).
        reset="n = os.getpriority(os.PRIO_PROCESS, 0)\n"
        "os.setpriority(os.PRIO_PROCESS, 0, min(19, n + 1))\nos.sched_setaffinity(0, {0})\n"
        "os.setpriority(os.PRIO_PROCESS, os.getpid(), min(19, n + 2))",
    )
    with sandbox.load(src) as env:
        env.reset(seed=0)
        assert env.violations == ()
