"""The worker's serving loop: read a request, dispatch it, check what it left, reply.

Built from named parts, each a closure over names bound before any environment code runs
(so monkeypatching modules afterwards changes nothing): the value converter, the method
dispatcher (with teardown), the after-call resource checks and the loop itself. Only
:func:`serve` hands replies to the audit hook (``sys.audit("spade.reply", ...)``); the hook
refuses replies from any other code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from spade.sandbox import _threads, _wire

#: The name the environment's module is imported under in a worker.
ENV_MODULE = "spade_env"
#: Methods reachable through ``EnvHandle.call`` besides the named ones.
EXTRA_METHODS = frozenset({"check", "render", "close"})


class Fault(Exception):
    """A failure the worker reports with its own kind (``load``, ``protocol``, ...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


def make_converter(np: Any, cap: int) -> tuple[Callable[[Any, int], Any], list[int]]:
    """``(convert, room)``: environment values to wire values, text capped at ``cap``.

    Huge integers (more digits than ``int`` may turn into text) become an ``Opaque``
    instead of failing the call; ``room[0]`` is the text still allowed in this reply.
    """
    isinstance_, type_, len_, str_, repr_ = isinstance, type, len, str, repr
    int_, float_, bool_, list_, tuple_, dict_ = int, float, bool, list, tuple, dict
    base_exception, value_error = BaseException, ValueError
    max_depth, fault = _wire.MAX_DEPTH, Fault
    opaque, coerce = _make_coercer(np)
    small = _wire.INT_LIMIT  # bigger ones would not fit a float; the parent refuses them
    room = [cap]

    def key(k: Any) -> str:
        if type_(k) is str_:
            return k
        if isinstance_(k, str_):
            return str_.__str__(k)
        return str_(k)

    def big(v: int) -> Any:
        return {"O": ["int", f"<int of {v.bit_length()} bits>"]}

    def convert(v: Any, depth: int) -> Any:
        t = type_(v)
        if t is str_:
            room[0] -= len_(v)
            if room[0] < 0:  # fail fast; the parent enforces the real byte limit anyway
                raise fault("protocol", f"reply of over {cap} bytes exceeds the limit "
                            f"of {cap} bytes")  # fmt: skip
            return v
        if t is int_:
            return v if -small < v < small else big(v)
        if t is float_ or t is bool_ or v is None:
            return v
        if depth >= max_depth:
            raise fault("exception", f"return value nested deeper than {max_depth} levels")
        d = depth + 1  # floats, bools and None inside containers are taken as they are
        if t is tuple_:
            return {"T": [x if (u := type_(x)) is float_ or u is bool_ or x is None
                          else convert(x, d) for x in v]}  # fmt: skip
        if t is list_:
            return [x if (u := type_(x)) is float_ or u is bool_ or x is None
                    else convert(x, d) for x in v]  # fmt: skip
        if t is dict_:
            return {"D": {k if type_(k) is str_ else key(k):
                          x if (u := type_(x)) is float_ or u is bool_ or x is None
                          else convert(x, d) for k, x in v.items()}}  # fmt: skip
        plain = coerce(v)
        if plain is not opaque:
            return convert(plain, depth)
        try:
            text = repr_(v)
            text = text[:200] if type_(text) is str_ else "?"
        except (base_exception, value_error) as exc:
            text = f"<repr failed: {type_(exc).__name__}>"
        return {"O": [type_(v).__name__[:200], text]}

    return convert, room


def _make_coercer(np: Any) -> tuple[object, Callable[[Any], Any]]:
    """``(opaque, coerce)``: ``coerce(v)`` is the plain value a numpy scalar or a subclass
    of a plain type stands for (read through the base type's own methods, never the
    subclass's), or ``opaque`` when there is none."""
    isinstance_, str_, int_, float_, bool_ = isinstance, str, int, float, bool
    list_, tuple_, dict_ = list, tuple, dict
    np_bool, np_int, np_float = np.bool_, np.integer, np.floating
    opaque = object()

    def coerce(v: Any) -> Any:
        if isinstance_(v, np_bool):
            return bool_(v)
        if isinstance_(v, np_int):
            return int_(v)
        if isinstance_(v, np_float):
            return float_(v)
        if isinstance_(v, str_):
            return str_.__str__(v)
        if isinstance_(v, bool_):
            return bool_(v)
        if isinstance_(v, int_):
            return int_.__int__(v)
        if isinstance_(v, float_):
            return float_.__float__(v)
        if isinstance_(v, tuple_):
            return tuple_(tuple_.__iter__(v))
        if isinstance_(v, list_):
            return list_(list_.__iter__(v))
        if isinstance_(v, dict_):
            return dict_(dict_.items(v))
        return opaque

    return opaque, coerce


def make_dispatch(
    load: Callable[..., Any], text_env: type, tool_env: type, teardown: tuple[Any, ...],
    filename: list[str],
) -> Callable[[str, list[Any]], Any]:  # fmt: skip
    """The method dispatcher: ``load``, ``finalize``, the environment's methods."""
    collect, run_exitfuncs, threads, current, thread_count, monotonic, sleep = teardown[:7]
    type_, int_, float_, max_, getattr_ = type, int, float, max, getattr
    shift_clock, modules, env_module = teardown[7], sys.modules, ENV_MODULE
    fault, extra_methods = Fault, EXTRA_METHODS
    env: list[Any] = []
    advance: list[Callable[[], None]] = []  # the shifted clocks' gap: arrive, return

    def finalize(budget: Any) -> None:
        """Drop the environment, collect, run atexit callbacks, let threads finish."""
        deadline = monotonic() + (float_(budget) if type_(budget) in (int_, float_) else 0.3)
        env.clear()
        collect()
        run_exitfuncs()
        me = current()
        for thread in threads():
            if thread is not me:
                thread.join(max_(deadline - monotonic(), 0.0))
        while thread_count() and monotonic() < deadline:  # threads started with _thread
            sleep(0.005)
        collect()

    def dispatch(method: str, args: list[Any]) -> Any:
        if method == "load":
            filename[0] = args[1]
            offset = float_(args[2]) if len(args) > 2 and args[2] else 0.0
            gap = float_(args[3]) if len(args) > 3 and args[3] else 0.0
            rebind = None
            if offset or gap:
                rebind, step_clocks, settle = shift_clock(offset, gap)
                if gap:
                    advance.extend((step_clocks, settle))
            obj, info = load(args[0], args[1], text_env, tool_env)
            if rebind is not None:
                rebind(modules[env_module].__dict__)
            env.append(obj)
            return info
        if method == "finalize":
            return finalize(args[0] if args else None)
        target = env[0] if env else None
        if target is None:
            raise fault("protocol", "no environment loaded")
        if advance:  # as if the caller had thought a while before this call
            advance[0]()
            try:
                return call(target, method, args)
            finally:
                advance[1]()
        return call(target, method, args)

    def call(target: Any, method: str, args: list[Any]) -> Any:
        if method == "reset":  # called by keyword, options only when given
            if args[1] is None:
                return target.reset(seed=args[0])
            return target.reset(seed=args[0], options=args[1])
        if method == "step":
            return target.step(args[0])
        if method == "call_tool":
            return target.call_tool(args[0], args[1])
        if method == "solution":
            return target.solution()
        if method in extra_methods:
            return getattr_(target, method)(*args)
        raise fault("protocol", f"unknown method {method!r}")

    return dispatch


def make_resource_check(
    capture: Any, teardown: tuple[Any, ...], limits: dict[str, Any], os_calls: tuple[Any, ...],
    stat_fd: int, tmp: str, private_tmp: bool = False,
) -> Callable[[str], None]:  # fmt: skip
    """What a call must not leave behind, checked after every call (a named attempt each).

    A thread still acting ``THREAD_GRACE_S`` after the call returned or a signal timer
    left armed (see :mod:`spade.sandbox._threads`), file descriptors
    used up to the limit, more than ``tmp_worker_mb`` or ``tmp_worker_inodes`` in the
    worker's private tmp (measured off the step path; under bwrap the tmp is a tmpfs of
    its own, read in one ``statvfs`` that also counts unlinked open files), and output
    beyond ``max_output_total_bytes`` are ``resource`` violations reported through the
    hook (``spade.resource``): contained is not enough, an environment that does these is
    not one to train on.
    """
    dup, close, pread, scandir, statvfs, open_, listdir, getitimer = os_calls
    tmp_cap = int(limits.get("tmp_worker_mb", 64)) << 20
    inode_cap = int(limits.get("tmp_worker_inodes", 4096))
    audit, os_error, base_exception = sys.audit, OSError, BaseException
    open_files = int(limits["open_files"])
    total_cap = int(limits.get("max_output_total_bytes", 1 << 20))
    thorough = frozenset({"reset", "solution", "finalize"})
    reported: set[str] = set()

    def report(what: str, detail: str) -> None:
        if what not in reported:
            reported.add(what)
            audit("spade.resource", detail)

    check_threads = _threads.make_thread_check(
        teardown, pread, stat_fd, (open_, close, listdir, getitimer), report
    )
    tmp_usage = _make_tmp_meter(scandir, statvfs if private_tmp else None)

    def inspect(method: str) -> None:
        if method == "close":
            return
        try:  # first: with no descriptor left, the checks below cannot run at all
            fd = dup(0)
        except os_error:
            report("fds", f"file descriptors exhausted after {method} (limit {open_files})")
        else:
            close(fd)
            if fd >= open_files - 4:
                report("fds", f"{fd} file descriptors open after {method} (limit {open_files})")
        if capture.total > total_cap:
            report("output", f"{capture.total} characters of output, over the cap of "
                   f"{total_cap}")  # fmt: skip
        check_threads(method, method in thorough)
        if method in thorough or method == "load":
            used, inodes = tmp_usage(tmp)
            if used > tmp_cap:
                report("tmp", f"{used >> 20} MiB in its private tmp after {method} (cap "
                       f"{tmp_cap >> 20} MiB)")  # fmt: skip
            if inodes > inode_cap:
                report("inodes", f"{inodes} files and directories in its private tmp after "
                       f"{method} (cap {inode_cap})")  # fmt: skip

    def check(method: str) -> None:
        try:
            inspect(method)
        except base_exception:  # a broken check must not lose the reply, nor pass it
            try:
                report("check", f"the resource check could not run after {method}")
            except base_exception:
                return

    return check


def _make_tmp_meter(
    scandir: Callable[..., Any], statvfs: Callable[[str], Any] | None
) -> Callable[[str], tuple[int, int]]:
    """``tmp_usage(path) -> (bytes, inodes)`` of the worker's tmp: with ``statvfs`` (a
    tmpfs of the worker's own) what the filesystem holds, unlinked open files included;
    else a walk of ``path`` (symlinks not followed, any depth, without recursion)."""

    def from_filesystem(path: str) -> tuple[int, int]:
        fs = statvfs(path)  # type: ignore[misc]
        return (fs.f_blocks - fs.f_bfree) * fs.f_frsize, fs.f_files - fs.f_ffree

    def walk(path: str) -> tuple[int, int]:
        total, count, todo = 0, 0, [path]
        while todo:
            with scandir(todo.pop()) as entries:
                for entry in entries:
                    count += 1
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_size
        return total, count

    return walk if statvfs is None else from_filesystem


def serve(
    req_fd: int, read: Any, capture: Any, parts: dict[str, Any], decode: Callable[[str], Any],
    cap: int, flush_signals: Callable[[], None],
) -> int:  # fmt: skip
    """Answer requests until the parent hangs up; the only sender of replies."""
    audit, unpack, from_wire = sys.audit, _wire.HEADER.unpack_from, _wire.from_wire
    type_, len_, str_, bytes_, map_ = type, len, str, bytes, map
    all_, is_scalar, base_exception, fault = all, _wire.SCALARS.__contains__, BaseException, Fault
    convert, room = parts["convert"]
    dispatch, check, describe, filename = (parts["dispatch"], parts["check"],
                                           parts["describe"], parts["filename"])  # fmt: skip
    buf = bytearray()
    while True:
        if not buf:  # the usual case: one read brings exactly one request
            chunk = read(req_fd, 1 << 16)
            if not chunk:
                return 0
            if len_(chunk) < 4 or len_(chunk) != 4 + unpack(chunk)[0]:
                buf += chunk
        if buf:
            while len_(buf) < 4 or len_(buf) < 4 + unpack(buf)[0]:
                chunk = read(req_fd, 1 << 16)
                if not chunk:
                    return 0
                buf += chunk
            size = 4 + unpack(buf)[0]
            chunk = bytes_(buf[:size])
            del buf[:size]
        nonce, method, args = decode(chunk[4:].decode("utf-8", "surrogatepass"))
        if method == "close":
            audit("spade.reply", ["r", nonce, None, 0, None, None])
            return 0
        try:
            if not all_(map_(is_scalar, map_(type_, args))):
                args = from_wire(args)
            result = dispatch(method, args)
            flush_signals()
            room[0] = cap
            message = ["r", nonce, convert(result, 0), 0, None, None]
        except fault as exc:
            message = ["e", nonce, [exc.kind, exc.message], 0, None, None]
        except base_exception as exc:
            message = ["e", nonce, ["exception", describe(exc, filename[0])], 0, None, None]
        result = args = None  # hold no reference to the environment's objects
        check(method)
        if capture.parts or capture.dropped:
            message[5] = [capture.take(), capture.dropped]
        try:
            audit("spade.reply", message)
        except base_exception as exc:
            fallback = f"the reply could not be encoded: {type_(exc).__name__}: {str_(exc)[:200]}"
            audit("spade.reply", ["e", nonce, ["exception", fallback], 0, None, None])
