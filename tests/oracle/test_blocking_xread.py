"""XREAD BLOCK (§7): the same scenario on valkey and on rstore, whose blocked readers run in
threads and in other processes.  Waits are short; every wait is bounded."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from rstore import NIL_ARRAY

from .blocking import Scenario, Side

pytestmark = pytest.mark.oracle

Run = Callable[[Scenario], None]
QUIET_S = 0.15  # how long a call must stay blocked to count as "not woken"


def xread_woken_by_xadd(side: Side) -> None:
    side.run("XADD", "s", "1-0", "f", "v1")
    call = side.start("XREAD", "BLOCK", 5000, "STREAMS", "s", "$")
    side.wait_blocked(1)
    side.note("blocked before the XADD", not call.done(QUIET_S))
    side.run("XADD", "s", "2-0", "f", "v2")
    side.result("XREAD", call)


def woken_by_another_writer(side: Side) -> None:
    """The writer is another connection / thread / process, not the test's own."""
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    side.wait_blocked(1)
    writer = side.start("XADD", "s", "1-0", "f", "from elsewhere")
    side.result("XADD", writer)
    side.result("XREAD", call)


def xread_block_0_and_count(side: Side) -> None:
    side.run("XADD", "s", "1-0", "f", "v1")
    call = side.start("XREAD", "COUNT", 1, "BLOCK", 0, "STREAMS", "s", "1-0")
    side.wait_blocked(1)
    side.multi(*[("XADD", "s", f"{i}-0", "f", f"v{i}") for i in (2, 3, 4)])
    side.result("COUNT 1", call)


def xread_times_out(side: Side) -> None:
    side.run("XADD", "s", "1-0", "f", "v1")
    for keys in (("s",), ("missing",), ("s", "missing")):
        started = time.monotonic()
        call = side.start("XREAD", "BLOCK", 150, "STREAMS", *keys, *["$"] * len(keys))
        reply = side.result("timeout", call)
        elapsed = time.monotonic() - started
        side.note("nil array", reply is NIL_ARRAY)
        side.note("waited the timeout", 0.14 <= elapsed < 2.0)


def dollar_is_fixed_when_blocking(side: Side) -> None:
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "new", "$")
    side.wait_blocked(1)
    side.run("XADD", "new", "5-0", "f", "first")
    side.result("$ on a missing key", call)
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "new", "$")
    side.wait_blocked(1)
    side.multi(("XADD", "new", "6-0", "f", "a"), ("XADD", "new", "7-0", "f", "b"))
    side.result("$ on an existing key", call)
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "new", "10-0")
    side.wait_blocked(1)
    side.run("XADD", "new", "8-0", "f", "too old")
    side.note("not served by an older entry", not call.done(QUIET_S))
    side.run("XADD", "new", "11-0", "f", "new enough")
    side.result("explicit ID", call)


def several_streams_in_argument_order(side: Side) -> None:
    side.run("XADD", "a", "1-0", "f", "a1")
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "a", "b", "c", "$", "$", "$")
    side.wait_blocked(1, keys=3)
    side.multi(("XADD", "c", "2-0", "f", "c"), ("XADD", "b", "3-0", "f", "b"))
    side.result("b and c", call)
    call = side.start("XREAD", "COUNT", 1, "BLOCK", 0, "STREAMS", "a", "b", "a", "$", "$", "0")
    side.result("one key servable at once", call)


def not_woken_by_deletions(side: Side) -> None:
    for i in range(1, 4):
        side.run("XADD", "s", f"{i}-0", "f", f"v{i}")
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    side.wait_blocked(1)
    side.run("XDEL", "s", "1-0")
    side.run("XTRIM", "s", "MAXLEN", "1")
    side.run("XSETID", "s", "10-0")
    side.run("XGROUP", "CREATE", "s", "g", "$")
    side.run("XTRIM", "s", "MAXLEN", "0")
    side.note("still blocked", not call.done(QUIET_S))
    side.run("XADD", "s", "11-0", "f", "new")
    side.result("after XADD", call)


def rerun_keeps_the_deadline(side: Side) -> None:
    """An XADD whose entry is gone when the reader re-runs re-blocks it until the original
    deadline (not a fresh one)."""
    side.run("XADD", "s", "1-0", "f", "v1")
    started = time.monotonic()
    call = side.start("XREAD", "BLOCK", 700, "STREAMS", "s", "$")
    side.wait_blocked(1)
    time.sleep(0.35)
    side.multi(("XADD", "s", "5-0", "f", "gone"), ("XDEL", "s", "5-0"))
    side.note("blocked again", not call.done(0.1))
    reply = side.result("timed out", call)
    elapsed = time.monotonic() - started
    side.note("nil array", reply is NIL_ARRAY)
    side.note("original deadline", 0.65 <= elapsed < 1.0)
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    side.wait_blocked(1)
    side.run("XADD", "s", "MAXLEN", "0", "6-0", "f", "trimmed at once")
    side.note("not woken by a trimmed entry", not call.done(QUIET_S))
    side.run("XADD", "s", "7-0", "f", "kept")
    side.result("the next real entry", call)


def every_reader_gets_the_data(side: Side) -> None:
    side.run("XADD", "s", "1-0", "f", "v1")
    calls = [
        side.start("XREAD", "BLOCK", 0, "STREAMS", "s", "$"),
        side.start("XREAD", "COUNT", 1, "BLOCK", 0, "STREAMS", "s", "$"),
        side.start("XREAD", "BLOCK", 0, "STREAMS", "other", "s", "$", "$"),
    ]
    side.wait_blocked(3, keys=4)
    side.multi(("XADD", "s", "2-0", "f", "a"), ("XADD", "s", "3-0", "f", "b"))
    for i, call in enumerate(calls):
        side.result(f"reader {i}", call)


def count_is_unlimited_on_wake(side: Side) -> None:
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    side.wait_blocked(1)
    side.multi(*[("XADD", "s", f"{i}-1", "n", i) for i in range(1, 1201)])
    reply = side.result("all 1200", call)
    side.note("entries", len(reply[0][1]) if isinstance(reply, list) else reply)


def plus_waits_for_the_first_entry(side: Side) -> None:
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "m", "+")
    side.wait_blocked(1)
    side.run("XADD", "m", "1-0", "f", "first")
    side.result("+ on a missing key", call)
    side.run("XADD", "m", "2-0", "f", "second")
    side.run("XDEL", "m", "2-0")
    call = side.start("XREAD", "BLOCK", 100, "STREAMS", "m", "+")
    side.result("+ with the last entry deleted", call)


def deleted_key_then_recreated(side: Side) -> None:
    side.run("XADD", "s", "3-0", "f", "v")
    call = side.start("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    side.wait_blocked(1)
    side.run("DEL", "s")
    side.note("not woken by DEL", not call.done(QUIET_S))
    side.run("XADD", "s", "1-0", "f", "older than $")
    side.note("not served below $", not call.done(QUIET_S))
    side.run("XADD", "s", "4-0", "f", "newer")
    side.result("recreated key", call)


def block_in_a_transaction_does_not_block(side: Side) -> None:
    side.run("XADD", "s", "1-0", "f", "v")
    side.run("XGROUP", "CREATE", "s", "g", "$")
    started = time.monotonic()
    side.multi(
        ("XREAD", "BLOCK", 1500, "STREAMS", "s", "$"),
        ("XREAD", "BLOCK", 1500, "STREAMS", "s", "0"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", 1500, "STREAMS", "s", ">"),
        ("XREAD", "BLOCK", 1500, "STREAMS", "missing", "$"),
        ("XADD", "s", "2-0", "f", "w"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", 1500, "STREAMS", "s", ">"),
    )
    side.note("returned at once", time.monotonic() - started < 1.0)
    side.run("XINFO", "CONSUMERS", "s", "g")


SCENARIOS = [
    xread_woken_by_xadd,
    woken_by_another_writer,
    xread_block_0_and_count,
    xread_times_out,
    dollar_is_fixed_when_blocking,
    several_streams_in_argument_order,
    not_woken_by_deletions,
    rerun_keeps_the_deadline,
    every_reader_gets_the_data,
    count_is_unlimited_on_wake,
    plus_waits_for_the_first_entry,
    deleted_key_then_recreated,
    block_in_a_transaction_does_not_block,
]


@pytest.mark.parametrize("fn", SCENARIOS, ids=lambda fn: fn.__name__)
def test_xread_blocking(scenario: Run, fn: Scenario) -> None:
    scenario(fn)
