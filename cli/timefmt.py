"""Unix times in ms shown to people: ``2026-11-23T19:11:41.008+01:00 (5 min ago)``."""

from __future__ import annotations

import time
from datetime import datetime, timezone

__all__ = ["ago", "human_time", "now_ms"]

_STEPS = ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s"))


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
