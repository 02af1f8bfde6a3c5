"""The range-bound grammar for people (``rstore.parse_range_bound``, ``rstore.parse_time_ms``):
XRANGE's own bounds mean exactly what XRANGE makes of them, and times stand for their ms."""

from __future__ import annotations

import calendar
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rstore
from rstore.numbers import UINT64_MAX

NOW_MS = 1_795_455_353_641  # 2026-11-23 ...

# Bounds of every kind XRANGE knows, valid and not (the oracle tests check XRANGE on them).
XRANGE_BOUNDS = [
    "-", "+", "0", "3", "3-1", "(3", "(3-1", "(0-0", "007-01", "5-x", "", "(", "(-", "(+",
    "((1", "1-2-3", "18446744073709551615", "18446744073709551616",
    "18446744073709551615-18446744073709551615", "(18446744073709551615-18446744073709551615",
]  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "s") as s:
        for ms in range(1, 8):
            for seq in range(3):
                s.execute("XADD", "s", f"{ms}-{seq}", "f", f"{ms}.{seq}")
        yield s


def _xrange(store: rstore.Store, start: str, end: str) -> object:
    try:
        return store.execute("XRANGE", "s", start, end)
    except rstore.ResponseError as exc:
        return str(exc)


@pytest.mark.parametrize("bound", XRANGE_BOUNDS)
def test_an_xrange_bound_means_what_xrange_makes_of_it(store: rstore.Store, bound: str) -> None:
    for is_end in (False, True):
        direct = _xrange(store, "-", bound) if is_end else _xrange(store, bound, "+")
        try:
            parsed = str(rstore.parse_range_bound(bound, is_end=is_end))
        except rstore.ResponseError as exc:
            assert direct == str(exc), (bound, is_end)  # the same error text
            continue
        via = _xrange(store, "-", parsed) if is_end else _xrange(store, parsed, "+")
        assert via == direct, (bound, is_end, parsed)


def test_durations_count_back_from_now() -> None:
    assert rstore.parse_time_ms("1h", now_ms=NOW_MS) == NOW_MS - 3_600_000
    assert rstore.parse_time_ms("90s", now_ms=NOW_MS) == NOW_MS - 90_000
    assert rstore.parse_time_ms("1h30m", now_ms=NOW_MS) == NOW_MS - 5_400_000
    assert rstore.parse_time_ms("2d", now_ms=NOW_MS) == NOW_MS - 2 * 86_400_000
    assert rstore.parse_time_ms("1w", now_ms=NOW_MS) == NOW_MS - 7 * 86_400_000
    assert rstore.parse_time_ms("250ms", now_ms=NOW_MS) == NOW_MS - 250
    assert rstore.parse_time_ms("-2h", now_ms=NOW_MS) == NOW_MS - 7_200_000  # "-2h" = 2h ago
    assert rstore.parse_time_ms("--2h", now_ms=NOW_MS) is None
    assert rstore.parse_time_ms("-", now_ms=NOW_MS) is None
    # "-" alone stays XRANGE's lowest bound; "-2h" is no ID, so it reads as a time
    assert rstore.parse_range_bound("-", is_end=False, now_ms=NOW_MS) == (0, 0)
    assert rstore.parse_range_bound("-2h", is_end=False, now_ms=NOW_MS) == (NOW_MS - 7_200_000, 0)
    before = time.time_ns() // 1_000_000
    got = rstore.parse_time_ms("10s")
    assert got is not None and before - 10_000 <= got <= time.time_ns() // 1_000_000 - 10_000


def test_iso_times_in_utc_with_offsets_and_local(monkeypatch: pytest.MonkeyPatch) -> None:
    utc_10h = calendar.timegm((2026, 11, 1, 10, 0, 0)) * 1000
    assert rstore.parse_time_ms("2026-11-01T10:00Z") == utc_10h
    assert rstore.parse_time_ms("2026-11-01T10:00:00.250Z") == utc_10h + 250
    assert rstore.parse_time_ms("2026-11-01T11:00+01:00") == utc_10h
    assert rstore.parse_time_ms("2026-11-01 10:00Z") == utc_10h
    monkeypatch.setenv("TZ", "XYZ-02")  # POSIX: local time is UTC+2
    time.tzset()
    try:
        assert rstore.parse_time_ms("2026-11-01T12:00") == utc_10h
        assert rstore.parse_time_ms("2026-11-01") == utc_10h - 12 * 3_600_000
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert os.environ.get("TZ") is None


def test_what_is_not_a_time() -> None:
    for text in ("", "1", "1700000000000", "1-0", "h", "1x", "-1x", "20261101", "now", "1 h"):
        assert rstore.parse_time_ms(text, now_ms=NOW_MS) is None, text
    for text in ("2026-13-01", "2026-11-01T25:00", "1969-12-31T23:59Z"):
        with pytest.raises(ValueError, match=re.escape(text)):
            rstore.parse_time_ms(text)
    with pytest.raises(ValueError, match="before 1970"):
        rstore.parse_time_ms("100000w", now_ms=NOW_MS)


def test_a_time_stands_for_its_ms_written_as_an_id() -> None:
    t = NOW_MS - 3_600_000
    assert rstore.parse_range_bound("1h", is_end=False, now_ms=NOW_MS) == (t, 0)
    assert rstore.parse_range_bound("1h", is_end=True, now_ms=NOW_MS) == (t, UINT64_MAX)
    assert rstore.parse_range_bound("(1h", is_end=False, now_ms=NOW_MS) == (t, 1)
    assert rstore.parse_range_bound("(1h", is_end=True, now_ms=NOW_MS) == (t, UINT64_MAX - 1)
    utc_10h = calendar.timegm((2026, 11, 1, 10, 0, 0)) * 1000
    assert rstore.parse_range_bound(b"2026-11-01T10:00Z", is_end=False) == (utc_10h, 0)
    # An ID always wins: "5" is the ID 5, never 5 of anything.
    assert rstore.parse_range_bound("5", is_end=False) == (5, 0)
    with pytest.raises(rstore.ResponseError, match="Invalid stream ID"):
        rstore.parse_range_bound("yesterday", is_end=False)
    with pytest.raises(ValueError, match="not a valid date"):
        rstore.parse_range_bound("2026-02-30", is_end=False)
