"""Stream ID parsing (§1.1): every command that takes an ID, fed lenient and malformed IDs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle

Both = Callable[..., Any]

# Accepted by the strtoull fallback, or rejected; valkey decides which for each command.
ODD_IDS = [
    "007-01",
    "+1-+2",
    " 5",
    "1- 2",
    "1- -5",
    "5-x",
    "6-",
    "1-2-3",
    "0x10",
    "",
    "18446744073709551616",
    "18446744073709551615",
    "18446744073709551615-18446744073709551616",
    "9223372036854775808-9223372036854775808",
    "(",
    "(-",
    "(+",
    "((1",
    "(5",
    "-",
    "+",
    "-5",
    "-0",
    "-05",
    "*",
    "5-*",
    "*-5",
    "0",
    "0-0",
    "00",
    "0-1",
    "1-",
    "\t7",
    "7 ",
    "1-2 ",
    " ",
    "+0",
    "01",
    "1-01",
    "1" * 127,
    "1" * 128,
    "0" * 126 + "9",
    "0" * 127 + "9",
    "5\x00",
    "5-\x001",
    "\x005",
    "5\xff",
    "٣",  # a non-ASCII digit
]


# For XADD a bare `*` is the clock-based auto ID: test_xadd compares it by shape instead.
XADD_ODD_IDS = [raw for raw in ODD_IDS if raw != "*"]


def seeded(both: Both, key: str = "s") -> None:
    for sid in ("1-0", "1-1", "5-0", "7-1", "9-3"):
        both("XADD", key, sid, "f", sid)


@pytest.mark.parametrize("raw", XADD_ODD_IDS)
def test_xadd_id(oracle: Oracle, raw: str) -> None:
    both = oracle.both
    both("XADD", "fresh", raw, "f", "v")
    seeded(both)
    both("XADD", "s", raw, "f", "v")
    both("XADD", "s", "MINID", raw, "100-0", "f", "v")
    both("XADD", "t", "MAXLEN", "~", "1", raw, "f", "v")
    oracle.assert_same_state()


@pytest.mark.parametrize("raw", ODD_IDS)
def test_range_bounds(oracle: Oracle, raw: str) -> None:
    both = oracle.both
    seeded(both)
    for key in ("s", "missing"):
        both("XRANGE", key, raw, "+")
        both("XRANGE", key, "-", raw)
        both("XRANGE", key, raw, raw)
        both("XREVRANGE", key, raw, "-")
        both("XREVRANGE", key, "+", raw)
        both("XRANGE", key, raw, "+", "COUNT", "2")


@pytest.mark.parametrize("raw", ODD_IDS)
def test_xdel_xtrim_xsetid_xread_ids(oracle: Oracle, raw: str) -> None:
    both = oracle.both
    seeded(both)
    seeded(both, "u")
    both("XREAD", "STREAMS", "s", raw)
    both("XREAD", "STREAMS", "missing", raw)
    both("XREAD", "COUNT", "1", "STREAMS", "s", "u", "0", raw)
    both("XDEL", "missing", raw)
    both("XDEL", "s", "1-1", raw)
    both("XTRIM", "s", "MINID", raw)
    both("XTRIM", "u", "MINID", "~", raw, "LIMIT", "1")
    both("XSETID", "missing", raw)
    both("XSETID", "s", raw)
    both("XSETID", "u", "100-0", "MAXDELETEDID", raw)
    oracle.assert_same_state()


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("(18446744073709551615-18446744073709551615", "+"),
        ("(18446744073709551615", "+"),
        ("-", "(0-0"),
        ("-", "(0"),
        ("(0-0", "(0-1"),
        ("(1", "(2"),
        ("(1-0", "(1-1"),
        ("(5", "5"),
        ("5", "(5"),
        ("(bad", "(0-0"),
        ("(18446744073709551615-18446744073709551615", "bad"),
        ("(18446744073709551615-18446744073709551615", "(0-0"),
    ],
)
def test_exclusive_interval_edges(oracle: Oracle, left: str, right: str) -> None:
    """Overflow of an exclusive start, underflow of an exclusive end, and which error wins."""
    both = oracle.both
    seeded(both)
    for key in ("s", "missing"):
        both("XRANGE", key, left, right)
        both("XREVRANGE", key, right, left)


def test_lenient_ids_store_the_parsed_value(both: Both) -> None:
    """`007-01` is 7-1, `1- -5` wraps modulo 2^64: the stored IDs must be the same."""
    for raw in ("007-01", "+8-+2", " 9", "10- 2", "11- -5", "12-*", "013-*"):
        both("XADD", "s", raw, "f", raw)
    both("XRANGE", "s", "-", "+")
    both("XINFO", "STREAM", "s")
