"""XREADGROUP BLOCK (§7): only `>` blocks, group readers are served oldest first, and a
blocked reader whose group or key disappears gets the synchronous NOGROUP error (Valkey 7.2+
re-executes the command).  Each scenario runs on valkey and on rstore (threads, processes)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from rstore import NIL_ARRAY

from .blocking import Scenario, Side

pytestmark = pytest.mark.oracle

Run = Callable[[Scenario], None]
QUIET_S = 0.15  # how long a call must stay blocked to count as "not woken"


def read(consumer: str, *options: str | int, key: str = "s") -> tuple[str | int, ...]:
    return ("XREADGROUP", "GROUP", "g", consumer, *options, "STREAMS", key, ">")


def served_new_entries(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    call = side.start(*read("c", "BLOCK", 5000))
    side.wait_blocked(1)
    side.run("XINFO", "CONSUMERS", "s", "g")  # the consumer exists while it waits (7.2+)
    side.run("XADD", "s", "1-0", "f", "v1")
    side.result(">", call)
    side.run("XPENDING", "s", "g")
    side.run("XINFO", "GROUPS", "s")


def history_never_blocks(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    side.run("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    for args in (("s", "0"), ("s", "t", ">", "0"), ("t", "s", "0-0", ">")):
        call = side.start("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", *args)
        side.note("answered at once", call.done(2.0))
        side.result("history", call)


def group_readers_served_in_order(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    calls = []
    for consumer in ("c1", "c2", "c3"):
        calls.append(side.start(*read(consumer, "COUNT", 1, "BLOCK", 0)))
        side.wait_blocked(len(calls))
    side.multi(*[("XADD", "s", f"{i}-0", "f", f"v{i}") for i in (1, 2)])
    side.result("c1", calls[0])
    side.result("c2", calls[1])
    side.note("c3 still waits", not calls[2].done(QUIET_S))
    side.run("XADD", "s", "3-0", "f", "v3")
    side.result("c3", calls[2])
    side.run("XINFO", "GROUPS", "s")
    side.run("XPENDING", "s", "g", "-", "+", 10)


def group_readers_fifo_in_one_transaction(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    first = side.start(*read("c1", "COUNT", 1, "BLOCK", 0))
    side.wait_blocked(1)
    second = side.start(*read("c2", "COUNT", 1, "BLOCK", 0))
    side.wait_blocked(2)
    side.multi(*[("XADD", "s", f"{i}-0", "f", f"v{i}") for i in (1, 2, 3)])
    side.result("c1", first)
    side.result("c2", second)
    side.run("XINFO", "GROUPS", "s")
    side.run("XPENDING", "s", "g")


def destroyed_group(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    side.run("XGROUP", "CREATE", "s", "other", "$")
    call = side.start(*read("c", "BLOCK", 0))
    other = side.start("XREADGROUP", "GROUP", "other", "c", "BLOCK", 0, "STREAMS", "s", ">")
    side.wait_blocked(2)
    side.run("XGROUP", "DESTROY", "s", "g")
    side.result("group destroyed", call)
    side.note("other group still waits", not other.done(QUIET_S))
    side.run("XADD", "s", "1-0", "f", "v")
    side.result("other group", other)


def deleted_key(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    call = side.start(*read("c", "BLOCK", 0))
    reader = side.start("XREAD", "BLOCK", 300, "STREAMS", "s", "$")
    side.wait_blocked(2)
    side.run("DEL", "s")
    side.result("key deleted", call)
    side.result("XREAD on the deleted key", reader)


def flushall(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    side.run("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    call = side.start("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "t", "s", ">", ">")
    side.wait_blocked(1, keys=2)
    side.run("FLUSHALL")
    side.result("flushed", call)


def noack_and_timeout(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    call = side.start(*read("c", "NOACK", "BLOCK", 0))
    side.wait_blocked(1)
    side.run("XADD", "s", "1-0", "f", "v")
    side.result("NOACK", call)
    side.run("XPENDING", "s", "g")
    started = time.monotonic()
    call = side.start(*read("late", "BLOCK", 150))
    reply = side.result("timeout", call)
    side.note("nil array", reply is NIL_ARRAY)
    side.note("waited the timeout", 0.14 <= time.monotonic() - started < 2.0)
    side.run("XINFO", "CONSUMERS", "s", "g")


def seen_time_kept_while_blocked(side: Side) -> None:
    """A reader that waits past rstore's once-a-second re-check and times out was last seen
    when its call began (Valkey does not re-run a blocked command that nothing woke)."""
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    side.result("timeout", side.start(*read("c", "BLOCK", 1300)))
    consumer = side.run("XINFO", "CONSUMERS", "s", "g")[0]
    fields = dict(zip(consumer[0::2], consumer[1::2]))
    side.note("idle covers the whole wait", fields[b"idle"] >= 1250)


def setid_does_not_wake(side: Side) -> None:
    side.run("XADD", "s", "1-0", "f", "v1")
    side.run("XADD", "s", "2-0", "f", "v2")
    side.run("XGROUP", "CREATE", "s", "g", "$")
    call = side.start(*read("c", "BLOCK", 0))
    side.wait_blocked(1)
    side.run("XGROUP", "SETID", "s", "g", "0")
    side.run("XACK", "s", "g", "1-0")
    side.run("XCLAIM", "s", "g", "c", "0", "1-0", "FORCE")
    side.note("not woken by SETID/XACK/XCLAIM", not call.done(QUIET_S))
    side.run("XADD", "s", "3-0", "f", "v3")
    side.result("old and new entries", call)
    side.run("XPENDING", "s", "g", "-", "+", 10)


def rerun_after_vanished_entry(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    side.run("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    call = side.start("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", "t", ">", ">")
    side.wait_blocked(1, keys=2)
    side.multi(("XADD", "s", "1-0", "f", "gone"), ("XDEL", "s", "1-0"))
    side.note("blocked again", not call.done(QUIET_S))
    side.run("XADD", "t", "5-0", "f", "t5")
    side.result("the other key", call)
    side.run("XINFO", "GROUPS", "s")
    side.run("XINFO", "GROUPS", "t")


def group_and_plain_readers_together(side: Side) -> None:
    side.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    calls = []
    for argv in (
        ("XREAD", "BLOCK", 0, "STREAMS", "s", "$"),
        read("c1", "BLOCK", 0),
        read("c2", "BLOCK", 0),
    ):
        calls.append(side.start(*argv))
        side.wait_blocked(len(calls))  # one at a time: group readers are served in that order
    side.run("XADD", "s", "1-0", "f", "v")
    side.result("XREAD", calls[0])
    side.result("c1", calls[1])
    side.note("c2 got nothing", not calls[2].done(QUIET_S))
    side.run("XADD", "s", "2-0", "f", "v")
    side.result("c2", calls[2])


SCENARIOS = [
    served_new_entries,
    history_never_blocks,
    group_readers_served_in_order,
    group_readers_fifo_in_one_transaction,
    destroyed_group,
    deleted_key,
    flushall,
    noack_and_timeout,
    seen_time_kept_while_blocked,
    setid_does_not_wake,
    rerun_after_vanished_entry,
    group_and_plain_readers_together,
]


@pytest.mark.parametrize("fn", SCENARIOS, ids=lambda fn: fn.__name__)
def test_xreadgroup_blocking(scenario: Run, fn: Scenario) -> None:
    scenario(fn)
