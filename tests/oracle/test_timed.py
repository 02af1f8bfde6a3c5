"""The time-tolerant comparison itself (:mod:`.timed`): it must mask only the time fields, and
still catch a time that is off, a "never" (-1) that is not, and any other difference."""

from __future__ import annotations

from typing import Any

import pytest

from .resp import ErrorReply
from .timed import TIME, split_times, timed_difference

pytestmark = pytest.mark.oracle

FULL = ("XINFO", "STREAM", "s", "FULL")


def full_reply(delivery: int, seen: int, active: int, count: int = 1) -> list[Any]:
    consumer = [b"name", b"c", b"seen-time", seen, b"active-time", active, b"pel-count", 1,
                b"pending", [[b"1-0", delivery, count]]]  # fmt: skip
    group = [b"name", b"g", b"last-delivered-id", b"1-0", b"entries-read", 1, b"lag", 0,
             b"pel-count", 1, b"pending", [[b"1-0", b"c", delivery, count]],
             b"consumers", [consumer]]  # fmt: skip
    return [b"length", 1, b"entries", [[b"1-0", [b"f", b"v"]]], b"groups", [group]]


def test_full_masks_exactly_the_time_fields() -> None:
    shape, times = split_times(FULL, full_reply(1000, 2000, -1))
    assert times == [1000, 2000, 1000]
    group = shape[5][0]
    assert group[11] == [[b"1-0", b"c", TIME, 1]]
    assert group[13][0][3] == TIME and group[13][0][5] == -1


def test_full_tolerance() -> None:
    assert (
        timed_difference(FULL, full_reply(1000, 2000, 3000), full_reply(1400, 2500, 2100)) is None
    )
    assert timed_difference(FULL, full_reply(1000, 2000, 3000), full_reply(1000, 2000, 4500))
    assert timed_difference(FULL, full_reply(1000, 2000, -1), full_reply(1000, 2000, 2000))
    assert timed_difference(FULL, full_reply(1000, 2000, -1, 1), full_reply(1000, 2000, -1, 2))


def test_pending_and_consumers() -> None:
    argv = ("XPENDING", "s", "g", "-", "+", "10")
    assert timed_difference(argv, [[b"1-0", b"c", 5, 1]], [[b"1-0", b"c", 40, 1]]) is None
    assert timed_difference(argv, [[b"1-0", b"c", 5, 1]], [[b"1-0", b"d", 5, 1]])
    assert timed_difference(argv, [[b"1-0", b"c", 0, 1]], [[b"1-0", b"c", -7, 1]])
    consumers = ("XINFO", "CONSUMERS", "s", "g")
    assert timed_difference(consumers, consumer_rows(3, -1), consumer_rows(90, -1)) is None
    assert timed_difference(consumers, consumer_rows(3, -1), consumer_rows(90, 90))
    assert timed_difference(consumers, consumer_rows(3, 10), consumer_rows(3, 5000))


def consumer_rows(idle: int, inactive: int) -> list[list[Any]]:
    return [[b"name", b"c", b"pending", 1, b"idle", idle, b"inactive", inactive]]


def test_other_replies_are_exact() -> None:
    assert timed_difference(("XPENDING", "s", "g"), [1, b"1-0"], [2, b"1-0"])
    assert timed_difference(("XLEN", "s"), 5, 6)
    error = ErrorReply("ERR x")
    assert timed_difference(FULL, error, ErrorReply("ERR y"))
    assert timed_difference(FULL, error, error) is None
