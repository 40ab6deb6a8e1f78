"""The shifted wall clock of the validator's second determinism worker.

An instance that depends on the date or the time of day must differ between two workers
whose clocks disagree; :func:`shift_clock` moves what environment code reads as the
current time (durations stay true) so that it does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def shift_clock(offset_s: float) -> Callable[[dict[str, Any]], None]:
    """Move the wall clock environment code sees by ``offset_s`` seconds.

    The validator's second determinism worker runs with a shifted clock, so an instance
    that depends on the date or time differs between the two workers. ``time.time``,
    ``time_ns``, ``localtime``, ``gmtime``, ``ctime``, ``asctime`` and ``strftime`` move at
    once; ``time.monotonic``/``perf_counter`` (durations) do not. ``datetime``'s classes
    are native types that compiled libraries check by identity, so they are never replaced
    in the ``datetime`` module: the returned ``rebind(namespace)`` gives the environment
    module's own names (``datetime``, ``datetime.datetime``, ``datetime.date``) shifted
    stand-ins once it has been imported.
    """
    import datetime
    import time
    import types

    raw_time = time.time

    def now() -> float:
        return raw_time() + offset_s

    _shift_time_module(time, now, int(offset_s * 1e9))
    shifted_dt, shifted_date = _shifted_datetime_classes(datetime, now)
    shifted_module = types.ModuleType("datetime")
    shifted_module.__dict__.update(datetime.__dict__)
    shifted_module.datetime = shifted_dt  # type: ignore[attr-defined]
    shifted_module.date = shifted_date  # type: ignore[attr-defined]
    swaps = {id(datetime): shifted_module, id(datetime.datetime): shifted_dt,
             id(datetime.date): shifted_date}  # fmt: skip

    def rebind(namespace: dict[str, Any]) -> None:
        for name, value in list(namespace.items()):
            swap = swaps.get(id(value))
            if swap is not None:
                namespace[name] = swap

    return rebind


def _shift_time_module(time: Any, now: Callable[[], float], shift_ns: int) -> None:
    """Replace the wall-clock functions of ``time`` by ones that read ``now()``."""
    raw_ns = time.time_ns
    raw_local, raw_gm, raw_ctime = time.localtime, time.gmtime, time.ctime
    raw_asctime, raw_strftime = time.asctime, time.strftime

    def pick(secs: Any) -> Any:
        return now() if secs is None else secs

    time.time = now
    time.time_ns = lambda: raw_ns() + shift_ns
    time.localtime = lambda secs=None: raw_local(pick(secs))
    time.gmtime = lambda secs=None: raw_gm(pick(secs))
    time.ctime = lambda secs=None: raw_ctime(pick(secs))
    time.asctime = lambda t=None: raw_asctime(raw_local(now()) if t is None else t)
    time.strftime = lambda fmt, t=None: raw_strftime(fmt, raw_local(now()) if t is None else t)


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
