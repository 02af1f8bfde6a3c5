"""XDEL (§2.3) and XTRIM (§2.2, §1.6): replies, error precedence and node-based trimming."""

from __future__ import annotations

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle


def fill(oracle: Oracle, key: str, count: int, start: int = 1) -> None:
    for i in range(start, start + count):
        oracle.both("XADD", key, f"{i}-0", "f", str(i))


@pytest.mark.parametrize(
    "ids",
    [
        (),
        ("1-0",),
        ("1-0", "1-0"),
        ("1",),
        ("2-0", "3-0", "99-0", "2-0"),
        ("1-0", "bad"),
        ("bad", "1-0"),
        ("-",),
        ("+",),
        ("(1",),
        ("18446744073709551615-18446744073709551615",),
    ],
)
def test_xdel_replies_and_all_or_nothing(oracle: Oracle, ids: tuple[str, ...]) -> None:
    fill(oracle, "s", 5)
    oracle.both("XDEL", "s", *ids)
    oracle.both("XDEL", "missing", *ids)
    oracle.assert_same_state()


def test_xdel_updates_first_id_and_max_deleted(oracle: Oracle) -> None:
    fill(oracle, "s", 6)
    for sid in ("3-0", "1-0", "2-0", "6-0", "4-0", "5-0"):
        oracle.both("XDEL", "s", sid)
        oracle.both("XINFO", "STREAM", "s")
    oracle.both("EXISTS", "s")
    oracle.both("TYPE", "s")
    oracle.assert_same_state()


@pytest.mark.parametrize("node_entries", [1, 2, 3, 10])
def test_xdel_frees_nodes(oracle: Oracle, node_entries: int) -> None:
    """Deleting the last live entry of a node frees it: radix-tree counts must follow."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", node_entries)
    fill(oracle, "s", 30)
    for sid in (2, 1, 3, 5, 4, 6, 10, 30, 29, 15, 16, 17, 18, 19, 20, 7, 8, 9):
        oracle.both("XDEL", "s", f"{sid}-0")
        oracle.both("XINFO", "STREAM", "s")
    fill(oracle, "s", 5, start=31)
    oracle.assert_same_state()


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("MAXLEN",),
        ("MAXLEN", "~"),
        ("MAXLEN", "1", "NOMKSTREAM"),
        ("MAXLEN", "1", "1-0"),
        ("NOMKSTREAM", "MAXLEN", "1"),
        ("LIMIT", "0"),
        ("LIMIT", "5"),
        ("LIMIT", "-5"),
        ("LIMIT", "x"),
        ("foo", "bar"),
        ("MAXLEN", "1", "MINID", "1"),
        ("MAXLEN", "1", "MAXLEN", "1"),
        ("MAXLEN", "-1"),
        ("MAXLEN", "x"),
        ("MAXLEN", "1", "LIMIT", "1"),
        ("MAXLEN", "=", "1", "LIMIT", "0"),
        ("MAXLEN", "~", "1", "LIMIT", "-1"),
        ("MINID", "bad"),
        ("MINID", "-"),
        ("MINID", "~", "+"),
        ("maxlen", "~", "2", "limit", "0"),
        ("MAXLEN", "2"),
        ("MINID", "3"),
        ("MINID", "=", "3-0"),
        ("MAXLEN", "0"),
        ("MINID", "18446744073709551615-18446744073709551615"),
        ("MAXLEN", "9223372036854775807"),
        ("MAXLEN", "1", "LIMIT"),
        ("MAXLEN", "~", "1", "LIMIT", "1", "extra"),
    ],
)
def test_xtrim_arguments(oracle: Oracle, args: tuple[str, ...]) -> None:
    """Argument errors come before the key lookup; a missing key trims 0."""
    fill(oracle, "s", 5)
    oracle.both("XTRIM", "s", *args)
    oracle.both("XTRIM", "missing", *args)
    oracle.assert_same_state()


@pytest.mark.parametrize("node_entries", [1, 2, 10, 100])
def test_approximate_trimming_follows_the_node_layout(oracle: Oracle, node_entries: int) -> None:
    both = oracle.both
    both("CONFIG", "SET", "stream-node-max-entries", node_entries)
    fill(oracle, "s", 555)
    fill(oracle, "m", 555)
    for threshold, limit in (("500", None), ("444", "0"), ("300", "5"), ("200", None), ("1", "3")):
        tail = () if limit is None else ("LIMIT", limit)
        both("XTRIM", "s", "MAXLEN", "~", threshold, *tail)
        both("XTRIM", "m", "MINID", "~", str(556 - int(threshold)), *tail)
        both("XINFO", "STREAM", "s")
        both("XINFO", "STREAM", "m")
    both("XTRIM", "s", "MAXLEN", "7")
    both("XTRIM", "m", "MINID", "553-0")
    oracle.assert_same_state()


def test_trim_leaves_an_empty_existing_stream(oracle: Oracle) -> None:
    fill(oracle, "s", 3)
    oracle.both("XDEL", "s", "2-0")
    oracle.both("XTRIM", "s", "MAXLEN", "0")
    oracle.both("XINFO", "STREAM", "s")
    oracle.both("XADD", "s", "3-0", "f", "v")
    oracle.both("XADD", "s", "4-0", "f", "v")
    oracle.assert_same_state()


def test_exact_minid_over_tombstones(oracle: Oracle) -> None:
    """MINID looks at the last entry stored in a node, which may be a tombstone."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "4")
    fill(oracle, "s", 12)
    oracle.both("XDEL", "s", "4-0", "8-0", "7-0")
    for minid in ("3", "5", "8-1", "9", "13"):
        oracle.both("XTRIM", "s", "MINID", "~", minid)
        oracle.both("XINFO", "STREAM", "s", "FULL")
        oracle.both("XTRIM", "s", "MINID", minid)
        oracle.both("XINFO", "STREAM", "s", "FULL")
    oracle.assert_same_state()


@pytest.mark.parametrize(
    "trim",
    [
        ("MAXLEN", "~", "1"),
        ("MAXLEN", "~", "1", "LIMIT", "1"),
        ("MAXLEN", "~", "0"),
        ("MINID", "~", "5"),
        ("MINID", "~", "4", "LIMIT", "1"),
        ("MAXLEN", "1"),
    ],
)
def test_trim_frees_a_head_node_holding_only_tombstones(
    oracle: Oracle, trim: tuple[str, ...]
) -> None:
    """An exact MINID trim can leave a node whose entries are all deleted (§8.2); a later
    whole-node trim frees it, removing 0 entries but one radix-tree key."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "3")
    fill(oracle, "s", 5)
    oracle.both("XDEL", "s", "3-0")
    oracle.both("XTRIM", "s", "MINID", "3")
    oracle.both("XINFO", "STREAM", "s")
    oracle.both("XTRIM", "s", *trim)
    oracle.both("XINFO", "STREAM", "s")
    oracle.both("XADD", "s", "6-0", "f", "v")
    oracle.assert_same_state()
