"""XACK (§3.1) and XPENDING (§3.2): all-or-nothing acks, argument-count rules, parse order
(count before start/end), extra arguments ignored, IDLE filters, consumer filters."""

from __future__ import annotations

import pytest

from .harness import Oracle, is_error

pytestmark = pytest.mark.oracle


@pytest.fixture
def pending(oracle: Oracle) -> Oracle:
    """``s``: 1-0..8-0; group g: alice holds 1-0..3-0 (1-0 and 2-0 idle ~600 s), bob holds
    4-0, 5-0 (4-0 delivered 3 times); 6-0.. undelivered; 2-0 then deleted from the stream.
    Group ``empty`` has no pending entries."""
    both = oracle.both
    for i in range(1, 9):
        both("XADD", "s", f"{i}-0", "f", f"v{i}")
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XGROUP", "CREATE", "s", "empty", "$")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    both("XCLAIM", "s", "g", "alice", "0", "1-0", "2-0", "IDLE", "600000", "JUSTID")
    both("XCLAIM", "s", "g", "bob", "0", "4-0", "RETRYCOUNT", "3", "JUSTID")
    both("XDEL", "s", "2-0")
    return oracle


ACKS = [
    ("s", "g", "1-0"),
    ("s", "g", "1"),
    ("s", "g", "1-0", "1-0", "1"),
    ("s", "g", "2-0", "3-0", "9-0", "6-0"),
    ("s", "g", "0-0", "18446744073709551615-18446744073709551615"),
    ("s", "empty", "1-0"),
    ("s", "nope", "1-0"),
    ("s", "nope", "bad"),
    ("missing", "g", "bad"),
    ("missing", "g", "1-0"),
    ("s", "g", "1-0", "bad"),
    ("s", "g", "bad", "1-0"),
    ("s", "g", "1-0", "-"),
    ("s", "g", "+"),
    ("s", "g", "(1-0"),
    ("s", "g", "1-0", ""),
    ("s", "empty", "bad"),
]


@pytest.mark.parametrize("args", ACKS, ids=lambda args: " ".join(args)[:60])
def test_xack(pending: Oracle, args: tuple[str, ...]) -> None:
    """An ack with any malformed ID acks nothing (the valid IDs before it included)."""
    pending.both("XACK", *args)
    pending.assert_same_state()
    pending.check()


def test_xack_arity(pending: Oracle) -> None:
    pending.both("XACK")
    pending.both("XACK", "s")
    pending.both("XACK", "s", "g")
    pending.assert_same_state()


def test_acked_entries_are_gone_for_good(pending: Oracle) -> None:
    both = pending.both
    assert both("XACK", "s", "g", "1-0", "2-0", "4-0") == 3
    assert both("XACK", "s", "g", "1-0", "2-0", "4-0") == 0
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    both("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0")
    both("XCLAIM", "s", "g", "carol", "0", "1-0", "4-0")
    both("XPENDING", "s", "g")
    pending.assert_same_state()


PENDING_QUERIES = [
    (),
    ("-", "+", "10"),
    ("-", "+", "0"),
    ("-", "+", "-1"),
    ("-", "+", "1"),
    ("-", "+", "2"),
    ("2", "4", "10"),
    ("(1-0", "(5-0", "10"),
    ("2-0", "2-0", "10"),
    ("5", "1", "10"),
    ("-", "+", "10", "alice"),
    ("-", "+", "10", "bob"),
    ("-", "+", "10", "nobody"),
    ("-", "+", "1", "bob"),
    ("-", "+", "10", "alice", "junk"),
    ("-", "+", "10", "alice", "junk", "junk2"),
    ("-", "+", "10", "alice", "junk", "junk2", "junk3"),
    ("IDLE", "0", "-", "+", "10"),
    ("IDLE", "-100", "-", "+", "10"),
    ("IDLE", "300000", "-", "+", "10"),
    ("idle", "300000", "-", "+", "10", "alice"),
    ("IDLE", "300000", "-", "+", "10", "bob"),
    ("IDLE", "300000", "-", "+", "1"),
    ("IDLE", "999999999", "-", "+", "10"),
    ("IDLE", "300000", "(1", "+", "10"),
    ("IDLE", "1", "-", "+", "10", "alice", "junk"),
    ("IDLE", "-", "+", "10"),
    ("-", "+", "10", "IDLE", "5"),
]


@pytest.mark.parametrize("args", PENDING_QUERIES, ids=lambda args: " ".join(args)[:60])
def test_xpending_queries(pending: Oracle, args: tuple[str, ...]) -> None:
    for group in ("g", "empty"):
        pending.both_timed("XPENDING", "s", group, *args)
    pending.assert_same_state()


PENDING_REFUSED = [
    ("s",),
    ("s", "g", "-"),
    ("s", "g", "-", "+"),
    ("s", "g", "IDLE", "5", "-", "+"),
    ("s", "g", "IDLE", "5", "-"),
    ("s", "g", "IDLE", "x", "-", "+", "10"),
    ("s", "g", "IDLE", "1.5", "-", "+", "10"),
    ("s", "g", "IDLE", "5", "-", "+", "10", "c", "extra"),
    ("s", "g", "-", "+", "x"),
    ("s", "g", "bad", "+", "x"),
    ("s", "g", "bad", "+", "10"),
    ("s", "g", "-", "bad", "10"),
    ("s", "g", "(18446744073709551615-18446744073709551615", "+", "10"),
    ("s", "g", "-", "(0-0", "10"),
    ("s", "g", "(-", "+", "10"),
    ("s", "g", "-", "+", "9223372036854775808"),
    ("s", "nope"),
    ("s", "nope", "-", "+", "10"),
    ("s", "nope", "-", "+", "x"),
    ("s", "nope", "bad", "+", "10"),
    ("missing", "g"),
    ("missing", "g", "-", "+", "10"),
    ("missing", "g", "IDLE", "x", "-", "+", "10"),
    ("missing", "g", "-", "+"),
]


@pytest.mark.parametrize("args", PENDING_REFUSED, ids=lambda args: " ".join(args)[:60])
def test_xpending_refused(pending: Oracle, args: tuple[str, ...]) -> None:
    """Argument count first, then IDLE, count, start, end; NOGROUP only after the parse."""
    assert is_error(pending.both("XPENDING", *args))
    pending.assert_same_state()


def test_xpending_summary_follows_acks_and_claims(pending: Oracle) -> None:
    both = pending.both
    both("XPENDING", "s", "g")
    both("XACK", "s", "g", "4-0", "5-0")
    both("XPENDING", "s", "g")
    both("XCLAIM", "s", "g", "B", "0", "3-0")
    both("XCLAIM", "s", "g", "aa", "0", "1-0")
    both("XPENDING", "s", "g")
    both("XACK", "s", "g", "1-0", "2-0", "3-0")
    both("XPENDING", "s", "g")
    pending.both_timed("XINFO", "CONSUMERS", "s", "g")
    pending.assert_same_state()
