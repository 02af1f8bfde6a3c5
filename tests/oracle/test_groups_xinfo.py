"""XINFO GROUPS / CONSUMERS and the groups part of XINFO STREAM [FULL [COUNT n]] (§5), with
enough pending entries that COUNT limits both the group PEL and each consumer's PEL."""

from __future__ import annotations

import time

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle


@pytest.fixture
def busy(oracle: Oracle) -> Oracle:
    """``s``: 30 entries; group g (alice 12 pending, bob 9, carol none, 2 entries deleted),
    group h created at $ with ENTRIESREAD, group e (no consumers)."""
    both = oracle.both
    for i in range(1, 31):
        both("XADD", "s", f"{i}-0", "n", str(i))
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XGROUP", "CREATE", "s", "h", "$", "ENTRIESREAD", "30")
    both("XGROUP", "CREATE", "s", "e", "5-0")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "12", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "bob", "COUNT", "9", "STREAMS", "s", ">")
    both("XGROUP", "CREATECONSUMER", "s", "g", "carol")
    both("XCLAIM", "s", "g", "bob", "0", "3-0", "RETRYCOUNT", "4", "IDLE", "700000")
    both("XDEL", "s", "5-0", "20-0")
    return oracle


@pytest.mark.parametrize(
    "tail",
    [(), ("FULL",), ("FULL", "COUNT", "0"), ("FULL", "COUNT", "1"), ("FULL", "COUNT", "11"),
     ("FULL", "COUNT", "-1"), ("full", "count", "3")],
)  # fmt: skip
def test_xinfo_stream_with_groups(busy: Oracle, tail: tuple[str, ...]) -> None:
    busy.both_timed("XINFO", "STREAM", "s", *tail)


def test_xinfo_groups_and_consumers(busy: Oracle) -> None:
    busy.both("XINFO", "GROUPS", "s")
    for group in ("g", "h", "e"):
        busy.both_timed("XINFO", "CONSUMERS", "s", group)
    busy.both("XACK", "s", "g", *[f"{i}-0" for i in range(1, 15)])
    busy.both("XREADGROUP", "GROUP", "h", "dave", "STREAMS", "s", ">")
    busy.both("XADD", "s", "31-0", "n", "31")
    busy.both("XINFO", "GROUPS", "s")
    busy.both_timed("XINFO", "CONSUMERS", "s", "g")
    busy.assert_same_state()


def test_consumer_times_after_each_kind_of_call(busy: Oracle) -> None:
    """seen-time moves on every attempt, active-time only on successful reads and claims.
    The calls come 300 ms after the fixture's, and times are compared to 150 ms, so a time
    that moved (or failed to) shows."""
    both = busy.both
    time.sleep(0.3)
    both("XCLAIM", "s", "g", "carol", "999999999", "1-0")  # nothing claimed
    both("XREADGROUP", "GROUP", "g", "erin", "STREAMS", "s", "0")  # history: not active
    both("XREADGROUP", "GROUP", "g", "fay", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    both("XAUTOCLAIM", "s", "g", "gus", "500000", "0")  # claims 3-0 (idle 700 s)
    busy.both_timed("XINFO", "CONSUMERS", "s", "g", tolerance_ms=150)
    busy.both_timed("XINFO", "STREAM", "s", "FULL", tolerance_ms=150)
