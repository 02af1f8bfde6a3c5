"""XREAD without BLOCK (§2.6): option grammar, per-key validation order, serving and nil array."""

from __future__ import annotations

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle


@pytest.fixture
def streams(oracle: Oracle) -> Oracle:
    for i in range(1, 6):
        oracle.both("XADD", "a", f"{i}-0", "f", f"a{i}")
    oracle.both("XADD", "b", "3-1", "g", "b")
    oracle.both("XADD", "e", "1-0", "f", "v")
    oracle.both("XDEL", "e", "1-0")
    oracle.both("XADD", "d", "1-0", "f", "v")
    oracle.both("XADD", "d", "2-0", "f", "v")
    oracle.both("XDEL", "d", "2-0")
    return oracle


@pytest.mark.parametrize(
    "args",
    [
        ("STREAMS", "a", "0"),
        ("STREAMS", "a", "b", "0", "0"),
        ("STREAMS", "a", "a", "0", "3"),
        ("COUNT", "1", "STREAMS", "a", "b", "0", "0"),
        ("COUNT", "2", "STREAMS", "a", "2"),
        ("COUNT", "0", "STREAMS", "a", "0"),
        ("COUNT", "-1", "STREAMS", "a", "0"),
        ("COUNT", "1", "COUNT", "3", "STREAMS", "a", "0"),
        ("count", "1", "streams", "a", "0"),
        ("STREAMS", "a", "$"),
        ("STREAMS", "missing", "$"),
        ("STREAMS", "e", "0"),
        ("STREAMS", "e", "$"),
        ("STREAMS", "d", "1-0"),
        ("STREAMS", "d", "0"),
        ("STREAMS", "a", "5"),
        ("STREAMS", "a", "4-18446744073709551615"),
        ("STREAMS", "a", "18446744073709551615-18446744073709551615"),
        ("STREAMS", "missing", "a", "0", "0"),
        ("STREAMS", "a", "b", "missing", "4", "3", "0"),
        ("STREAMS", "b", "a", "3", "3"),
    ],
)
def test_serving(streams: Oracle, args: tuple[str, ...]) -> None:
    streams.both("XREAD", *args)


def test_plus_means_the_last_entry(streams: Oracle) -> None:
    """Valkey 8.0 reads `+` as "the last entry" (only that one; nil when it was deleted)."""
    for args in (
        ("STREAMS", "a", "+"),
        ("COUNT", "3", "STREAMS", "a", "+"),
        ("STREAMS", "a", "b", "+", "+"),
        ("STREAMS", "missing", "+"),
        ("STREAMS", "d", "+"),
        ("STREAMS", "e", "+"),
        ("STREAMS", "a", "d", "0", "+"),
    ):
        streams.both("XREAD", *args)


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("STREAMS",),
        ("STREAMS", "a"),
        ("COUNT", "1", "STREAMS"),
        ("STREAMS", "a", "b", "0"),
        ("STREAMS", "a", "b", "c", "0", "0"),
        ("a", "0", "x"),
        ("FOO", "STREAMS", "a", "0"),
        ("COUNT", "STREAMS", "a", "0"),
        ("COUNT", "x", "STREAMS", "a", "0"),
        ("COUNT", "", "STREAMS", "a", "0"),
        ("COUNT", "9223372036854775808", "STREAMS", "a", "0"),
        ("COUNT", "1", "FOO", "STREAMS", "a", "0"),
        ("STREAMS", "a", "-"),
        ("STREAMS", "a", "(1"),
        ("STREAMS", "a", "bad"),
        ("STREAMS", "missing", "bad"),
        ("STREAMS", "a", "b", "0", "bad"),
        ("STREAMS", "a", "b", "bad", ">"),
        ("STREAMS", "a", ">"),
        ("STREAMS", "missing", ">"),
        ("GROUP", "g", "c", "STREAMS", "a", "0"),
        ("GROUP", "g", "STREAMS", "a"),
        ("NOACK", "STREAMS", "a", "0"),
        ("COUNT", "1", "NOACK", "STREAMS", "a", "0"),
        ("BLOCK", "x", "STREAMS", "a", "0"),
        ("BLOCK", "-1", "STREAMS", "a", "0"),
        ("BLOCK", "", "STREAMS", "a", "0"),
        ("STREAMS", "STREAMS", "0"),
        ("STREAMS", "COUNT", "1"),
        ("STREAMS", "a", "0", "STREAMS", "a", "0"),
    ],
)
def test_refusals(streams: Oracle, args: tuple[str, ...]) -> None:
    streams.both("XREAD", *args)


def test_many_keys_and_duplicates(streams: Oracle) -> None:
    keys = ["a", "b", "missing", "e", "d", "a"] * 4
    ids = ["0", "2", "0", "0", "0", "4-0"] * 4
    streams.both("XREAD", "STREAMS", *keys, *ids)
    streams.both("XREAD", "COUNT", "1", "STREAMS", *keys, *ids)
    streams.both("XREAD", "STREAMS", *keys, *["$"] * len(keys))
