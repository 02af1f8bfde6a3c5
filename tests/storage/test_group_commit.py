"""Group commit: writes of several threads share commits (and their flushes), each keeping its
own all-or-nothing outcome; a durable commit's log record is flushed after LMDB's lock is
released, and a flush another writer already made is not repeated.

White box where it must be: the batches are counted by the environment's combiner and the
after-commit flushes by ``rstore.storage.engine.log_flush.counters``, never by timing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore.commands.registry import Context, lookup
from rstore.storage.engine import wal
from rstore.storage.engine.log_flush import LogFlusher, counters, read_word
from rstore.storage.env import Env
from rstore.storage.records import layout

WAIT_S = 30.0


def _env(store: rstore.Store) -> Env:
    env: Env = store._live_env()
    return env


def _put(key: bytes, value: bytes) -> Callable[[Any], bytes]:
    def fn(txn: Any) -> bytes:
        txn.put(layout.DB_META, key, value)
        return key

    return fn


def _get(env: Env, key: bytes) -> bytes | None:
    return env.read(lambda txn: txn.get(layout.DB_META, key))


def _xadd(txn: Any, argv: list[bytes]) -> Any:
    """Run an XADD on a transaction, as the command layer does."""
    spec = lookup(argv)
    assert spec.handler is not None
    return spec.handler(Context(txn, 0), argv)


def _wait_queued(env: Env, n: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(env._combiner._queue) < n:
        assert time.monotonic() < deadline, "the writes never queued"
        time.sleep(0.001)


class _Blocker:
    """A write that holds its batch open until released, so that others queue behind it."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()

    def __call__(self, txn: Any) -> str:
        self.inside.set()
        assert self.release.wait(WAIT_S)
        txn.put(layout.DB_META, b"t:blocker", b"1")
        return "blocker"


def _run_batch_behind_blocker(
    env: Env, fns: list[Callable[[Any], Any]]
) -> tuple[list[Any], list[BaseException | None]]:
    """Run ``fns`` in threads that queue while a blocker holds the lead: they form one batch."""
    blocker = _Blocker()
    lead = threading.Thread(target=env.write, args=(blocker,))
    lead.start()
    assert blocker.inside.wait(WAIT_S)
    results: list[Any] = [None] * len(fns)
    errors: list[BaseException | None] = [None] * len(fns)

    def run(i: int) -> None:
        try:
            results[i] = env.write(fns[i])
        except BaseException as exc:
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
        _wait_queued(env, threads.index(t) + 1)  # queue in a known order
    blocker.release.set()
    for t in [lead, *threads]:
        t.join(WAIT_S)
        assert not t.is_alive()
    return results, errors


def test_writes_queued_together_share_one_commit_and_keep_their_own_outcome(
    tmp_path: Path,
) -> None:
    """Three writes that queue while another commits run as one batch (one commit); the one
    that raises leaves nothing, the others are stored, and each caller gets its own result."""
    with rstore.Store(str(tmp_path / "s")) as store:
        env = _env(store)

        def fails(txn: Any) -> None:
            txn.put(layout.DB_META, b"t:fails", b"partial")
            raise ValueError("refused by the write itself")

        before = env._combiner.batches
        results, errors = _run_batch_behind_blocker(
            env, [_put(b"t:a", b"A"), fails, _put(b"t:c", b"C")]
        )
        assert env._combiner.batches - before == 2  # the blocker's batch, then the three
        assert results[0] == b"t:a" and results[2] == b"t:c"
        assert errors[0] is None and errors[2] is None
        assert isinstance(errors[1], ValueError)
        assert _get(env, b"t:a") == b"A" and _get(env, b"t:c") == b"C"
        assert _get(env, b"t:fails") is None
        assert _get(env, b"t:blocker") == b"1"


def test_a_write_after_a_failed_one_in_a_batch_does_not_see_its_changes(tmp_path: Path) -> None:
    """A failed write's changes to cached stream state do not leak into the next write of the
    same batch: XADDs batched around a failing write number their entries correctly."""
    with rstore.Store(str(tmp_path / "s")) as store:
        env = _env(store)
        store.xadd("s", {"f": "0"}, id="1-0")

        def bad_xadd(txn: Any) -> None:
            _xadd(txn, [b"XADD", b"s", b"5-0", b"f", b"x"])
            raise RuntimeError("after the XADD")

        def good_xadd(txn: Any) -> Any:
            return _xadd(txn, [b"XADD", b"s", b"*", b"f", b"y"])

        _, errors = _run_batch_behind_blocker(env, [bad_xadd, good_xadd])
        assert isinstance(errors[0], RuntimeError) and errors[1] is None
        ids = [eid for eid, _ in store.xrange("s")]
        assert b"5-0" not in ids and len(ids) == 2
        assert store.xlen("s") == 2
        assert store.xinfo_stream("s")["last-generated-id"] == ids[-1]


def test_a_batch_that_fills_the_map_runs_again_whole(tmp_path: Path) -> None:
    """Writes batched into a store with a tiny map: the map grows mid-batch, the batch runs
    again, every write is stored once."""
    with rstore.Store(str(tmp_path / "s"), map_size=64 * 1024) as store:
        env = _env(store)
        value = os.urandom(40_000)
        fns = [_put(f"t:{i}".encode(), value) for i in range(4)]
        results, errors = _run_batch_behind_blocker(env, fns)
        assert errors == [None] * 4
        assert results == [f"t:{i}".encode() for i in range(4)]
        assert all(_get(env, f"t:{i}".encode()) == value for i in range(4))
        assert env.map_size > 64 * 1024


class _Stop(BaseException):
    """Not an Exception: like KeyboardInterrupt, it must not be handed to other writers."""


def test_an_interrupt_in_the_leader_goes_to_its_caller_and_the_others_are_still_served(
    tmp_path: Path,
) -> None:
    with rstore.Store(str(tmp_path / "s")) as store:
        env = _env(store)

        def interrupted(txn: Any) -> None:
            raise _Stop

        results, errors = _run_batch_behind_blocker(
            env, [interrupted, _put(b"t:b", b"B"), _put(b"t:c", b"C")]
        )
        assert isinstance(errors[0], _Stop)
        assert errors[1:] == [None, None] and results[1:] == [b"t:b", b"t:c"]
        assert _get(env, b"t:b") == b"B" and _get(env, b"t:c") == b"C"


@pytest.mark.parametrize("sync", [True, False])
def test_concurrent_writer_threads_share_commits(tmp_path: Path, sync: bool) -> None:
    """16 threads XADDing at once: every entry lands once, in each thread's order, and the
    process made fewer commits (each one flush with sync=True) than writes."""
    threads_n, per_thread = 16, 40
    with rstore.Store(str(tmp_path / "s"), sync=sync) as store:
        env = _env(store)
        before_b, before_w = env._combiner.batches, env._combiner.writes
        flushes_before = counters.flushes
        start = threading.Barrier(threads_n)
        got: dict[int, list[bytes]] = {}

        def writer(w: int) -> None:
            start.wait(WAIT_S)
            got[w] = [store.xadd("s", {"w": w, "n": n}) for n in range(per_thread)]

        ts = [threading.Thread(target=writer, args=(w,)) for w in range(threads_n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(WAIT_S * 2)
            assert not t.is_alive()
        writes = env._combiner.writes - before_w
        batches = env._combiner.batches - before_b
        assert writes == threads_n * per_thread
        assert batches < writes  # shared commits
        entries = store.xrange("s")
        assert len(entries) == threads_n * per_thread
        for w in range(threads_n):
            mine = [(eid, f) for eid, f in entries if f[b"w"] == str(w).encode()]
            assert [eid for eid, _ in mine] == got[w]
            assert [f[b"n"] for _, f in mine] == [str(n).encode() for n in range(per_thread)]
        flushes = counters.flushes - flushes_before
        if sync:
            assert 0 < flushes <= batches  # at most one after-commit flush per commit
        else:
            assert flushes == 0


@contextmanager
def _other_flusher(path: str) -> Iterator[LogFlusher]:
    """A second handle on the flushes of the log of the store at ``path``, as another process
    has: its own descriptor of ``wal.log``, the same ``wal.shm``."""
    log_path = os.path.join(path, wal.LOG_FILE)
    fd = os.open(log_path, os.O_RDWR | os.O_CLOEXEC)
    try:
        flusher = LogFlusher(log_path, os.path.join(path, wal.SHARED_FILE), fd)
        try:
            yield flusher
        finally:
            flusher.close()
    finally:
        os.close(fd)


def _flusher(env: Env) -> LogFlusher:
    log = env._wal
    assert log is not None
    return log.flusher


def test_sync_true_flushes_the_log_after_the_commit(tmp_path: Path) -> None:
    """With sync=True LMDB never flushes inside the commit (MDB_NOSYNC); rstore flushes the
    commit's log record before the write returns: one counted flush per lone commit, and none
    for a commit that another flush already covered."""
    with rstore.Store(str(tmp_path / "s"), sync=True) as store:
        env = _env(store)
        assert env.lmdb_flags()["sync"] is False and env.lmdb_flags()["metasync"] is False
        f0, s0 = counters.flushes, counters.skipped
        for i in range(5):
            store.xadd("s", {"i": i})
        assert counters.flushes - f0 == 5
        last, durable = env.durability()
        assert durable >= last
        _flusher(env).make_durable(last)  # already made durable by the last XADD
        assert counters.flushes - f0 == 5
        assert counters.skipped - s0 == 1


def test_another_process_flush_is_seen_through_the_shared_word(tmp_path: Path) -> None:
    """A flush published by one handle (as another process would) lets a second handle on the
    same log skip its own; a word naming another log file is ignored."""
    path = str(tmp_path / "s")
    with rstore.Store(path, sync=True) as store:
        store.xadd("s", {"a": 1})
        last, _ = _env(store).durability()
        with _other_flusher(path) as other:  # a second process's view
            s0 = counters.skipped
            other.make_durable(last)
            assert counters.skipped - s0 == 1
            # the same word under another file identity (a store replaced at the path)
            moved = str(tmp_path / "t")
            os.makedirs(moved)
            with open(os.path.join(moved, wal.LOG_FILE), "wb") as f:
                f.write(b"\0" * 4096)
            os.link(os.path.join(path, wal.SHARED_FILE), os.path.join(moved, wal.SHARED_FILE))
            with _other_flusher(moved) as stranger:
                f0 = counters.flushes
                stranger.make_durable(1)
                assert counters.flushes - f0 == 1


def test_a_damaged_shared_word_only_costs_a_flush(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with rstore.Store(path, sync=True) as store:
        store.xadd("s", {"a": 1})
        shm = os.path.join(path, wal.SHARED_FILE)
        with open(shm, "r+b") as f:
            f.seek(24)
            f.write(b"\xff" * 8)  # a huge sequence number whose check no longer matches
        flusher = _flusher(_env(store))
        flusher._known = 0  # forget what this process knows
        f0 = counters.flushes
        store.xadd("s", {"a": 2})
        assert counters.flushes - f0 == 1
        assert store.xlen("s") == 2


def test_a_write_that_changed_nothing_is_not_flushed_nor_claimed(tmp_path: Path) -> None:
    """LMDB commits nothing for a transaction that changed no page (its id is used again by
    the next one), and the log gets no record for it: rstore neither flushes for it nor
    records it as durable, so the next commit, which carries the same id, still gets its own
    flush."""
    with rstore.Store(str(tmp_path / "s"), sync=True) as store:
        env = _env(store)
        store.xadd("s", {"a": 1})
        last = int(env._env.info()["last_txnid"])
        before = env.durability()
        f0, s0 = counters.flushes, counters.skipped
        env.write(lambda txn: txn.delete(layout.DB_META, b"t:missing"))
        assert int(env._env.info()["last_txnid"]) == last  # LMDB committed nothing
        assert env.durability() == before  # no record in the log, nothing more claimed
        assert (counters.flushes, counters.skipped) == (f0, s0)
        store.xadd("s", {"a": 2})
        assert int(env._env.info()["last_txnid"]) == last + 1
        assert env.durability()[0] == before[0] + 1
        assert counters.flushes - f0 == 1


def test_an_interrupt_during_the_leaders_flush_flushes_again_for_the_others(
    tmp_path: Path,
) -> None:
    """The leader of a batch is interrupted while it flushes the batch's commit: it gets the
    interrupt once the batch is flushed again; the others, committed, return only once their
    commit is on disk, as if nothing happened (never a plain success before the flush)."""
    with rstore.Store(str(tmp_path / "s"), sync=True) as store:
        env = _env(store)
        flusher = _flusher(env)
        real = flusher.make_durable
        calls: list[int] = []
        # The blocker's record is the next one, the batch's the one after.  The blocker passes
        # the lead on before its own flush, so either flush may come first: the interrupt is
        # raised by the batch's commit, not by whichever flush is second.
        batch = env.durability()[0] + 2

        def interrupted_first_flush_of_the_batch(lsn: int, grace_s: float = 0.0) -> None:
            calls.append(lsn)
            if lsn == batch and calls.count(batch) == 1:
                raise _Stop
            real(lsn, grace_s)

        flusher.make_durable = interrupted_first_flush_of_the_batch  # type: ignore[method-assign]
        _, errors = _run_batch_behind_blocker(
            env, [_put(b"t:a", b"A"), _put(b"t:b", b"B"), _put(b"t:c", b"C")]
        )
        flusher.make_durable = real  # type: ignore[method-assign]
        assert isinstance(errors[0], _Stop)
        assert errors[1:] == [None, None]
        assert sorted(calls) == [batch - 1, batch, batch]  # the same commit, flushed again
        assert env.durability()[1] >= batch
        assert [_get(env, k) for k in (b"t:a", b"t:b", b"t:c")] == [b"A", b"B", b"C"]


def test_an_interrupt_right_after_the_commit_is_never_a_silent_rerun(tmp_path: Path) -> None:
    """An interrupt that lands in the leader right after LMDB committed its batch: the other
    writes are not run a second time (no duplicate) and not reported as surely failed; they
    get a StorageError saying they may be stored, and they are."""
    with rstore.Store(str(tmp_path / "s"), sync=True) as store:
        env = _env(store)
        real = env._after_commit
        calls = [0]

        def after_commit(*args: Any) -> Any:
            calls[0] += 1
            after = real(*args)
            if calls[0] == 2:  # the batch after the blocker's
                raise _Stop
            return after

        env._after_commit = after_commit  # type: ignore[method-assign]
        try:
            writes0 = env._combiner.writes
            _, errors = _run_batch_behind_blocker(
                env, [_put(b"t:a", b"A"), _put(b"t:b", b"B"), _put(b"t:c", b"C")]
            )
        finally:
            env._after_commit = real  # type: ignore[method-assign]
        assert isinstance(errors[0], _Stop)
        for err in errors[1:]:
            assert isinstance(err, rstore.StorageError)
            assert "may or may not be stored" in str(err)
        assert [_get(env, k) for k in (b"t:a", b"t:b", b"t:c")] == [b"A", b"B", b"C"]
        assert env._combiner.writes - writes0 == 4  # the blocker and the three, once each


def test_an_interrupt_after_a_lone_commit_leaves_the_store_closable(tmp_path: Path) -> None:
    """A lone write interrupted right after its commit (before its log flush): its
    caller gets the interrupt, and closing the store neither hangs nor skips the flush (a
    replay process interrupted with SIGINT once hung at exit here)."""
    path = str(tmp_path / "s")
    store = rstore.Store(path, sync=True)
    env = _env(store)
    real = env._after_commit

    def after_commit(*args: Any) -> Any:
        real(*args)
        raise _Stop

    env._after_commit = after_commit  # type: ignore[method-assign]
    with pytest.raises(_Stop):
        env.write(_put(b"t:a", b"A"))
    env._after_commit = real  # type: ignore[method-assign]
    f0 = counters.flushes
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(WAIT_S)
    assert not closer.is_alive()
    assert counters.flushes - f0 == 1  # closing flushed the commit
    with rstore.Store(path) as again:
        assert _get(_env(again), b"t:a") == b"A"


def test_a_shared_word_ahead_of_the_log_is_erased_at_open(tmp_path: Path) -> None:
    """A word that names this log file but claims more than the log ever held (a store
    replaced at the same path, its new log on the same inode -- restored in place from a copy
    without ``wal.shm``) is erased when the store is opened, so it can never make a writer skip
    its flush."""
    path = str(tmp_path / "s")
    with rstore.Store(path, sync=True) as store:
        store.xadd("s", {"a": 1})
        last, _ = _env(store).durability()
    stale = last + 1000
    with _other_flusher(path) as previous:  # the flushes of the store that was here before
        previous.make_durable(stale)
    shm = os.path.join(path, wal.SHARED_FILE)
    fd = os.open(os.path.join(path, wal.LOG_FILE), os.O_RDONLY | os.O_CLOEXEC)
    try:
        assert read_word(shm, fd) == stale  # the word is well-formed and names this file
        with rstore.Store(path, sync=True) as store:
            assert read_word(shm, fd) <= _env(store).durability()[0]
            f0 = counters.flushes
            store.xadd("s", {"a": 2})
            assert counters.flushes - f0 == 1
    finally:
        os.close(fd)
