"""XRANGE / XREVRANGE (§2.5): bounds, incomplete IDs, COUNT and its nil array, parse order."""

from __future__ import annotations

import itertools

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle

BOUNDS = ["-", "+", "0", "1", "2", "2-1", "(2-1", "(1", "(2", "3-18446744073709551615", "(4", "9"]


@pytest.fixture
def stream(oracle: Oracle) -> Oracle:
    for ms in range(1, 5):
        for seq in range(3):
            oracle.both("XADD", "s", f"{ms}-{seq}", "f", f"{ms}.{seq}")
    oracle.both("XDEL", "s", "2-1", "3-0")
    return oracle


def test_every_pair_of_bounds(stream: Oracle) -> None:
    for low, high in itertools.product(BOUNDS, repeat=2):
        stream.both("XRANGE", "s", low, high)
        stream.both("XREVRANGE", "s", high, low)


@pytest.mark.parametrize(
    "count",
    ["0", "-1", "-9223372036854775808", "1", "2", "5", "100", "9223372036854775807"],
)
def test_count(stream: Oracle, count: str) -> None:
    """COUNT 0 or negative is a nil ARRAY on an existing key and an empty array on a missing one."""
    for key in ("s", "missing"):
        stream.both("XRANGE", key, "-", "+", "COUNT", count)
        stream.both("XREVRANGE", key, "+", "-", "COUNT", count)
        stream.both("XRANGE", key, "(2", "4", "COUNT", count)


def test_count_on_an_emptied_stream(oracle: Oracle) -> None:
    oracle.both("XADD", "s", "1-0", "f", "v")
    oracle.both("XDEL", "s", "1-0")
    for count in ("0", "1"):
        oracle.both("XRANGE", "s", "-", "+", "COUNT", count)
        oracle.both("XREVRANGE", "s", "+", "-", "COUNT", count)


@pytest.mark.parametrize(
    "tail",
    [
        ("COUNT",),
        ("COUNT", "x"),
        ("COUNT", ""),
        ("COUNT", "1.5"),
        ("COUNT", "9223372036854775808"),
        ("count", "1"),
        ("CoUnT", "2", "COUNT", "1"),
        ("COUNT", "1", "COUNT"),
        ("COUNT", "x", "COUNT", "1"),
        ("COUNT", "1", "FOO"),
        ("FOO",),
        ("FOO", "1"),
        ("LIMIT", "1"),
    ],
)
def test_options(stream: Oracle, tail: tuple[str, ...]) -> None:
    for key in ("s", "missing"):
        stream.both("XRANGE", key, "-", "+", *tail)
        stream.both("XREVRANGE", key, "+", "-", *tail)


@pytest.mark.parametrize(
    "argv",
    [
        ("XRANGE",),
        ("XRANGE", "s"),
        ("XRANGE", "s", "-"),
        ("XREVRANGE", "s", "+"),
        ("XRANGE", "s", "bad", "bad", "COUNT", "bad"),
        ("XRANGE", "s", "-", "bad", "COUNT", "bad"),
        ("XRANGE", "s", "-", "+", "COUNT", "bad"),
        ("XREVRANGE", "s", "bad", "(0", "COUNT", "x"),
        ("XREVRANGE", "s", "+", "(0", "COUNT", "x"),
        ("XREVRANGE", "s", "(0", "bad"),
        ("XRANGE", "missing", "bad", "+"),
        ("XRANGE", "missing", "(18446744073709551615-18446744073709551615", "+"),
        ("xrange", "s", "-", "+"),
        ("XrEvRaNgE", "s", "+", "-"),
    ],
)
def test_parse_order_and_arity(stream: Oracle, argv: tuple[str, ...]) -> None:
    """Start, then end, then options, then the key: the first failing step's error wins."""
    stream.both(*argv)


def test_large_and_binary_entries(oracle: Oracle) -> None:
    both = oracle.both
    both("XADD", "s", "1-0", "big", "x" * 9000)
    both("XADD", "s", "2-0", b"\x00", b"\xff\x00\xfe", "n", "-9223372036854775808")
    both("XADD", "s", "3-0", "big", "y" * 70_000)
    both("XRANGE", "s", "-", "+")
    both("XREVRANGE", "s", "+", "-", "COUNT", "2")
