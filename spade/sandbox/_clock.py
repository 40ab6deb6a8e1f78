"""The shifted clocks of the validator's second determinism worker.

An instance that depends on the date or the time of day must differ between two workers
whose clocks disagree; :func:`shift_clock` moves what environment code reads as the
current time so that it does. Behaviour that depends on how long the player took (a
password accepted only when the answer comes seconds after ``reset``, as a language
model's does, while a validator's calls come back to back) must show in that worker too:
every clock, durations included, can also jump forward between two calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def shift_clock(
    offset_s: float, gap_s: float = 0.0
) -> tuple[Callable[[dict[str, Any]], None], Callable[[], None], Callable[[], None]]:
    """Move the wall clock environment code sees by ``offset_s`` seconds.

    The validator's second determinism worker runs with a shifted clock, so an instance
    that depends on the date or time differs between the two workers. ``time.time``,
    ``time_ns``, ``localtime``, ``gmtime``, ``ctime``, ``asctime`` and ``strftime`` move at
    once, and so do ``clock_gettime``/``clock_gettime_ns`` of the wall clocks and SQLite's
    ``'now'`` on connections made afterwards; ``time.monotonic``/``perf_counter``
    (durations) do not. ``datetime``'s classes
    are native types that compiled libraries check by identity, so they are never replaced
    in the ``datetime`` module: the returned ``rebind(namespace)`` gives the environment
    module's own names (``datetime``, ``datetime.datetime``, ``datetime.date``, a bound
    ``datetime.now``), the default arguments of its functions and methods, and its
    classes' attributes shifted stand-ins once it has been imported. A clock read through
    native code (``ctypes``) is not shifted; such code is an attempt of its own.

    The returned ``advance()`` (call it as each call into the environment arrives) and
    ``settle()`` (as each call returns) set every clock -- the wall clocks above and
    ``monotonic``, ``perf_counter`` and the monotonic/boot ``clock_gettime`` ids alike --
    so that each call arrives exactly ``gap_s`` after the previous one returned, however
    long the caller really took: the environment sees the same latency in training (a
    language model's, seconds, varying) as in validation (back to back), so a gate on
    latency opens alike in both. Within a call durations stay true. CPU-time clocks
    (``process_time``, ``thread_time``) never move.
    """
    import datetime
    import time
    import types

    raw_time, raw_mono = time.time, time.monotonic
    moved = [offset_s, 0.0]  # [wall clock shift, gaps so far]
    returned = [-1.0]  # raw monotonic time the last call returned (none yet)

    def now() -> float:
        return raw_time() + moved[0] + moved[1]

    def advance() -> None:
        if returned[0] >= 0.0:
            moved[1] -= raw_mono() - returned[0]  # the caller's real latency does not count
        moved[1] += gap_s

    def settle() -> None:
        returned[0] = raw_mono()

    _shift_time_module(time, now, moved)
    _shift_sqlite(now)
    shifted_dt, shifted_date = _shifted_datetime_classes(datetime, now)
    shifted_module = types.ModuleType("datetime")
    shifted_module.__dict__.update(datetime.__dict__)
    shifted_module.datetime = shifted_dt  # type: ignore[attr-defined]
    shifted_module.date = shifted_date  # type: ignore[attr-defined]
    swaps = {id(datetime): shifted_module, id(datetime.datetime): shifted_dt,
             id(datetime.date): shifted_date}  # fmt: skip
    methods: dict[Any, type] = {datetime.datetime: shifted_dt, datetime.date: shifted_date}
    builtin_method = type(datetime.datetime.now)

    def swap(value: Any) -> Any:
        """The shifted stand-in for ``value`` (a module, class or bound ``now``), or None."""
        found = swaps.get(id(value))
        if found is None and type(value) is builtin_method:
            owner = methods.get(getattr(value, "__self__", None))
            if owner is not None and value.__name__ in ("now", "today", "utcnow"):
                found = getattr(owner, value.__name__)
        return found

    def rebind(namespace: dict[str, Any]) -> None:
        for name, value in list(namespace.items()):
            found = swap(value)
            if found is not None:
                namespace[name] = found
        _rebind_defaults(namespace, swap)

    return rebind, advance, settle


def _rebind_defaults(namespace: dict[str, Any], swap: Callable[[Any], Any]) -> None:
    """Swap real clock functions bound as default arguments (``def f(now=datetime.now)``)
    of the module's functions and of its classes' methods, and class attributes."""
    import types

    def fix(function: Any) -> None:
        if type(function) in (staticmethod, classmethod):
            function = function.__func__
        if type(function) is not types.FunctionType:
            return
        if function.__defaults__:
            function.__defaults__ = tuple(swap(d) or d for d in function.__defaults__)
        if function.__kwdefaults__:
            function.__kwdefaults__ = {k: swap(d) or d for k, d in function.__kwdefaults__.items()}

    for value in list(namespace.values()):
        if isinstance(value, type) and value.__module__ == namespace.get("__name__"):
            for name, member in list(vars(value).items()):
                found = swap(member)
                if found is not None:
                    setattr(value, name, staticmethod(found) if callable(found) else found)
                fix(member)
        else:
            fix(value)


#: Clocks that read the wall clock (``time.clock_gettime`` ids): realtime, its coarse
#: and alarm variants, and TAI.
WALL_CLOCKS = frozenset({0, 5, 8, 11})
#: Clocks that measure elapsed time: monotonic, its raw and coarse variants, boot time
#: and its alarm variant. They move by the gaps only.
ELAPSED_CLOCKS = frozenset({1, 4, 6, 7, 9})


def _shift_sqlite(now: Callable[[], float]) -> None:
    """Make SQLite's ``'now'`` (``date``, ``time``, ``datetime``, ``julianday``,
    ``unixepoch``, ``strftime``, ``timediff`` and ``CURRENT_*``) read ``now()`` on every
    connection made from here on: application functions of the same names take
    precedence over SQLite's own, and evaluate them with ``'now'`` replaced on a private
    connection."""
    import sqlite3
    import sqlite3.dbapi2

    raw_connect = sqlite3.connect
    helper: list[Any] = []
    zero_arg = {"current_timestamp": "datetime", "current_date": "date",
                "current_time": "time"}  # fmt: skip

    def stamp() -> str:
        import datetime

        moment = datetime.datetime.fromtimestamp(now(), datetime.UTC)
        return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"

    def evaluate(name: str, args: tuple[Any, ...]) -> Any:
        if not helper:
            helper.append(raw_connect(":memory:"))
        moment = stamp()
        values = [moment if type(a) is str and a.strip().lower() == "now" else a for a in args]
        if not values or (name == "strftime" and len(values) == 1):
            values.append(moment)
        marks = ",".join("?" * len(values))
        return helper[0].execute(f"SELECT {name}({marks})", values).fetchone()[0]

    def shifted(conn: Any) -> None:
        for name in ("date", "time", "datetime", "julianday", "unixepoch", "strftime",
                     "timediff"):  # fmt: skip
            conn.create_function(name, -1, lambda *a, _n=name: evaluate(_n, a))
        for name, real in zero_arg.items():
            conn.create_function(name, 0, lambda _r=real: evaluate(_r, ()))

    def connect(*args: Any, **kwargs: Any) -> Any:
        conn = raw_connect(*args, **kwargs)
        shifted(conn)
        return conn

    connect.__name__ = "connect"
    for module in (sqlite3, sqlite3.dbapi2):
        if getattr(module, "connect", None) is raw_connect:
            module.connect = connect  # type: ignore[attr-defined]


def _shift_time_module(time: Any, now: Callable[[], float], moved: list[float]) -> None:
    """Replace the clock functions of ``time`` by ones that read ``now()`` (wall clocks)
    or add the gaps so far (``moved[1]``) to the elapsed-time clocks."""
    raw_ns = time.time_ns
    raw_local, raw_gm, raw_ctime = time.localtime, time.gmtime, time.ctime
    raw_asctime, raw_strftime = time.asctime, time.strftime
    raw_clock, raw_clock_ns = time.clock_gettime, time.clock_gettime_ns
    raw_mono, raw_mono_ns = time.monotonic, time.monotonic_ns
    raw_perf, raw_perf_ns = time.perf_counter, time.perf_counter_ns
    walls, elapsed, int_ = WALL_CLOCKS, ELAPSED_CLOCKS, int

    def pick(secs: Any) -> Any:
        return now() if secs is None else secs

    def shift(clock: Any) -> float:
        if clock in walls:
            return moved[0] + moved[1]
        return moved[1] if clock in elapsed else 0.0

    time.time = now
    time.time_ns = lambda: raw_ns() + int_((moved[0] + moved[1]) * 1e9)
    time.localtime = lambda secs=None: raw_local(pick(secs))
    time.gmtime = lambda secs=None: raw_gm(pick(secs))
    time.ctime = lambda secs=None: raw_ctime(pick(secs))
    time.asctime = lambda t=None: raw_asctime(raw_local(now()) if t is None else t)
    time.strftime = lambda fmt, t=None: raw_strftime(fmt, raw_local(now()) if t is None else t)
    time.clock_gettime = lambda clock: raw_clock(clock) + shift(clock)
    time.clock_gettime_ns = lambda clock: raw_clock_ns(clock) + int_(shift(clock) * 1e9)
    time.monotonic = lambda: raw_mono() + moved[1]
    time.monotonic_ns = lambda: raw_mono_ns() + int_(moved[1] * 1e9)
    time.perf_counter = lambda: raw_perf() + moved[1]
    time.perf_counter_ns = lambda: raw_perf_ns() + int_(moved[1] * 1e9)


def _shifted_datetime_classes(datetime: Any, now: Callable[[], float]) -> tuple[type, type]:
    """Stand-ins for ``datetime.datetime`` and ``datetime.date`` whose ``now``/``today``/
    ``utcnow`` read ``now()``; ``isinstance``/``issubclass`` answer as for the real ones."""
    base_dt, base_date = datetime.datetime, datetime.date

    class Standin(type):
        """``isinstance``/``issubclass`` against a stand-in answer as for the real class."""

        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, cls.__mro__[1])

        def __subclasscheck__(cls, sub: Any) -> bool:
            return issubclass(sub, cls.__mro__[1])

    class ShiftedDateTime(base_dt, metaclass=Standin):  # type: ignore[valid-type,misc]
        __slots__ = ()

        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return base_dt.fromtimestamp(now(), tz)

        @classmethod
        def today(cls) -> Any:
            return base_dt.fromtimestamp(now())

        @classmethod
        def utcnow(cls) -> Any:
            return base_dt.fromtimestamp(now(), datetime.UTC).replace(tzinfo=None)

    class ShiftedDate(base_date, metaclass=Standin):  # type: ignore[valid-type,misc]
        __slots__ = ()

        @classmethod
        def today(cls) -> Any:
            return base_date.fromtimestamp(now())

    return ShiftedDateTime, ShiftedDate
