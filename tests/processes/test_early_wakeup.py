"""Durable XREADGROUP readers are woken between a writer's commit and its log flush
(docs/durability.md, "Wake-ups before the flush"): no acknowledged write or delivery is lost
when the writer or the reader is killed around that step, the store stays consistent, and a
reader returns only once what it read and its own delivery are on disk."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

import rstore
from rstore.storage.engine import log_flush, wal

from . import helpers_flush as hf
from . import helpers_queue as hq
from .children import WAIT_S, Children, next_report

PROMPT_S = 5.0  # a wake-up, not the reader's safety re-check (60 s in these children)


@pytest.fixture
def store(path: str) -> Iterator[rstore.Store]:
    """The store of each test: the reader's own commit covers the writer's log record."""
    with rstore.Store(path) as s:
        yield s


def _group(store: rstore.Store) -> None:
    store.xgroup_create(hf.KEY, hf.GROUP, "$", mkstream=True)


def test_a_writer_killed_at_its_flush_has_already_woken_a_durable_group_reader(
    path: str, store: rstore.Store, children: Children
) -> None:
    """The writer dies at its after-commit flush, so it never returned; the reader was woken
    before that flush (its safety re-check is 60 s away) and got the entry.  When the reader
    returned, everything it had seen -- the writer's commit and its own delivery -- was on
    disk: its own commit's flush covers the writer's unflushed log record."""
    _group(store)
    results = children.ctx.Queue()
    reader = children.start(hf.durable_group_reader, path, results, False, True)
    assert reader.pid is not None
    hq.wait_blocked(path, 1, [reader.pid])
    parent_end, child_end = children.ctx.Pipe(duplex=False)
    writer = children.start(hf.xadd_killed_at_its_flush, path, child_end)
    child_end.close()
    writer.join(WAIT_S)
    assert writer.exitcode == -signal.SIGKILL
    with pytest.raises(EOFError):  # the XADD never returned
        parent_end.recv_bytes()
    _, status, (reply, (last, durable), (last_acked, durable_acked)) = next_report(
        results, "reader", timeout=PROMPT_S
    )
    assert status == "ok"
    [[key, [(entry_id, fields)]]] = reply
    assert key == hf.KEY and fields == {"from": "killed writer"}
    assert durable >= last  # the read, and the delivery it recorded, were on disk
    assert durable_acked >= last_acked  # so was the XACK
    assert store.check() == []
    assert [i.decode() for i, _ in store.xrange(hf.KEY)] == [entry_id]
    assert store.xpending(hf.KEY, hf.GROUP)["pending"] == 0  # acknowledged
    assert store.xinfo_groups(hf.KEY)[0]["last-delivered-id"] == entry_id.encode()


def test_a_reader_killed_between_its_delivery_commit_and_its_reply(
    path: str, store: rstore.Store, children: Children
) -> None:
    """The reader is killed at the flush of its own delivery commit: it never replied.  The
    acknowledged XADD is in the store, the store is consistent, and the delivery -- committed
    -- stays pending for that consumer: another consumer can claim it (at least once), and a
    `>` read does not hand it out a second time."""
    _group(store)
    results = children.ctx.Queue()
    reader = children.start(hf.durable_group_reader, path, results, True, False)
    assert reader.pid is not None
    hq.wait_blocked(path, 1, [reader.pid])
    entry_id = store.xadd(hf.KEY, {"n": 1})
    reader.join(WAIT_S)
    assert reader.exitcode == -signal.SIGKILL
    assert results.empty()  # it never replied
    assert store.check() == []
    assert [i for i, _ in store.xrange(hf.KEY)] == [entry_id]
    pending = store.xpending_range(hf.KEY, hf.GROUP, "-", "+", 10)
    assert [(p["message_id"], p["consumer"]) for p in pending] == [(entry_id, b"c1")]
    assert store.xreadgroup(hf.GROUP, "c2", {hf.KEY: ">"}, count=1) == []
    _, claimed, _ = store.xautoclaim(hf.KEY, hf.GROUP, "c2", 0, "0-0")
    assert [i for i, _ in claimed] == [entry_id]


def test_a_durable_group_reader_replies_with_what_is_on_disk(
    path: str, store: rstore.Store, children: Children
) -> None:
    """An ordinary wake-up (the writer lives): the reader is woken before the writer's flush,
    and still returns only once the entry and its delivery are on disk, as does its XACK."""
    _group(store)
    results = children.ctx.Queue()
    reader = children.start(hf.durable_group_reader, path, results, False, True)
    assert reader.pid is not None
    hq.wait_blocked(path, 1, [reader.pid])
    entry_id = store.xadd(hf.KEY, {"n": 1})
    _, status, (reply, (last, durable), (last_acked, durable_acked)) = next_report(
        results, "reader"
    )
    assert status == "ok"
    assert reply == [[hf.KEY, [[entry_id.decode(), {"n": "1"}]]]]
    assert durable >= last
    assert durable_acked >= last_acked
    assert store.check() == []


def test_the_woken_readers_commit_makes_the_writers_own_flush_unnecessary(
    path: str, store: rstore.Store, children: Children, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer woke a durable reader before its flush and waits for it (the grace is
    lengthened here so the test does not depend on the machine's speed): the reader's commit
    flushed the log, which covered the writer's record, so the XADD returns without a flush
    of its own, durable all the same."""
    monkeypatch.setattr(wal, "READER_GRACE_S", 30.0)  # the name the writer's commit reads
    _group(store)
    results = children.ctx.Queue()
    reader = children.start(hf.durable_group_reader, path, results, False, False)
    assert reader.pid is not None
    hq.wait_blocked(path, 1, [reader.pid])
    flushes, handed = log_flush.counters.flushes, log_flush.counters.handed
    before, _ = store._live_env().durability()
    entry_id = store.xadd(hf.KEY, {"n": 1})
    assert log_flush.counters.handed == handed + 1
    assert log_flush.counters.flushes == flushes
    _, on_disk = store._live_env().durability()
    assert on_disk >= before + 1  # the XADD's record (the log numbers records one by one)
    _, status, (reply, (last, durable_lsn), _) = next_report(results, "reader")
    assert status == "ok"
    assert reply == [[hf.KEY, [[entry_id.decode(), {"n": "1"}]]]]
    assert durable_lsn >= last
