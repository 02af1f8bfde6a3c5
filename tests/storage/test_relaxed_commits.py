"""Relaxed commits (``Txn.relaxed``): a write that acknowledged nothing -- a blocking XREADGROUP
that found nothing and only recorded its consumer -- does not wait for the disk on a
``sync=True`` store; the next durable commit's flush covers it (docs/durability.md, "Relaxed
commits").  Counted with the flusher's counters and the environment's durability figures,
never by timing."""

from __future__ import annotations

import os
import threading
from typing import Any

import rstore
from rstore.storage.engine.log_flush import counters
from rstore.storage.env import Env
from rstore.storage.records import layout


def _env(store: rstore.Store) -> Env:
    env: Env = store._live_env()
    return env


def _put(key: bytes, *, relaxed: bool) -> Any:
    def fn(txn: Any) -> None:
        txn.put(layout.DB_META, key, b"v")
        txn.relaxed = relaxed

    return fn


def _made_durable() -> int:
    """How many commits of this process went through the step that makes one durable."""
    return counters.flushes + counters.skipped


def test_a_relaxed_write_is_committed_without_waiting_and_the_next_flush_covers_it(
    tmp_path: os.PathLike[str],
) -> None:
    with rstore.Store(str(tmp_path)) as store:
        env = _env(store)
        env.write(_put(b"warm", relaxed=False))
        before = _made_durable()
        env.write(_put(b"relaxed", relaxed=True))
        assert _made_durable() == before  # it did not wait for the disk
        last, durable = env.durability()
        assert durable < last  # committed, not known on disk
        assert env.read(lambda txn: txn.get(layout.DB_META, b"relaxed")) == b"v"
        env.write(_put(b"durable", relaxed=False))
        assert _made_durable() == before + 1
        last, durable = env.durability()
        assert durable == last  # the durable commit's flush covered the relaxed one too


def test_a_batch_waits_for_the_disk_unless_every_write_of_it_is_relaxed(
    tmp_path: os.PathLike[str],
) -> None:
    """Writes of several threads share one commit: one write that must be durable makes the
    whole batch durable."""
    with rstore.Store(str(tmp_path)) as store:
        env = _env(store)
        env.write(_put(b"warm", relaxed=False))
        started, release = threading.Event(), threading.Event()

        def hold(txn: Any) -> None:  # leads a batch and keeps LMDB's lock while others queue
            started.set()
            release.wait(30)
            txn.put(layout.DB_META, b"lead", b"v")
            txn.relaxed = True

        leader = threading.Thread(target=env.write, args=(hold,))
        leader.start()
        assert started.wait(30)
        queued = [
            threading.Thread(target=env.write, args=(_put(key, relaxed=relaxed),))
            for key, relaxed in ((b"a", True), (b"b", False))
        ]
        for t in queued:
            t.start()
        while len(env._combiner._queue) < 2:
            threading.Event().wait(0.001)
        before = _made_durable()
        release.set()
        for t in (leader, *queued):
            t.join(30)
        assert _made_durable() - before == 1  # the batch of a and b waited for the disk
        last, durable = env.durability()
        assert durable == last


def test_a_blocking_xreadgroup_that_finds_nothing_records_its_consumer_without_a_flush(
    tmp_path: os.PathLike[str],
) -> None:
    with rstore.Store(str(tmp_path)) as store:
        store.xadd("s", {"f": "v"})
        store.xgroup_create("s", "g", id="$")
        before = _made_durable()
        assert store.xreadgroup("g", "alice", {"s": ">"}, block=20) == []  # timed out
        assert _made_durable() == before
        with rstore.Store(str(tmp_path)) as other:  # the consumer is there for everyone
            names = [c["name"] for c in other.xinfo_consumers("s", "g")]
        assert names == [b"alice"]
        store.xadd("s", {"f": "w"})
        reply = store.xreadgroup("g", "alice", {"s": ">"}, block=20)
        [[key, [(_, fields)]]] = reply
        assert (key, fields) == (b"s", {b"f": b"w"})
        assert _made_durable() == before + 2  # the XADD and the delivery: durable
        last, durable = _env(store).durability()
        assert durable == last


def test_a_served_batch_with_a_blocking_group_read_still_waits_for_the_disk(
    tmp_path: os.PathLike[str],
) -> None:
    """One transaction of several clients' commands (``execute_many``, what ``rstore serve``
    runs a turn in): a blocking XREADGROUP that found nothing relaxes only its own write, so
    an XADD of the same batch -- before or after it -- is on disk before it is acknowledged;
    the read alone still commits relaxed."""
    with rstore.Store(str(tmp_path)) as store:
        env = _env(store)
        store.execute("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
        xadd = [b"XADD", b"s", b"*", b"f", b"v"]
        for k, batch in enumerate(([xadd, None], [None, xadd], [None])):
            read = [b"XREADGROUP", b"GROUP", b"g", b"c%d" % k, b"BLOCK", b"0", b"STREAMS",
                    b"t", b">"]  # fmt: skip
            before = _made_durable()
            results = store.execute_many([read if argv is None else argv for argv in batch])
            assert any(isinstance(r, rstore.BlockedCall) for r in results)
            assert _made_durable() - before == (1 if xadd in batch else 0), batch
            if xadd in batch:
                last, durable = env.durability()
                assert durable == last
