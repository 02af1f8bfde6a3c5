"""Node layout (§8): when XADD opens a new node, seen through XINFO's radix-tree counts.

The byte rule depends on listpack encoding sizes, so values sit on the encoding boundaries
(string lengths 63/64 and 4095/4096, integers 127/128, -4096/4095, int16/24/32 edges) and the
live/deleted counters cross 127.
"""

from __future__ import annotations

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle

INT_EDGES = [
    "127",
    "128",
    "-4096",
    "-4097",
    "4095",
    "4096",
    "32767",
    "32768",
    "-32768",
    "-32769",
    "8388607",
    "8388608",
    "2147483647",
    "2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "0127",
    "-0",
]


def summary(oracle: Oracle, key: str) -> None:
    oracle.both("XINFO", "STREAM", key)


@pytest.mark.parametrize("max_bytes", [64, 100, 128, 200, 300, 1000])
def test_string_lengths_around_encoding_boundaries(oracle: Oracle, max_bytes: int) -> None:
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "0")
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", max_bytes)
    for i, size in enumerate([1, 62, 63, 64, 65, 126, 127, 128, 20, 5, 5, 5, 200, 1, 1]):
        oracle.both("XADD", "s", f"{i + 1}-0", "f", "v" * size)
        summary(oracle, "s")
    for i, size in enumerate([4094, 4095, 4096, 4097, 3, 16383, 16384, 3]):
        oracle.both("XADD", "s", f"{100 + i}-0", "f", "w" * size)
        summary(oracle, "s")
    oracle.assert_same_state()


@pytest.mark.parametrize("max_bytes", [60, 90, 150, 4096])
def test_integer_values_around_encoding_boundaries(oracle: Oracle, max_bytes: int) -> None:
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "0")
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", max_bytes)
    for i, value in enumerate(INT_EDGES * 3):
        oracle.both("XADD", "s", f"{i + 1}-{i % 3}", value, value, "n", str(i))
        summary(oracle, "s")
    oracle.assert_same_state()


def test_id_deltas_around_encoding_boundaries(oracle: Oracle) -> None:
    """Entry IDs are stored as deltas from the node's master ID: their size matters too."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "0")
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", "120")
    ms = 1
    for delta in [1, 126, 1, 4000, 95, 30000, 1, 8_000_000, 1, 2**31, 1, 2**40, 2**62, 1]:
        ms += delta
        oracle.both("XADD", "s", f"{ms}-{delta % 5}", "f", "v")
        summary(oracle, "s")
    oracle.both("XADD", "s", "18446744073709551615-0", "f", "v")
    oracle.both("XADD", "s", "18446744073709551615-18446744073709551615", "f", "v")
    oracle.assert_same_state()


def test_field_schema_changes(oracle: Oracle) -> None:
    """Entries with the master's fields are stored compactly; others carry their names."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "0")
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", "200")
    schemas = [("a", "b"), ("a", "b"), ("b", "a"), ("a",), ("a", "b", "c"), ("a", "b")]
    for i in range(60):
        names = schemas[i % len(schemas)]
        flat = [part for name in names for part in (name, str(i))]
        oracle.both("XADD", "s", f"{i + 1}-0", *flat)
        summary(oracle, "s")
    oracle.assert_same_state()


@pytest.mark.parametrize("max_entries", [0, 1, 3, 200])
def test_counters_past_127(oracle: Oracle, max_entries: int) -> None:
    """The node's live/deleted counters grow from 1 to 2 bytes at 128."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", max_entries)
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", "4096")
    for i in range(1, 301):
        oracle.both("XADD", "s", f"{i}-0", "f", "1")
        if i % 10 == 0:
            summary(oracle, "s")
    for i in range(2, 280, 2):
        oracle.both("XDEL", "s", f"{i}-0")
    for i in range(301, 340):
        oracle.both("XADD", "s", f"{i}-0", "f", "1")
        summary(oracle, "s")
    oracle.both("XTRIM", "s", "MAXLEN", "~", "10")
    oracle.assert_same_state()


@pytest.mark.parametrize("max_entries", [0, 1, 5])
def test_default_approximate_limit(oracle: Oracle, max_entries: int) -> None:
    """`~` without LIMIT stops after 100 x stream-node-max-entries entries (10000 when 0)."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", max_entries)
    for i in range(1, 1202):
        oracle.both("XADD", "s", f"{i}-0", "f", "v")
    oracle.both("XTRIM", "s", "MAXLEN", "~", "1")
    summary(oracle, "s")
    oracle.both("XADD", "s", "MINID", "~", "1150", "2000-0", "f", "v")
    oracle.assert_same_state()


def test_entries_with_many_fields(oracle: Oracle) -> None:
    """Field counts past 127 change the size of the per-entry counters."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "0")
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", "2000")
    pairs = [part for i in range(300) for part in (f"f{i}", str(i))]
    for i in range(1, 40):
        width = (i * 7) % 300 + 1
        oracle.both("XADD", "s", f"{i}-0", *pairs[: 2 * width])
        summary(oracle, "s")
    oracle.both("XDEL", "s", *[f"{i}-0" for i in range(1, 40, 3)])
    oracle.both("XINFO", "STREAM", "s", "FULL", "COUNT", "3")
    oracle.assert_same_state()
