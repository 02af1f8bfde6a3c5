"""Pacing a replay by the entries' original timing: when each entry is due, and waiting for it.

A stream ID's first part is the Unix time in ms its entry was added, so a replay can re-create
the original pace.  :class:`PaceSchedule` is the pure rule; :class:`Pacer` applies it with a
clock and a sleep (both injectable, so tests run on a fake clock).

Modes (the entry ``i`` has ID time ``ms_i``; ``t0`` is the moment the first entry was due):

* **speed X**: entry ``i`` is due at ``t0 + (ms_i - ms_0) / X``.  Every due time is computed
  from ``t0`` and the first entry's ms, never by adding up waits, so the time a sleep overshoots
  is not carried into the next wait: a long replay does not drift.
* **speed X with max_gap G**: the same, but a wait between two consecutive entries is at most
  ``G`` seconds of replay time: a longer idle gap shifts the anchor by the part cut off, and only
  by that (the shift is an exact sum of the cut parts, not of measured sleeps).
* **rate N**: ``N`` entries a second whatever their IDs: entry ``i`` is due at ``t0 + i / N``.
* **top speed** (no speed, no rate): nothing waits.

An entry whose ID time is below the previous one's (streams replayed one after another) is due
together with the previous one.  The lag of an entry is how late it was released: the clock
after the wait minus its due time (0 at top speed).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable

__all__ = ["PaceSchedule", "Pacer", "parse_duration", "parse_rate", "parse_speed"]

Clock = Callable[[], float]
Sleep = Callable[[float], None]


def _positive(value: float, what: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive number, not {value!r}")
    return float(value)


class PaceSchedule:
    """When each entry is due, in seconds after the first one (see the module docstring).

    Feed :meth:`due` the ID time (ms) of every entry, in replay order."""

    __slots__ = (
        "_cap_ms",
        "_count",
        "_first_ms",
        "_prev_ms",
        "_shift_ms",
        "max_gap",
        "rate",
        "speed",
    )

    def __init__(
        self,
        speed: float | None = None,
        *,
        max_gap: float | None = None,
        rate: float | None = None,
    ) -> None:
        """``speed``: the replay runs X times faster than the original (0.5: twice slower);
        ``max_gap``: the longest wait between two entries, in seconds (with ``speed``);
        ``rate``: entries per second instead.  Neither ``speed`` nor ``rate``: top speed."""
        if rate is not None and (speed is not None or max_gap is not None):
            raise ValueError("a fixed rate replaces speed and max_gap: give one or the other")
        if max_gap is not None and speed is None:
            raise ValueError("max_gap needs a speed (a paced replay)")
        self.speed = None if speed is None else _positive(speed, "speed")
        self.rate = None if rate is None else _positive(rate, "rate")
        if max_gap is not None and not (math.isfinite(max_gap) and max_gap >= 0):
            raise ValueError(f"max_gap must be 0 or more seconds, not {max_gap!r}")
        self.max_gap = max_gap
        # the longest gap kept, in ID milliseconds
        self._cap_ms = None if max_gap is None or speed is None else max_gap * 1000.0 * speed
        self._count = 0
        self._first_ms: int | None = None
        self._prev_ms = 0
        self._shift_ms = 0.0  # ID time cut out of long gaps and backward steps

    @property
    def paced(self) -> bool:
        """Whether entries wait at all (False at top speed)."""
        return self.speed is not None or self.rate is not None

    def due(self, ms: int) -> float | None:
        """Seconds after the first entry at which the next entry, of ID time ``ms``, is due
        (0.0 for the first); ``None`` at top speed."""
        index = self._count
        self._count += 1
        if self.rate is not None:
            return index / self.rate
        if self.speed is None:
            return None
        if self._first_ms is None:
            self._first_ms = self._prev_ms = ms
            return 0.0
        gap = ms - self._prev_ms
        if gap < 0:  # older than the entry before: due with it
            self._shift_ms += gap
        elif self._cap_ms is not None and gap > self._cap_ms:
            self._shift_ms += gap - self._cap_ms
        self._prev_ms = ms
        return (ms - self._first_ms - self._shift_ms) / (1000.0 * self.speed)


class Pacer:
    """Waits until each entry is due under a :class:`PaceSchedule`, on ``clock`` (seconds,
    monotonic) with ``sleep``; keeps the lag statistics.

    >>> pacer = Pacer(PaceSchedule(speed=10))              # doctest: +SKIP
    >>> for stream, (ms, seq), fields in entries:          # doctest: +SKIP
    ...     pacer.wait(ms)
    ...     deliver(stream, fields)

    The first :meth:`wait` fixes ``t0`` (now).  A sleep that wakes early is slept again; one that
    wakes late shows as lag but moves no later due time.

    ``spin``: the last part of each wait, in seconds, is not slept but spent reading the clock
    (``sleep(0)`` between reads, which lets other threads run), at the price of that much CPU
    per wait.  It halves the median lag on the 2-core VM of docs/benchmarks.md but does not
    shorten the tail there (the process loses its CPU now and then, spinning or not), so the
    default is 0: only sleep (an injected ``sleep`` is then never called with 0)."""

    def __init__(
        self,
        schedule: PaceSchedule,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
        spin: float = 0.0,
    ) -> None:
        if not (math.isfinite(spin) and spin >= 0):
            raise ValueError(f"spin must be 0 or more seconds, not {spin!r}")
        self.schedule = schedule
        self._clock = clock
        self._sleep = sleep
        self._spin = spin
        self.t0: float | None = None
        #: entries released so far, and their lag: last, largest, sum (seconds)
        self.count = 0
        self.last_lag = 0.0
        self.max_lag = 0.0
        self.total_lag = 0.0

    @property
    def mean_lag(self) -> float:
        """The mean lag behind schedule of the entries released so far, in seconds."""
        return self.total_lag / self.count if self.count else 0.0

    def wait(self, ms: int, before_sleep: Callable[[], None] | None = None) -> float:
        """Wait until the next entry (ID time ``ms``) is due; its lag in seconds.

        ``before_sleep`` is called once when the entry is not due yet, before sleeping (a
        replay delivers the entries it holds then: entries due together go in one write)."""
        offset = self.schedule.due(ms)
        self.count += 1
        if offset is None:
            return 0.0
        now = self._clock()
        if self.t0 is None:
            self.t0 = now
        due = self.t0 + offset
        if now < due and before_sleep is not None:
            before_sleep()
            now = self._clock()
        spin = self._spin
        while due - now > spin:
            self._sleep(due - now - spin)
            now = self._clock()
        while now < due:
            self._sleep(0.0)
            now = self._clock()
        lag = now - due
        self.last_lag = lag
        self.total_lag += lag
        self.max_lag = max(self.max_lag, lag)
        return lag


# -- command-line values ------------------------------------------------------------------------

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_DURATION = re.compile(rf"({_NUMBER})(ms|s|m|h)?\Z")
_RATE = re.compile(rf"({_NUMBER})(?:/(s|m|h))?\Z")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_speed(text: str) -> float:
    """A speed factor (``10``, ``0.5``, ``2x``); :class:`ValueError` unless positive."""
    raw = text.strip().removesuffix("x").removesuffix("X")
    if not re.fullmatch(_NUMBER, raw) or float(raw) <= 0:
        raise ValueError(f"{text!r} is not a speed (a positive factor: 10, 0.5, 2x)")
    return float(raw)


def parse_duration(text: str) -> float:
    """A duration in seconds: a number with ``ms``, ``s``, ``m`` or ``h`` (``5s``, ``250ms``,
    ``1.5m``; bare numbers are seconds)."""
    found = _DURATION.match(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a duration (5s, 250ms, 1.5m, 2h)")
    return float(found[1]) * _SECONDS[found[2]]


def parse_rate(text: str) -> float:
    """Entries per second from ``500/s``, ``30/m``, ``1000/h`` or a bare number (per second);
    :class:`ValueError` unless positive."""
    found = _RATE.match(text.strip())
    if found is None or float(found[1]) <= 0:
        raise ValueError(f"{text!r} is not a rate (a positive number per unit: 500/s, 30/m)")
    return float(found[1]) / _SECONDS[found[2]]
