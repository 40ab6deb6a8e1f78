"""Detection inside the worker: an audit hook that records AND blocks forbidden attempts.

The hook is installed after the runtime is imported and before environment code runs. It
is the only owner of the violation record and of the reply writer: the serving loop hands
replies to it through ``sys.audit("spade.reply", ...)`` and the hook stamps every frame it
writes with the violations seen so far. Environment code therefore cannot drop a report by
monkeypatching ``os``/``json``/builtins or by editing the loop's state; the hook function
itself is unreachable from Python once installed. Every name the hook and its reply writer use
is bound when it is built (closure cells, never module globals or builtins looked up at call
time), and it never calls environment-defined code (no ``repr``/``str``/``==`` on foreign
objects), so environment code never runs on top of the hook's frame. Whether an event is
the environment's or a library's being imported is decided in :mod:`._attribution`.

The parts live in modules of their own: :mod:`._reporter` (the violation record and the
sealed reply writer), :mod:`._paths` (file access), :mod:`._tamper` (watched attributes),
:mod:`._handlers` (what each event means) and :mod:`._events` (the event tables). This
module assembles them and owns the hook's entry point and its re-entrancy guard.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from spade.sandbox import _attribution, _handlers, _paths, _reporter, _tamper, _wire


def make_hook(
    *,
    tmp_dir: str,
    read_roots: Iterable[str],
    library_roots: Iterable[str],
    sandbox_dirs: Iterable[str],
    control_fds: Iterable[int],
    reply_fd: int,
    write: Callable[[int, Any], int],
    protected: tuple[Any, ...],
    preexisting_ids: frozenset[int],
    watched: list[tuple[Any, str, Any]],
    reply_codes: tuple[Any, ...],
    worker_codes: tuple[Any, ...],
    key: bytes,
    max_records: int = 50,
    cell_roots: tuple[Any, ...] = (),
    sandbox_files: frozenset[str] = frozenset(),
) -> Callable[[str, tuple[Any, ...]], None]:
    """Build the audit hook (call ``sys.addaudithook`` on the result, then drop it).

    ``protected``: objects environment code may not inspect or change (their ids are
    compared; the tuple keeps them alive). ``preexisting_ids``: the ids of every class that
    existed before the worker forked, taken in the fork server once (reading a thousand
    class objects in every worker copies hundreds of shared pages); the fork server's
    tuple of those classes keeps them alive, so an id never stands for a newer class.
    ``reply_codes``: code objects that may send replies; ``worker_codes``: code objects
    that may look at sandbox frames. ``cell_roots``/``sandbox_files``: functions whose
    closure cells (followed through the sandbox's own functions, those defined in
    ``sandbox_files``) must keep what they hold. The hook is assembled from named parts,
    each a closure over its own bound state: the reporter (violation record and reply
    writer), the path checks, the tamper check, the per-event handlers and the
    re-entrancy guard.
    """
    attribution = _attribution.make_attribution(library_roots, sandbox_dirs, tmp_dir)
    seal = _wire.make_sealer(key)
    record, deny, send = _reporter.make_reporter(reply_fd, write, max_records, seal)
    fds = frozenset(control_fds)
    paths = _paths.make_path_checks(tmp_dir, read_roots, fds, deny, record, attribution[0])
    cells: list[tuple[Any, Any, str]] = []  # filled below, once the hook exists
    check_watched, prepare_cells = _tamper.make_tamper_check(watched, record, cells)
    handlers = _handlers.make_handlers(
        attribution, paths, deny, record, send, check_watched, fds,
        keep=(protected, reply_codes, worker_codes), preexisting=preexisting_ids,
    )  # fmt: skip
    hook = _make_entry(handlers)
    # ``cell_roots`` (the serving loop's parts, the wrappers): their closure cells and the
    # hook's own are compared by identity before every reply.
    cells += _tamper.closure_cells([hook, *cell_roots], sandbox_files)
    prepare_cells()
    return hook


def _make_entry(
    handlers: tuple[dict[str, Callable[..., Any]], Callable[..., Any]],
) -> Callable[[str, tuple[Any, ...]], None]:
    """The hook itself: dispatch by event name, never re-entered by environment code.

    Events raised by the hook's own work (a frame lookup) are ignored on the same thread.
    Environment code that could otherwise run on top of the hook's frame and edit its state
    is kept out: the cyclic garbage collector (``__del__``, weakref callbacks) is paused
    while the hook runs, and Python signal handlers go through :func:`guard_signals`, which
    defers a signal that arrives during the hook until it returns.
    """
    import _thread
    import gc

    exact, fallback = handlers
    families = _handlers.FAMILIES  # what ``fallback`` looks at
    get_ident, getframe, busy = _thread.get_ident, sys._getframe, set()
    typeof, str_, tuple_, lookup = type, str, tuple, exact.get
    gc_enabled, gc_disable, gc_enable = gc.isenabled, gc.disable, gc.enable

    def caller() -> Any:
        # Frames: 0 caller, 1 handler, 2 hook, 3 the code that caused the event.
        return getframe(3)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if typeof(event) is not str_ or typeof(args) is not tuple_:
            return
        handler = lookup(event)
        if handler is None and not event.startswith(families):
            return  # most events (every import's details, object creation, ...) are no one's
        tid = get_ident()
        if tid in busy:
            return
        busy.add(tid)
        collecting = gc_enabled()
        if collecting:
            gc_disable()
        try:
            if handler is not None:
                handler(event, args, caller)
            else:
                fallback(event, args, caller)
        finally:
            if collecting:
                gc_enable()
            busy.discard(tid)

    return hook

