"""Comparing replies that hold clock readings: exact everywhere except the time fields.

Valkey and rstore run the same command a few milliseconds apart, so a delivery time, a
``seen-time`` or an idle time cannot match to the millisecond.  :func:`split_times` takes a
reply apart into its *shape* (the reply with every time field replaced by :data:`TIME`) and the
list of time values, in order.  :func:`timed_difference` then requires identical shapes and
every pair of times within a tolerance.  ``-1`` ("never", in ``active-time`` and ``inactive``)
is not a time: it stays in the shape and must match exactly.

The time fields, by reply:

* ``XPENDING key group [IDLE n] start end count [consumer]``: item[2], the idle ms;
* ``XINFO CONSUMERS``: ``idle`` and ``inactive`` (ms ago);
* ``XINFO STREAM key FULL``: per group, ``pending`` item[2] (absolute delivery time); per
  consumer ``seen-time``, ``active-time`` (absolute) and ``pending`` item[1].

Absolute and relative times are compared the same way (both sides read the same clock).
"""

from __future__ import annotations

from typing import Any

from .resp import ErrorReply

__all__ = ["TIME", "TIME_TOLERANCE_MS", "split_times", "timed_difference"]

TIME_TOLERANCE_MS = 1000  # the two sides run one command a few ms apart; GC pauses add some


class _Time:
    """Stands for a clock reading in a reply's shape."""

    def __repr__(self) -> str:
        return "<time>"


TIME: Any = _Time()


def _mask(value: Any, times: list[int]) -> Any:
    """``value`` itself when it is -1 ("never"), else :data:`TIME` (recording the value)."""
    if isinstance(value, int) and value != -1:
        times.append(value)
        return TIME
    return value


def _mask_pairs(flat: Any, names: set[bytes], times: list[int]) -> Any:
    """A flat ``[name, value, ...]`` list with the values of ``names`` masked."""
    if not isinstance(flat, list):
        return flat
    out = list(flat)
    for i in range(0, len(out) - 1, 2):
        if out[i] in names:
            out[i + 1] = _mask(out[i + 1], times)
    return out


def _mask_items(items: Any, position: int, times: list[int]) -> Any:
    """A list of fixed-size items (PEL entries) with ``item[position]`` masked."""
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        if isinstance(item, list) and len(item) > position:
            item = list(item)
            item[position] = _mask(item[position], times)
        out.append(item)
    return out


def _field(flat: list[Any], name: bytes) -> int | None:
    for i in range(0, len(flat) - 1, 2):
        if flat[i] == name:
            return i + 1
    return None


def _mask_full(reply: Any, times: list[int]) -> Any:
    if not isinstance(reply, list):
        return reply
    out = list(reply)
    at = _field(out, b"groups")
    if at is None or not isinstance(out[at], list):
        return out
    groups = []
    for group in out[at]:
        if not isinstance(group, list):
            groups.append(group)
            continue
        group = list(group)
        pending = _field(group, b"pending")
        if pending is not None:
            group[pending] = _mask_items(group[pending], 2, times)
        consumers_at = _field(group, b"consumers")
        if consumers_at is not None and isinstance(group[consumers_at], list):
            consumers = []
            for consumer in group[consumers_at]:
                consumer = _mask_pairs(consumer, {b"seen-time", b"active-time"}, times)
                if isinstance(consumer, list):
                    own = _field(consumer, b"pending")
                    if own is not None:
                        consumer[own] = _mask_items(consumer[own], 1, times)
                consumers.append(consumer)
            group[consumers_at] = consumers
        groups.append(group)
    out[at] = groups
    return out


def _upper(arg: Any) -> bytes:
    raw = arg if isinstance(arg, bytes) else str(arg).encode()
    return raw.upper()


def split_times(argv: tuple[Any, ...], reply: Any) -> tuple[Any, list[int]]:
    """``(shape, times)`` of ``reply`` to the command ``argv`` (errors have no times)."""
    times: list[int] = []
    if isinstance(reply, ErrorReply) or not argv:
        return reply, times
    name = _upper(argv[0])
    sub = _upper(argv[1]) if len(argv) > 1 else b""
    if name == b"XPENDING" and len(argv) >= 6:
        return _mask_items(reply, 2, times), times
    if name == b"XINFO" and sub == b"CONSUMERS" and isinstance(reply, list):
        return [_mask_pairs(c, {b"idle", b"inactive"}, times) for c in reply], times
    if name == b"XINFO" and sub == b"STREAM" and len(argv) >= 4:
        return _mask_full(reply, times), times
    return reply, times


def timed_difference(
    argv: tuple[Any, ...], expected: Any, actual: Any, tolerance_ms: int = TIME_TOLERANCE_MS
) -> str | None:
    """``None`` when ``actual`` matches ``expected`` (times within ``tolerance_ms``), else a
    description of the first difference."""
    shape_e, times_e = split_times(argv, expected)
    shape_a, times_a = split_times(argv, actual)
    if shape_a != shape_e or len(times_a) != len(times_e):
        return "the replies differ outside their time fields"
    for i, (e, a) in enumerate(zip(times_e, times_a)):
        if a < 0 or abs(a - e) > tolerance_ms:
            return f"time field #{i} differs by more than {tolerance_ms} ms: {e} vs {a}"
    return None
