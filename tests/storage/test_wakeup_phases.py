"""Which blocked readers a durable commit wakes before its log flush and which after it
(``Notifier.notify``'s phases; docs/blocking.md, "What a writer does"), and a writer's flush
left to the commit of a reader it woke (docs/durability.md, "Wake-ups before the flush")."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

import rstore
from rstore.storage.engine import log_flush
from rstore.storage.engine.log_flush import LogFlusher
from rstore.storage.waiting.notify import (
    ALL,
    EARLY,
    FLAG_EARLY,
    KIND_GROUP,
    KIND_READ,
    LATE,
    Notifier,
    slot_hash,
)
from rstore.storage.waiting.waiters import Waiter


@pytest.fixture
def notifier(tmp_path: os.PathLike[str]) -> Iterator[Notifier]:
    n = Notifier(str(tmp_path))
    yield n
    n.close()


def _woken(waiters: list[Waiter]) -> list[bool]:
    return [w.drain() for w in waiters]


def test_early_wakes_only_flagged_group_readers_late_the_others(notifier: Notifier) -> None:
    g = slot_hash(b"g")
    group_early = Waiter(notifier, KIND_GROUP, [b"s"], g, flags=FLAG_EARLY)
    other_group = Waiter(notifier, KIND_GROUP, [b"s"], slot_hash(b"h"))  # a sync=False reader
    xread = Waiter(notifier, KIND_READ, [b"s"])
    everyone = [group_early, other_group, xread]
    try:
        # woken, but not counted: a writer waits only for readers of other processes
        assert notifier.notify({slot_hash(b"s")}, EARLY) == 0
        assert _woken(everyone) == [True, False, False]
        notifier.notify({slot_hash(b"s")}, LATE)
        assert _woken(everyone) == [False, True, True]
        notifier.notify({slot_hash(b"s")}, ALL)  # a sync=False writer: every one at once
        assert _woken(everyone) == [True, True, True]
    finally:
        for w in everyone:
            w.close()


def test_only_the_oldest_reader_of_a_group_is_woken_in_either_phase(notifier: Notifier) -> None:
    """A group whose oldest reader is not flagged is left alone by the early phase (its
    younger, flagged reader must not overtake it), and the late phase leaves a group whose
    oldest reader was woken early (it passes the baton on)."""
    g = slot_hash(b"g")
    old_plain = Waiter(notifier, KIND_GROUP, [b"s"], g)
    young_early = Waiter(notifier, KIND_GROUP, [b"s"], g, flags=FLAG_EARLY)
    try:
        notifier.notify({slot_hash(b"s")}, EARLY)
        assert _woken([old_plain, young_early]) == [False, False]
        notifier.notify({slot_hash(b"s")}, LATE)
        assert _woken([old_plain, young_early]) == [True, False]
    finally:
        old_plain.close()
        young_early.close()
    old_early = Waiter(notifier, KIND_GROUP, [b"s"], g, flags=FLAG_EARLY)
    young_plain = Waiter(notifier, KIND_GROUP, [b"s"], g)
    try:
        notifier.notify({slot_hash(b"s")}, EARLY)
        assert _woken([old_early, young_plain]) == [True, False]
        notifier.notify({slot_hash(b"s")}, LATE)
        assert _woken([old_early, young_plain]) == [False, False]
    finally:
        old_early.close()
        young_plain.close()


@pytest.mark.parametrize("sync", [True, False])
def test_a_store_flags_its_group_readers_early_only_with_sync(
    tmp_path: os.PathLike[str], sync: bool
) -> None:
    """XREADGROUP waiters of a sync=True handle are flagged (their reply follows a durable
    commit of their own); XREAD waiters and sync=False handles never are."""
    with rstore.Store(str(tmp_path), sync=sync) as store:
        env = store._live_env()
        with (
            env.waiter(KIND_GROUP, [b"s"], slot_hash(b"g")) as group,
            env.waiter(KIND_READ, [b"s"]) as xread,
        ):
            notifier = Notifier(str(tmp_path))
            try:
                notifier.notify(None, EARLY)
                assert _woken([group, xread]) == [sync, False]  # type: ignore[list-item]
            finally:
                notifier.close()


# ------------------------------------------------------------------ the flush a reader covers


@pytest.fixture
def flushers(tmp_path: os.PathLike[str]) -> Iterator[tuple[LogFlusher, LogFlusher]]:
    """Two handles on one log's flushes, as two processes have: each with its own descriptor
    of the log file, both sharing ``wal.shm`` (a bare file stands for the log: only its
    identity and ``wal.shm`` matter here)."""
    log_path = os.path.join(str(tmp_path), "wal.log")
    shared_path = os.path.join(str(tmp_path), "wal.shm")
    with open(log_path, "wb") as f:
        f.write(b"\0" * 4096)
    fds = [os.open(log_path, os.O_RDWR | os.O_CLOEXEC) for _ in range(2)]
    first, second = (LogFlusher(log_path, shared_path, fd) for fd in fds)
    try:
        yield first, second
    finally:
        first.close()
        second.close()
        for fd in fds:
            os.close(fd)


def test_a_later_commit_makes_the_earlier_ones_flush_unnecessary(
    flushers: tuple[LogFlusher, LogFlusher],
) -> None:
    """A writer that woke readers waits for a later commit (a reader's, in another process):
    that commit's flush of the log covered the writer's record, so the writer returns without
    its own flush, and both handles know it is on disk."""
    writer, reader = flushers
    flushes, handed = log_flush.counters.flushes, log_flush.counters.handed

    def reader_commits() -> None:
        reader.make_durable(8)  # its record, after the writer's, marked committed

    timer = threading.Timer(0.05, reader_commits)
    timer.start()
    started = time.monotonic()
    writer.make_durable(7, grace_s=30.0)
    assert time.monotonic() - started < 10  # the reader's commit, not the grace, ended it
    timer.join()
    assert log_flush.counters.flushes == flushes + 1  # the reader's flush; none of the writer
    assert log_flush.counters.handed == handed + 1
    assert writer.known_durable() >= 7 and reader.known_durable() == 8


def test_without_a_later_commit_the_writer_flushes_after_the_grace(
    flushers: tuple[LogFlusher, LogFlusher],
) -> None:
    writer, other = flushers
    flushes, handed = log_flush.counters.flushes, log_flush.counters.handed
    started = time.monotonic()
    writer.make_durable(7, grace_s=0.05)
    assert time.monotonic() - started >= 0.05
    assert log_flush.counters.flushes == flushes + 1
    assert log_flush.counters.handed == handed
    assert other.known_durable() == 7  # published for the other processes


def test_a_writer_does_not_wait_for_a_reader_of_its_own_process(
    tmp_path: os.PathLike[str],
) -> None:
    """A reader of the writer's own process (a thread here; a parked read of `rstore serve`,
    which runs only after the writer's batch returned) is woken early too, but the writer
    flushes at once instead of waiting for it."""
    with rstore.Store(str(tmp_path)) as store:
        store.xgroup_create("s", "g", "$", mkstream=True)
        replies: list[object] = []
        reader = threading.Thread(
            target=lambda: replies.append(
                store.xreadgroup("g", "c", {"s": ">"}, count=1, block=30_000)
            )
        )
        reader.start()
        notifier = Notifier(str(tmp_path))
        try:
            deadline = time.monotonic() + 30
            while not notifier.anyone_waiting() and time.monotonic() < deadline:
                time.sleep(0.005)
        finally:
            notifier.close()
        handed = log_flush.counters.handed
        entry_id = store.xadd("s", {"n": 1})
        reader.join(30)
        assert replies == [[[b"s", [(entry_id, {b"n": b"1"})]]]]
        # a wait would have ended with the reader thread's commit covering the XADD
        assert log_flush.counters.handed == handed
