"""Per-worker kernel isolation: one worker's tmp, IPC objects and files never reach another.

Each hostile environment here runs in the same fork server as valid ones (one sandbox,
one hash seed): whatever it does to its own tmp, or tries against a sibling's, every
valid environment must play exactly as it plays alone, and the fork server must survive.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
from _sandbox_envs import assert_violation, env_source, outcome
from _sandbox_procs import ROOMY, descendants

from spade.sandbox import EnvFault, FaultKind, Sandbox
from spade.sandbox._zygote import remove_tree

#: A valid environment that uses its tmp the ordinary way: the observation says what it
#: found there and wrote, the step reward says whether its file survived until then.
VALID = env_source(
    module="import os, sqlite3, tempfile",
    reset="""
        self.n = len(os.listdir('.'))
        with open('state.txt', 'w') as fh:
            fh.write(str(seed) * 1000)
        db = sqlite3.connect('scores.db')
        db.execute('CREATE TABLE IF NOT EXISTS t(a)')
        db.execute('INSERT INTO t VALUES (?)', (seed,))
        db.commit()
        self.rows = db.execute('SELECT count(*) FROM t').fetchone()[0]
        db.close()
        with tempfile.NamedTemporaryFile(dir='.', delete=False) as fh:
            fh.write(b'x' * (8 << 20))
    """,
    obs="f'{self.n} {self.rows} {seed}'",
    step="""
        with open('state.txt') as fh:
            ok = fh.read() == str(self.seed_) * 1000
        return 'checked', float(ok), True, False, {}
    """,
).replace("super().reset(seed=seed)", "super().reset(seed=seed); self.seed_ = seed")


def play(sandbox: Sandbox, source: str = VALID, seed: int = 3) -> tuple[object, ...]:
    with sandbox.load(source) as env:
        first = env.reset(seed=seed)
        second = env.step("check")
        return first, second, env.finalize()


def hostile(sandbox: Sandbox, source: str) -> EnvFault | None:
    """Run a hostile env to its end (reset, step, teardown); its fault if it had one."""
    try:
        with sandbox.load(source) as env:
            env.reset(seed=0)
            env.step("go")
            late = env.finalize()
    except EnvFault as fault:
        return fault
    return EnvFault(FaultKind.VIOLATION, str(late[0]), late) if late else None


DEEP_CHAIN = env_source(
    module="import os",
    reset="""
        base = os.getcwd()
        for _ in range(3000):
            os.mkdir('d')
            os.chdir('d')
        os.chdir(base)
    """,
)

READ_ONLY_FILL = env_source(
    module="import os",
    reset="""
        os.mkdir('keep')
        try:
            for n in range(10):
                with open(f'keep/blob{n}', 'wb') as fh:
                    fh.write(b'x' * (15 << 20))
        except OSError:
            pass
        os.chmod('keep', 0o500)
        os.chmod('.', 0o500)
    """,
)

MANY_FILES = env_source(
    module="import os",
    reset="""
        try:
            for n in range(100_000):
                open(f'f{n}', 'w').close()
        except OSError:
            pass
    """,
)

UNLINKED = env_source(
    module="import os",
    reset="""
        self.keep = []
        try:
            for n in range(6):
                fh = open(f'u{n}', 'wb', buffering=0)
                self.keep.append(fh)
                os.unlink(f'u{n}')
                fh.write(b'x' * (15 << 20))
        except OSError:
            pass
    """,
)


#: Writes 8 MiB files (below RLIMIT_FSIZE) into its tmp until the kernel says no, then
#: tries the other places a process might write, and prints what each took.
WRITE_UNTIL_FULL = env_source(
    module="import errno, os",
    reset="""
        taken = {}
        for where in ('.', '/dev/shm', '/var/tmp', '/dev', '/'):
            total, error = 0, None
            try:
                for n in range(1 << 10):
                    with open(os.path.join(where, f'fill{n}'), 'wb', buffering=0) as fh:
                        for _ in range(8):
                            total += fh.write(b'x' * (1 << 20))
            except OSError as exc:
                error = errno.errorcode.get(exc.errno, str(exc.errno))
            taken[where] = (total, error)
        print(repr(taken))
    """,
)


def test_writing_until_it_fails_stops_at_the_workers_own_cap(roomy: Sandbox) -> None:
    """The kernel stops a worker's writes at its tmpfs size (ENOSPC), whatever the number of
    files; every other place is refused and named (Landlock stops it where the hook is
    bypassed, see test_os_layers); the resource check names the full tmp; a valid sibling
    started while the full worker is still alive plays exactly as it plays alone."""
    baseline = play(roomy)
    with roomy.load(WRITE_UNTIL_FULL) as env:
        with pytest.raises(EnvFault) as fault:
            env.reset(seed=0)
        assert_violation(fault.value, "resource", "private tmp")
        taken = eval(fault.value.output.strip().splitlines()[-1])
        cap = (ROOMY.tmp_worker_mb << 20) + (1 << 20)
        total, error = taken["."]
        assert error == "ENOSPC" and ROOMY.tmp_worker_mb << 20 <= total <= cap, taken
        assert all(taken[w][0] == 0 for w in taken if w != "."), taken
        assert_violation(fault.value, "filesystem", "/dev/shm")
        assert play(roomy) == baseline  # next to the full worker, not after it


def test_a_deep_directory_chain_never_takes_the_fork_server_down(sandbox: Sandbox) -> None:
    baseline = play(sandbox)
    hostile(sandbox, DEEP_CHAIN)
    assert play(sandbox) == baseline


@pytest.mark.parametrize("source", [READ_ONLY_FILL, MANY_FILES, UNLINKED],
                         ids=["read-only-fill", "many-files", "unlinked-files"])  # fmt: skip
def test_a_full_tmp_is_the_hostile_workers_own(roomy: Sandbox, source: str) -> None:
    baseline = play(roomy)
    fault = hostile(roomy, source)
    assert fault is not None, "filling the tmp went unnamed"
    assert_violation(fault, "resource", "private tmp")
    assert play(roomy) == baseline  # the next worker has its whole tmp


def test_no_worker_sees_or_touches_another_workers_tmp(sandbox: Sandbox) -> None:
    """The marker and sabotage attacks: a live sibling's tmp file does not exist in a
    worker's view, whatever path type names it (str subclass, bytes, PathLike). Every
    worker is pid 2 of its own pid namespace, so the sibling's tmp path is the spy's own
    tmp, which holds none of the sibling's files."""
    baseline = play(sandbox)
    with sandbox.load(VALID) as victim:
        victim.reset(seed=3)
        where = env_source(module="import os", obs="os.path.realpath('state.txt')")
        with sandbox.load(where) as peer:
            victim_file = peer.reset(seed=0)[0]  # a path like the victim's
        probe = env_source(
            module="import os, pathlib\nclass P(str): pass",
            obs=f"""json.dumps([os.path.exists(p) for p in (
                {os.path.dirname(victim_file)!r}, P({victim_file!r}),
                pathlib.Path({victim_file!r}), {victim_file.encode()!r})])""",
        ).replace("import os, pathlib", "import json, os, pathlib")
        with sandbox.load(probe) as spy:
            seen = json.loads(spy.reset(seed=0)[0])
        assert seen == [True, False, False, False], seen
        assert victim.step("check")[1] == 1.0
    assert play(sandbox) == baseline


def test_a_sibling_cannot_sabotage_a_live_victim(sandbox: Sandbox) -> None:
    saboteur = env_source(
        module="import os, glob\nclass P(str): pass",
        reset="""
            for path in glob.glob('/tmp/*') + glob.glob('/tmp/*/*'):
                if not path.startswith(os.getcwd()):
                    try:
                        os.chmod(P(path), 0)
                        os.utime(P(path), (0, 0))
                    except OSError:
                        pass
        """,
    )
    baseline = play(sandbox)
    with sandbox.load(VALID) as victim:
        first = victim.reset(seed=3)
        hostile(sandbox, saboteur)
        second = victim.step("check")
        assert (first, second, victim.finalize()) == baseline


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("fd = os.memfd_create('x')\nos.ftruncate(fd, 640 << 20)", "memfd_create"),
        # the raw function from the guard's closure: the kernel is what stops it
        ("raw = [c.cell_contents for c in os.memfd_create.__closure__\n"
         "       if getattr(c.cell_contents, '__name__', '') == 'memfd_create'][0]\n"
         "fd = raw('x', 1)\nos.ftruncate(fd, 640 << 20)",
         "killed by seccomp (SIGSYS): forbidden system call memfd_create()"),
    ],
    ids=["named", "raw-seccomp"],
)
def test_memfd_is_named_and_refused_by_the_kernel(
    sandbox: Sandbox, code: str, needle: str
) -> None:
    fault = hostile(sandbox, env_source(module="import os", reset=code))
    assert fault is not None and fault.kind == FaultKind.VIOLATION, fault
    assert needle in str(fault), fault
    assert play(sandbox)[1][1] == 1.0


def test_system_v_shared_memory_is_refused_by_the_kernel(sandbox: Sandbox) -> None:
    """Through ctypes (the audit hook names the native attempt; seccomp is the backstop
    that stops ``shmget`` even when the hook let the call through)."""
    code = """
        import ctypes
        libc = ctypes.CDLL(None)
        self.id = libc.shmget(0x5AFE, 64 << 20, 0o1666)
    """
    fault = hostile(sandbox, env_source(reset=code))
    assert fault is not None and fault.kind == FaultKind.VIOLATION, fault


def test_each_worker_has_its_own_ipc_namespace(sandbox: Sandbox) -> None:
    ipc = env_source(module="import os", obs="os.readlink('/proc/self/ns/ipc')")
    with sandbox.load(ipc) as first, sandbox.load(ipc) as second:
        assert first.reset(seed=0)[0] != second.reset(seed=0)[0]


def test_remove_tree_survives_depth_and_read_only_dirs(tmp_path: os.PathLike[str]) -> None:
    root = os.path.join(tmp_path, "w1")
    os.mkdir(root)
    here = os.open(".", os.O_PATH)
    try:  # deeper than a recursive rmtree's recursion limit and longer than PATH_MAX
        os.chdir(root)
        for _ in range(3000):
            os.mkdir("dd")
            os.chdir("dd")
    finally:
        os.fchdir(here)
        os.close(here)
    with open(os.path.join(root, "f"), "w") as fh:
        fh.write("x")
    os.mkdir(os.path.join(root, "ro"))
    with open(os.path.join(root, "ro", "f"), "w") as fh:
        fh.write("x")
    os.chmod(os.path.join(root, "ro"), stat.S_IRUSR | stat.S_IXUSR)
    os.symlink("/", os.path.join(root, "link"))
    cwd = os.getcwd()
    remove_tree(root)
    assert not os.path.exists(root)
    assert os.getcwd() == cwd
    remove_tree(root)  # gone already: still no exception
    remove_tree("\0bad")  # an impossible path: still no exception


def test_a_worker_finds_no_other_process_in_proc(sandbox: Sandbox) -> None:
    """Its /proc holds its own /proc/<pid> only: not the fork server, not a live sibling."""
    probe = env_source(
        module="import os",
        obs="repr([os.path.exists(p) for p in ('/proc/1', f'/proc/{os.getppid()}', "
        "f'/proc/{os.getpid() - 1}', '/proc/self/stat', f'/proc/{os.getpid()}/status')])",
    )
    with sandbox.load(VALID) as sibling:
        sibling.reset(seed=3)
        with sandbox.load(probe) as env:
            assert env.reset(seed=0)[0] == repr([False, False, False, True, True])
            assert env.finalize() == ()


#: Which pids exist in the worker's own namespace, asked with calls that take a pid and
#: raise no audit event (the kernel's answer alone: ``ESRCH`` for a pid it does not know).
PID_SCAN = """
import os
def known(pids):
    found = []
    for pid in pids:
        try:
            os.getpriority(os.PRIO_PROCESS, pid)
            found.append(pid)
        except ProcessLookupError:
            pass
    return found
"""


def sandbox_pids(root: int) -> dict[int, list[int]]:
    """Host pid -> its pids in the nested namespaces below the host's (``NSpid``), for
    every live process below ``root``."""
    seen = {}
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/status") as fh:
                line = next(ln for ln in fh if ln.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        seen[pid] = [int(n) for n in line.split()[2:]]
    return seen


def test_each_worker_is_alone_in_a_pid_namespace_of_its_own(sandbox: Sandbox) -> None:
    """No pid of the fork server or of a live sibling (taken from the host's NSpid) names
    any process in a worker's view, nor does any other pid below 2**15: the worker is
    pid 2 under its own init. The scan itself is harmless, so the worker stays clean."""
    probe = env_source(module=PID_SCAN, obs="repr((os.getpid(), os.getppid(), "
                       "known(range(1, 1 << 15))))")  # fmt: skip
    with sandbox.load(VALID) as victim:
        victim.reset(seed=3)
        with sandbox.load(probe) as spy:
            levels = sandbox_pids(os.getpid())
            nested = [n for n in levels.values() if len(n) == 2]  # workers and their inits
            assert nested and all(n[1] in (1, 2) for n in nested), levels
            others = {n[0] for n in levels.values() if n}  # the sandbox's own numbering
            assert max(others) < 1 << 15, others
            mine, parent, known = eval(spy.reset(seed=0)[0])
            assert (mine, parent) == (2, 1)
            assert known == [1, 2], known  # its init and itself, nothing else
            assert spy.finalize() == ()
        assert victim.step("check")[1] == 1.0


def test_signalling_a_sibling_or_the_fork_server_is_named_and_harms_nobody(
    sandbox: Sandbox,
) -> None:
    """A worker that signals every pid it can think of (the sandbox's numbering, its own
    init) is rejected with the attempt named; the sibling plays on as it plays alone."""
    baseline = play(sandbox)
    with sandbox.load(VALID) as victim:
        first = victim.reset(seed=3)
        others = sorted({n[0] for n in sandbox_pids(os.getpid()).values() if n})
        hostile_src = env_source(
            module="import os, signal",
            reset=f"""
                for pid in {[1, *others]!r}:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            """,
        )
        assert_violation(outcome(sandbox, hostile_src), "signal")
        second = victim.step("check")
        assert (first, second, victim.finalize()) == baseline
