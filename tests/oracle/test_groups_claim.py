"""XCLAIM (§3.3) and XAUTOCLAIM (§3.4): option grammar and error order, FORCE, RETRYCOUNT,
JUSTID, LASTID, deleted entries, idle filters, cursors and the 10x attempts limit.

Idle filters are made deterministic with delivery times far in the past (``IDLE 600000``,
``TIME 1``) against thresholds far from them (``500000``), never with real waiting.
"""

from __future__ import annotations

import pytest

from .harness import Oracle, is_error

pytestmark = pytest.mark.oracle


@pytest.fixture
def claims(oracle: Oracle) -> Oracle:
    """``s``: 1-0..8-0; group g: alice holds 1-0..3-0 (1-0, 2-0 idle ~600 s), bob holds 4-0,
    5-0; 6-0.. undelivered; then 2-0 and 7-0 deleted from the stream.  Group ``empty`` has no
    pending entries."""
    both = oracle.both
    for i in range(1, 9):
        both("XADD", "s", f"{i}-0", "f", f"v{i}")
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XGROUP", "CREATE", "s", "empty", "$")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    both("XCLAIM", "s", "g", "alice", "0", "1-0", "2-0", "IDLE", "600000", "JUSTID")
    both("XDEL", "s", "2-0", "7-0")
    return oracle


XCLAIMS = [
    ("carol", "0", "1-0"),
    ("carol", "0", "1-0", "3-0", "4-0"),
    ("carol", "0", "1-0", "1-0", "3", "JUSTID"),
    ("carol", "0", "JUSTID"),
    ("carol", "0"),
    ("alice", "0", "1-0", "3-0"),
    ("carol", "-5", "1-0"),
    ("carol", "500000", "1-0", "3-0", "4-0"),
    ("carol", "500000", "1-0", "3-0", "JUSTID"),
    ("carol", "0", "2-0"),
    ("carol", "0", "2-0", "1-0", "JUSTID"),
    ("carol", "0", "7-0", "FORCE"),
    ("carol", "0", "6-0"),
    ("carol", "0", "6-0", "FORCE"),
    ("carol", "0", "6-0", "8-0", "FORCE", "JUSTID"),
    ("carol", "999999", "6-0", "FORCE"),
    ("carol", "0", "9-0", "FORCE"),
    ("carol", "0", "1-0", "RETRYCOUNT", "9"),
    ("carol", "0", "1-0", "RETRYCOUNT", "0", "JUSTID"),
    ("carol", "0", "1-0", "RETRYCOUNT", "-2"),
    ("carol", "0", "1-0", "RETRYCOUNT", "1", "RETRYCOUNT", "5"),
    ("carol", "0", "1-0", "IDLE", "700000"),
    ("carol", "0", "1-0", "IDLE", "-100"),
    ("carol", "0", "1-0", "TIME", "1"),
    ("carol", "0", "1-0", "TIME", "99999999999999"),
    ("carol", "0", "1-0", "TIME", "-5"),
    ("carol", "0", "1-0", "IDLE", "5", "TIME", "1"),
    ("carol", "0", "1-0", "TIME", "1", "IDLE", "5"),
    ("carol", "0", "1-0", "LASTID", "7-0"),
    ("carol", "0", "1-0", "LASTID", "2-0"),
    ("carol", "0", "LASTID", "99-0", "JUSTID"),
    ("carol", "500000", "4-0", "LASTID", "6"),
    ("carol", "0", "1-0", "force", "justid", "retrycount", "4", "idle", "1", "lastid", "6"),
    ("carol", "0", "3-0", "FORCE", "FORCE", "JUSTID", "JUSTID"),
    ("", "0", "1-0"),
]


@pytest.mark.parametrize("args", XCLAIMS, ids=lambda args: " ".join(args)[:60])
def test_xclaim(claims: Oracle, args: tuple[str, ...]) -> None:
    claims.both("XCLAIM", "s", "g", *args)
    claims.assert_same_state()
    claims.check()
    claims.both_timed("XPENDING", "s", "g", "IDLE", "500000", "-", "+", "10")


XCLAIM_REFUSED = [
    ("s", "g", "c", "0"),
    ("s", "g", "c"),
    ("s", "nope", "c", "0", "1-0"),
    ("s", "nope", "c", "x", "1-0"),
    ("missing", "g", "c", "x", "bad"),
    ("s", "g", "c", "x", "1-0"),
    ("s", "g", "c", "1.5", "1-0"),
    ("s", "g", "c", "", "1-0"),
    ("s", "g", "c", "0", "foo"),
    ("s", "g", "c", "0", "1-0", "foo"),
    ("s", "g", "c", "0", "1-0", "FORCE", "3-0"),
    ("s", "g", "c", "0", "1-0", "-"),
    ("s", "g", "c", "0", "1-0", "+"),
    ("s", "g", "c", "0", "1-0", "IDLE"),
    ("s", "g", "c", "0", "1-0", "IDLE", "x"),
    ("s", "g", "c", "0", "1-0", "TIME", "x"),
    ("s", "g", "c", "0", "1-0", "TIME"),
    ("s", "g", "c", "0", "1-0", "RETRYCOUNT", "x"),
    ("s", "g", "c", "0", "1-0", "RETRYCOUNT"),
    ("s", "g", "c", "0", "1-0", "LASTID", "bad"),
    ("s", "g", "c", "0", "1-0", "LASTID", "+"),
    ("s", "g", "c", "0", "1-0", "LASTID"),
    ("s", "g", "c", "0", "1-0", "JUSTID", "IDLE", "1", "bogus"),
    ("s", "g", "c", "0", "1-0", "LASTID", "9-0", "bogus"),
]


@pytest.mark.parametrize("args", XCLAIM_REFUSED, ids=lambda args: " ".join(args)[:60])
def test_xclaim_refused_changes_nothing(claims: Oracle, args: tuple[str, ...]) -> None:
    """Options are all parsed before anything is claimed: not even LASTID or the consumer."""
    assert is_error(claims.both("XCLAIM", *args))
    claims.assert_same_state()


def test_force_then_claim_counts(claims: Oracle) -> None:
    both = claims.both
    both("XCLAIM", "s", "g", "dave", "0", "6-0", "FORCE")  # created at 1, claimed: 2
    both("XCLAIM", "s", "g", "dave", "0", "8-0", "FORCE", "JUSTID")  # stays at 1
    both("XCLAIM", "s", "g", "erin", "0", "6-0", "8-0", "JUSTID")
    claims.both_timed("XPENDING", "s", "g", "-", "+", "10")
    both("XREADGROUP", "GROUP", "g", "fred", "STREAMS", "s", ">")  # 6-0, 8-0 moved to fred
    claims.assert_same_state()
    claims.check()


XAUTOCLAIMS = [
    ("carol", "0", "0"),
    ("carol", "0", "-"),
    ("carol", "0", "+"),
    ("carol", "0", "3"),
    ("carol", "0", "(1-0"),
    ("carol", "0", "0", "COUNT", "1"),
    ("carol", "0", "0", "COUNT", "2"),
    ("carol", "0", "0", "COUNT", "1", "JUSTID"),
    ("carol", "0", "0", "JUSTID", "COUNT", "3", "COUNT", "1"),
    ("carol", "-7", "0", "count", "2", "justid"),
    ("carol", "500000", "0"),
    ("carol", "500000", "0", "COUNT", "1"),
    ("carol", "999999999", "0"),
    ("carol", "999999999", "3-0", "COUNT", "1"),
    ("carol", "0", "0", "JUSTID", "JUSTID"),
]


@pytest.mark.parametrize("args", XAUTOCLAIMS, ids=lambda args: " ".join(args)[:60])
def test_xautoclaim(claims: Oracle, args: tuple[str, ...]) -> None:
    for group in ("g", "empty"):
        claims.both("XAUTOCLAIM", "s", group, *args)
    claims.assert_same_state()
    claims.check()


XAUTOCLAIM_REFUSED = [
    ("s", "g", "c", "0"),
    ("s", "g", "c", "x", "0"),
    ("s", "g", "c", "1.5", "0"),
    ("s", "g", "c", "0", "bad"),
    ("s", "g", "c", "0", "(+"),
    ("s", "g", "c", "0", "(18446744073709551615-18446744073709551615"),
    ("s", "g", "c", "0", "0", "COUNT", "0"),
    ("s", "g", "c", "0", "0", "COUNT", "-1"),
    ("s", "g", "c", "0", "0", "COUNT", "x"),
    ("s", "g", "c", "0", "0", "COUNT", "1.5"),
    ("s", "g", "c", "0", "0", "COUNT", ""),
    ("s", "g", "c", "0", "0", "COUNT", "576460752303423488"),
    ("s", "g", "c", "0", "0", "COUNT", "576460752303423487"),
    ("s", "g", "c", "0", "0", "COUNT", "576460752303423486"),
    ("s", "g", "c", "0", "0", "COUNT"),
    ("s", "g", "c", "0", "0", "FOO"),
    ("s", "g", "c", "0", "0", "JUSTID", "FOO"),
    ("s", "g", "c", "0", "0", "COUNT", "1", "COUNT", "0"),
    ("s", "nope", "c", "0", "0"),
    ("s", "nope", "c", "0", "0", "COUNT", "0"),
    ("s", "nope", "c", "x", "0"),
    ("missing", "g", "c", "0", "0"),
    ("missing", "g", "c", "0", "bad"),
    ("missing", "g", "c", "0", "0", "FOO"),
]


@pytest.mark.parametrize("args", XAUTOCLAIM_REFUSED, ids=lambda args: " ".join(args)[:60])
def test_xautoclaim_refused_changes_nothing(claims: Oracle, args: tuple[str, ...]) -> None:
    """Every argument error comes before NOGROUP; a refusal claims and deletes nothing."""
    assert is_error(claims.both("XAUTOCLAIM", *args))
    claims.assert_same_state()


def test_xautoclaim_cursor_walk_reports_deleted(oracle: Oracle) -> None:
    both = oracle.both
    for i in range(1, 7):
        both("XADD", "x", f"{i}-0", "f", f"v{i}")
    both("XGROUP", "CREATE", "x", "grp", "0")
    both("XREADGROUP", "GROUP", "grp", "alice", "STREAMS", "x", ">")
    both("XDEL", "x", "1-0", "2-0", "5-0")
    cursor: bytes | str = "0-0"
    for _ in range(8):
        reply = both("XAUTOCLAIM", "x", "grp", "Bob", "0", cursor, "COUNT", "1")
        cursor = reply[0]
        oracle.assert_same_state()
        if cursor == b"0-0":
            break
    assert cursor == b"0-0"
    both("XAUTOCLAIM", "x", "grp", "Bob", "0", "0")
    oracle.check()


def test_xautoclaim_attempts_limit(oracle: Oracle) -> None:
    """With nothing idle enough, one call examines at most 10 x COUNT pending entries."""
    both = oracle.both
    for i in range(1, 26):
        both("XADD", "s", f"{i}-0", "f", str(i))
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    both("XCLAIM", "s", "g", "a", "0", "20-0", "22-0", "IDLE", "900000", "JUSTID")
    both("XDEL", "s", "3-0", "4-0", "15-0")
    for args in (
        ("0", "COUNT", "1"),
        ("11-0", "COUNT", "1"),
        ("0", "COUNT", "2"),
        ("0", "COUNT", "3"),
        ("21", "COUNT", "1"),
        ("0",),
    ):
        both("XAUTOCLAIM", "s", "g", "b", "500000", *args)
        oracle.assert_same_state()
    oracle.check()


def test_deleted_entries_are_claimed_nowhere(claims: Oracle) -> None:
    """XCLAIM drops the NACKs of deleted entries silently; XAUTOCLAIM reports them once."""
    both = claims.both
    both("XTRIM", "s", "MINID", "4")
    both("XCLAIM", "s", "g", "zed", "999999999", "1-0", "JUSTID")
    both("XPENDING", "s", "g")
    both("XAUTOCLAIM", "s", "g", "zed", "999999999", "0")
    both("XAUTOCLAIM", "s", "g", "zed", "999999999", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    claims.assert_same_state()
    claims.check()


def test_lastid_only_moves_forward(claims: Oracle) -> None:
    both = claims.both
    both("XGROUP", "SETID", "s", "g", "5-0", "ENTRIESREAD", "5")
    both("XCLAIM", "s", "g", "c", "0", "LASTID", "3-0")
    both("XINFO", "GROUPS", "s")
    both("XCLAIM", "s", "g", "c", "0", "LASTID", "6-0")
    both("XINFO", "GROUPS", "s")
    both("XCLAIM", "s", "g", "c", "0", "LASTID", "100-0")
    both("XINFO", "GROUPS", "s")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    both("XADD", "s", "101-0", "f", "new")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    claims.assert_same_state()


def test_delivery_count_past_the_signed_limit(claims: Oracle) -> None:
    """RETRYCOUNT takes any signed 64-bit value; valkey replies delivery counts as signed
    integers, so one more delivery after 9223372036854775807 shows -9223372036854775808."""
    both = claims.both
    both("XCLAIM", "s", "g", "alice", "0", "3-0", "RETRYCOUNT", "9223372036854775807", "JUSTID")
    claims.both_timed("XPENDING", "s", "g", "-", "+", "10")
    both("XCLAIM", "s", "g", "alice", "0", "3-0")
    claims.both_timed("XPENDING", "s", "g", "-", "+", "10")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "2-0")
    claims.assert_same_state()
