"""Times shown to people: Unix times in ms as ``2026-11-23T19:11:41.008+01:00 (5 min ago)``,
lengths of time in ms (idle times) as ``1h2m``."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

__all__ = ["ago", "duration", "human_time", "now_ms", "shown_idle", "shown_times"]

_STEPS = ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s"))
# The units of a time ago as the CLI reads it (docs/cli.md, "IDs and times"), largest first.
_UNITS = ((86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1000, "s"), (1, "ms"))


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def ago(ms: int, now: int) -> str:
    """``5 min ago``, ``in 3 h``, ``just now``: the distance from ``now``, in its largest
    whole unit (ms below a second)."""
    delta = now - ms
    size = abs(delta)
    if size == 0:
        return "just now"
    amount = f"{size} ms"
    for unit_ms, unit in _STEPS:
        if size >= unit_ms:
            amount = f"{size // unit_ms} {unit}"
            break
    return f"{amount} ago" if delta > 0 else f"in {amount}"


def human_time(ms: int, now: int | None = None) -> str:
    """``ms`` in ISO 8601, in local time with its UTC offset, to the millisecond, and how long
    ago it is (or how far ahead): ``2026-11-23T19:11:41.008+01:00 (5 min ago)``."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, timezone.utc).astimezone()
    except (OverflowError, OSError, ValueError):  # not a time any calendar shows
        return f"{ms} ms"
    offset = moment.strftime("%z")
    text = f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}{offset[:3]}:{offset[3:]}"
    return f"{text} ({ago(ms, now_ms() if now is None else now)})"


def duration(ms: int) -> str:
    """``634ms``, ``1s634ms``, ``1m5s``, ``1h2m``, ``1d1h``: a length of time in its two
    largest units (what is below them dropped), in the units the CLI reads as a time ago
    (``--since 1h2m``), without a space so that it stays one column of a table."""
    sign, size = ("-", -ms) if ms < 0 else ("", ms)
    for i, (unit_ms, unit) in enumerate(_UNITS[:-1]):
        if size >= unit_ms:
            next_ms, next_unit = _UNITS[i + 1]
            below = size % unit_ms // next_ms
            return f"{sign}{size // unit_ms}{unit}" + (f"{below}{next_unit}" if below else "")
    return f"{sign}{size}ms"


def shown_idle(ms: int) -> str:
    """An idle or inactive time of XPENDING or XINFO CONSUMERS: :func:`duration`, or
    ``never`` for -1 (a consumer that never read)."""
    return "never" if ms == -1 else duration(ms)


#: Keys of XINFO replies that hold Unix times in ms (-1: never).
TIME_KEYS = frozenset({"delivery-time", "seen-time", "active-time"})


def shown_times(tree: Any, now: int | None = None) -> Any:
    """A copy of an XINFO tree (dicts and lists) with the values of :data:`TIME_KEYS` given
    as :func:`human_time` text (``never`` for -1), for the text output; ``--json`` keeps ms."""
    if isinstance(tree, dict):
        now = now_ms() if now is None else now
        return {
            key: (
                ("never" if value == -1 else human_time(value, now))
                if key in TIME_KEYS and type(value) is int
                else shown_times(value, now)
            )
            for key, value in tree.items()
        }
    if isinstance(tree, list):
        return [shown_times(item, now) for item in tree]
    return tree
