"""XREADGROUP without BLOCK (§2.7): grammar, `>` and history reads, NOACK, deleted entries,
consumer creation (7.2+), several streams, and SETID moving a group back (stolen NACKs)."""

from __future__ import annotations

import pytest

from .harness import Oracle, is_error

pytestmark = pytest.mark.oracle


@pytest.fixture
def streams(oracle: Oracle) -> Oracle:
    """``a``: 1-0..6-0 with group g at 0; ``b``: 3-1, 4-0 with group g at $ and h at 0;
    ``e``: an empty stream with group g."""
    for i in range(1, 7):
        oracle.both("XADD", "a", f"{i}-0", "f", f"a{i}")
    oracle.both("XADD", "b", "3-1", "g", "b")
    oracle.both("XADD", "b", "4-0", "g", "b2")
    oracle.both("XGROUP", "CREATE", "a", "g", "0")
    oracle.both("XGROUP", "CREATE", "b", "g", "$")
    oracle.both("XGROUP", "CREATE", "b", "h", "0")
    oracle.both("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    return oracle


READS = [
    ("GROUP", "g", "c", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "COUNT", "2", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "COUNT", "0", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "COUNT", "-3", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "NOACK", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "NOACK", "NOACK", "COUNT", "1", "STREAMS", "a", ">"),
    ("group", "g", "c", "count", "1", "noack", "streams", "a", ">"),
    ("GROUP", "x", "y", "GROUP", "g", "c", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"),
    ("GROUP", "g", "c", "COUNT", "1", "STREAMS", "a", "b", "e", ">", ">", ">"),
    ("GROUP", "g", "c", "STREAMS", "b", ">"),
    ("GROUP", "h", "c", "STREAMS", "b", ">"),
    ("GROUP", "g", "c", "STREAMS", "e", ">"),
    ("GROUP", "g", "c", "STREAMS", "a", "0"),
    ("GROUP", "g", "c", "STREAMS", "a", "a", ">", ">"),
    ("GROUP", "g", "c", "COUNT", "1", "STREAMS", "a", "a", ">", ">"),
    ("GROUP", "g", "c", "STREAMS", "a", "b", "0", ">"),
    ("GROUP", "g", "c", "STREAMS", "e", "0-0"),
    ("GROUP", "g", "c", "BLOCK", "10", "STREAMS", "a", "0"),
]


@pytest.mark.parametrize("args", READS, ids=lambda args: " ".join(args)[:60])
def test_reads(streams: Oracle, args: tuple[str, ...]) -> None:
    streams.both("XREADGROUP", *args)
    streams.assert_same_state()
    streams.check()
    streams.both("XREADGROUP", *args)  # again: history grows, `>` moved on
    streams.assert_same_state()


REFUSED = [
    ("GROUP", "g", "c"),
    ("GROUP", "g", "c", "STREAMS"),
    ("GROUP", "g", "c", "STREAMS", "a"),
    ("GROUP", "g", "c", "STREAMS", "a", "b", ">"),
    ("STREAMS", "a", ">"),
    ("COUNT", "1", "STREAMS", "a", ">"),
    ("COUNT", "1", "GROUP", "g", "STREAMS", "a", ">"),
    ("GROUP", "g", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "FOO", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "COUNT", "x", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "BLOCK", "x", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "a", ">"),
    ("GROUP", "g", "c", "STREAMS", "a", "$"),
    ("GROUP", "g", "c", "STREAMS", "a", "+"),
    ("GROUP", "g", "c", "STREAMS", "a", "-"),
    ("GROUP", "g", "c", "STREAMS", "a", "(1"),
    ("GROUP", "g", "c", "STREAMS", "a", "bad"),
    ("GROUP", "g", "c", "STREAMS", "missing", ">"),
    ("GROUP", "g", "c", "STREAMS", "missing", "bad"),
    ("GROUP", "nope", "c", "STREAMS", "a", ">"),
    ("GROUP", "nope", "c", "STREAMS", "a", "$"),
    ("GROUP", "h", "c", "STREAMS", "b", "a", ">", ">"),
    ("GROUP", "g", "c", "STREAMS", "a", "b", ">", "$"),
    ("GROUP", "g", "c", "STREAMS", "a", "missing", ">", ">"),
    ("GROUP", "g", "c", "STREAMS", "a", "b", "bad", ">"),
    ("GROUP", "g", "c", "STREAMS", "b", "a", ">", "bad"),
]


@pytest.mark.parametrize("args", REFUSED, ids=lambda args: " ".join(args)[:60])
def test_refused_changes_nothing(streams: Oracle, args: tuple[str, ...]) -> None:
    """Validation of every key happens before anything is served: no consumer is created,
    no group moves, even for the valid keys before the bad one."""
    assert is_error(streams.both("XREADGROUP", *args))
    streams.assert_same_state()
    streams.check()


def test_history_with_deleted_and_trimmed_entries(streams: Oracle) -> None:
    both = streams.both
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">")
    both("XDEL", "a", "2-0", "5-0")
    both("XTRIM", "a", "MINID", "2")
    for start in ("0", "0-0", "1", "1-0", "2", "4-18446744073709551615", "6", "9"):
        both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", start)
        both("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "a", start)
    both("XREADGROUP", "GROUP", "g", "other", "STREAMS", "a", "0")
    streams.assert_same_state()
    both("XTRIM", "a", "MAXLEN", "0")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0")
    both("XACK", "a", "g", "1-0", "2-0")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0")
    streams.assert_same_state()
    streams.check()


def test_history_read_counts_deliveries(streams: Oracle) -> None:
    both = streams.both
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "a", ">")
    both("XCLAIM", "a", "g", "c", "0", "1-0", "2-0", "3-0", "IDLE", "500000")
    both("XDEL", "a", "2-0")
    both("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "a", "0")
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "a", "1-0")
    # 1-0 and 3-0 were re-delivered (idle reset, count +1); deleted 2-0 stays as it was
    streams.both_timed("XPENDING", "a", "g", "-", "+", "10")
    streams.both_timed("XPENDING", "a", "g", "IDLE", "400000", "-", "+", "10")
    streams.assert_same_state()


def test_noack_moves_the_group_without_pending(streams: Oracle) -> None:
    both = streams.both
    both("XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "4", "STREAMS", "a", ">")
    both("XPENDING", "a", "g")
    both("XINFO", "GROUPS", "a")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0")
    both("XREADGROUP", "GROUP", "g", "d", "STREAMS", "a", ">")
    streams.assert_same_state()


def test_consumers_created_by_calls_that_return_nothing(streams: Oracle) -> None:
    """Valkey 8 (7.2+): every validated key creates the consumer, served or not."""
    both = streams.both
    assert both("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "e", ">") is not None
    both("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "e", "0")
    both("XREADGROUP", "GROUP", "g", "c3", "STREAMS", "b", ">")
    both("XREADGROUP", "GROUP", "g", "c4", "COUNT", "0", "STREAMS", "b", "e", ">", ">")
    both("XCLAIM", "a", "g", "c5", "0", "1-0")
    both("XCLAIM", "a", "g", "c6", "0", "JUSTID")
    both("XAUTOCLAIM", "a", "g", "c7", "0", "0")
    both("XGROUP", "CREATECONSUMER", "a", "g", "c8")
    for key in ("a", "b", "e"):
        streams.both_timed("XINFO", "CONSUMERS", key, "g")
    both("XINFO", "GROUPS", "a")
    streams.assert_same_state()


def test_setid_back_steals_pending_entries(streams: Oracle) -> None:
    both = streams.both
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "a", ">")
    both("XCLAIM", "a", "g", "alice", "0", "1-0", "2-0", "RETRYCOUNT", "7")
    both("XGROUP", "SETID", "a", "g", "0")
    both("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "a", ">")
    both("XPENDING", "a", "g")
    streams.both_timed("XPENDING", "a", "g", "-", "+", "10")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "a", "0")
    both("XGROUP", "SETID", "a", "g", "2-0", "ENTRIESREAD", "2")
    both("XREADGROUP", "GROUP", "g", "carol", "NOACK", "STREAMS", "a", ">")
    streams.assert_same_state()
    streams.check()


def test_many_consumers_share_the_stream(oracle: Oracle) -> None:
    both = oracle.both
    both("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for i in range(1, 31):
        both("XADD", "s", f"{i}-{i % 3}", "n", str(i))
        if i % 4 == 0:
            both("XREADGROUP", "GROUP", "g", f"c{i % 3}", "COUNT", "3", "STREAMS", "s", ">")
        if i % 7 == 0:
            both("XACK", "s", "g", f"{i - 5}-{(i - 5) % 3}", f"{i - 6}-{(i - 6) % 3}")
    both("XPENDING", "s", "g")
    for consumer in ("c0", "c1", "c2"):
        oracle.both_timed("XPENDING", "s", "g", "-", "+", "100", consumer)
        both("XREADGROUP", "GROUP", "g", consumer, "STREAMS", "s", "0")
    oracle.assert_same_state()
    oracle.check()


MAX_ID = "18446744073709551615-18446744073709551615"


def test_the_largest_id_reads_new_entries(streams: Oracle) -> None:
    """Valkey stores `>` as the largest possible ID, so an explicit
    18446744073709551615-18446744073709551615 is not a history read: it delivers new entries
    (creating NACKs, moving the group) and, with nothing new, answers nil or blocks."""
    both = streams.both
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "a", ">")
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "a", MAX_ID)
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", MAX_ID, MAX_ID)
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "b", MAX_ID)
    both("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "b", MAX_ID)
    streams.assert_same_state()
