"""Many processes and threads on one store: nothing lost, nothing torn, nothing stuck.

Children run the bodies in ``helpers_mp`` and report through queues and pipes, so every wait
here is on a synchronisation primitive with a timeout; a child that hangs fails the test.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from functools import partial
from typing import Any

import lmdb
import pytest

import rstore

from . import helpers_mp as h
from .children import WAIT_S, Children, collect, drain, recv, sigkill

KEY = h.KEY
TINY_MAP = 64 * 1024


needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork"
)


def _seqs_are_prefixes(entries: list[h.Entry]) -> None:
    """Each writer appends in order, so any snapshot holds seq 0..k of each writer."""
    for writer, seqs in h.by_writer(entries).items():
        assert seqs == list(range(len(seqs))), f"writer {writer} out of order or with a gap"


# --------------------------------------------------------------------------- (a) writers


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", pytest.param("fork", marks=needs_fork)])
def test_concurrent_writer_processes_lose_nothing(
    path: str, children: Children, method: str
) -> None:
    """Writers in separate processes XADD with ``*`` at once: every entry lands, in order.

    With ``spawn`` each child opens the store by path; with ``fork`` each child uses the
    Store object it inherited from the parent, which keeps the store open throughout.
    """
    writers, count = 4, 250
    store = rstore.Store(path)
    ctx = mp.get_context(method)
    start = ctx.Barrier(writers)
    results = ctx.Queue()
    for w in range(writers):
        target = store if method == "fork" else path
        children.start(h.append_worker, target, w, count, 0, start, results, {}, ctx=ctx)
    returned = collect(results, writers, children)
    children.join()

    entries = h.check_stream(store)  # IDs strictly increasing, XLEN == XRANGE == XINFO
    assert len(entries) == writers * count
    by_id = dict(entries)
    for w, ids in returned.items():
        assert [(by_id[i][b"w"], by_id[i][b"seq"]) for i in ids] == [
            (str(w).encode(), str(seq).encode()) for seq in range(count)
        ], f"writer {w}: a returned ID is missing or carries another entry"
    assert h.by_writer(entries) == {w: list(range(count)) for w in range(writers)}
    switches = sum(a[1][b"w"] != b[1][b"w"] for a, b in itertools.pairwise(entries))
    assert switches >= writers, "the writers did not run concurrently; the test proves little"
    store.close()


# --------------------------------------------------------------------------- (b) SIGKILL


@pytest.mark.slow
def test_sigkilled_writer_keeps_every_acknowledged_xadd(path: str, children: Children) -> None:
    """A writer killed with SIGKILL while XADDing: every XADD that returned is there, at most
    the one in flight is added besides, the stream stays consistent and writable."""
    rstore.Store(path).close()
    acknowledged: list[bytes] = []
    for run, kill_after in enumerate((25, 120, 300), start=1):
        got = h.kill_xadd_writer(children, path, sync=True, kill_after=kill_after)
        assert len(got) >= kill_after
        acknowledged += got
        with rstore.Store(path) as store:
            entries = h.check_stream(store)
            ids = [eid for eid, _ in entries]
            missing = set(acknowledged) - set(ids)
            assert not missing, f"run {run}: {len(missing)} acknowledged XADDs lost"
            extra = [eid for eid in ids if eid not in set(acknowledged)]
            assert extra in ([], [ids[-1]]), f"run {run}: unexpected entries {extra[:3]}"
            acknowledged += extra  # the XADD in flight committed before the kill
            for _, fields in entries:  # nothing half-written
                assert len(fields[b"pad"]) in (0, 200)
            _seqs_are_prefixes(entries)
            acknowledged.append(store.xadd(KEY, {"w": 0, "seq": run - 1, "pad": ""}))
    with rstore.Store(path) as store:
        assert [eid for eid, _ in h.check_stream(store)] == acknowledged


@pytest.mark.slow
def test_sigkilled_pipeline_is_all_or_nothing(path: str, children: Children) -> None:
    """A writer killed with SIGKILL inside ``pipeline().execute()``: each pipeline is in the
    store whole or not at all, every pipeline that returned is there, writes go on."""
    batch, pad = 300, 300
    rstore.Store(path).close()
    ctx = children.ctx
    done: set[tuple[int, int]] = set()  # (run, batch) of every execute() that returned
    interrupted = 0
    killed: set[tuple[int, int]] = set()  # the batch each run was killed in
    for run, fraction in enumerate((0.1, 0.5, 0.9), start=1):
        parent_end, child_end = ctx.Pipe(duplex=False)
        proc = children.start(h.pipelines_until_killed, path, child_end, run, True, batch, pad)
        child_end.close()
        durations: list[float] = []
        while True:
            msg = recv(parent_end)
            if msg[0] == "done":
                done.add((run, msg[1]))
                durations.append(msg[4])
            elif len(durations) >= 2:  # ("start", b): the child is entering execute()
                # Not a synchronisation: this delay picks where inside execute() to kill.
                time.sleep(fraction * statistics.median(durations))
                sigkill(proc)
                killed_batch = msg[1]
                break
        for msg in drain(parent_end):
            if msg[0] == "done":
                done.add((run, msg[1]))
            else:  # the child started the next batch before the kill landed (a fast batch)
                killed_batch = msg[1]
        parent_end.close()
        killed.add((run, killed_batch))
        interrupted += (run, killed_batch) not in done

        with rstore.Store(path) as store:
            entries = h.check_stream(store)
            batches: dict[tuple[int, int], list[int]] = {}
            for _, fields in entries:
                if b"r" in fields:
                    key = (int(fields[b"r"]), int(fields[b"b"]))
                    batches.setdefault(key, []).append(int(fields[b"j"]))
                    assert len(fields[b"pad"]) == pad
            for key, js in batches.items():
                assert js == list(range(batch)), f"pipeline {key} is torn: {len(js)} entries"
            assert done <= set(batches), f"returned pipelines lost: {done - set(batches)}"
            # A kill after the commit but before execute() returned leaves a whole pipeline
            # that never reported: allowed only for the batches runs so far were killed in.
            assert set(batches) - done <= killed
            store.xadd(KEY, {"after": run})  # the store takes writes again
    assert interrupted >= 1, "no kill landed inside execute(); the test proves little"


@pytest.mark.slow
def test_reader_killed_mid_transaction_frees_its_slot_at_next_open(
    path: str, children: Children
) -> None:
    """A reader holding a snapshot never blocks writers; SIGKILLed inside its read
    transaction, it leaves its LMDB reader slot behind (which would keep the pages of its
    snapshot from being reused); the next open of the store clears it."""
    with rstore.Store(path) as store:
        store.xadd(KEY, {"w": 0, "seq": 0})
    ctx = children.ctx
    parent_end, child_end = ctx.Pipe()
    proc = children.start(h.hold_read_until_killed, path, child_end)
    assert recv(parent_end) == "inside"
    with rstore.Store(path) as store:
        assert proc.pid in _reader_pids(store)  # the slot exists while the child lives

        def write() -> None:
            for seq in range(1, 51):
                store.xadd(KEY, {"w": 0, "seq": seq})

        _run_threads([write])  # the open snapshot does not hold the writer up
    sigkill(proc)
    with rstore.Store(path) as store:  # opening runs LMDB's reader check
        assert proc.pid not in _reader_pids(store)
        assert store.xlen(KEY) == 51
        store.xadd(KEY, {"w": 0, "seq": 51})


@pytest.mark.slow
def test_a_writer_clears_a_dead_readers_slot_once_the_file_grows(
    path: str, children: Children
) -> None:
    """A reader SIGKILLed inside its read transaction pins its snapshot,
    so every commit appends fresh pages; a process that keeps the store open and writes
    clears the dead slot by itself (no reopen), and the file stops growing: it first grows to
    what the commits between two checkpoints need (the writer's own pin, docs/durability.md),
    then stays there."""
    with rstore.Store(path) as store:
        for seq in range(200):
            store.xadd(KEY, {"w": 0, "seq": seq})
        ctx = children.ctx
        parent_end, child_end = ctx.Pipe()
        proc = children.start(h.hold_read_until_killed, path, child_end)
        assert recv(parent_end) == "inside"
        sigkill(proc)
        assert proc.pid in _reader_pids(store)  # the dead reader's slot is still there
        for seq in range(200, 264):
            store.xadd(KEY, {"w": 0, "seq": seq})
        assert proc.pid not in _reader_pids(store)
        data = os.path.join(path, "data.mdb")
        written = 264
        for seq in range(written, written + 1500):  # up to the size the checkpoints keep
            store.xadd(KEY, {"w": 0, "seq": seq})
        written += 1500
        size = os.path.getsize(data)
        for seq in range(written, written + 1000):
            store.xadd(KEY, {"w": 0, "seq": seq})
        # pinned, 1000 single XADDs would append ~9 pages each (~36 MB); reusing, at most
        # what 256 commits between two checkpoints need (~2,300 pages)
        assert os.path.getsize(data) - size < 2500 * 4096
        assert store.xlen(KEY) == written + 1000


def _reader_pids(store: rstore.Store) -> set[int]:
    """Pids in LMDB's reader table (white box: read through the storage layer)."""
    env = store._live_env()
    table: str = env.lmdb_readers()
    return {int(line.split()[0]) for line in table.splitlines()[1:] if line.split()}


# --------------------------------------------------------------------------- (c) readers


@pytest.mark.slow
def test_readers_in_other_processes_see_consistent_snapshots(path: str, children: Children) -> None:
    """While a writer process commits pipelines, reader processes only ever see whole
    pipelines, a stream whose views agree, and a history that only grows."""
    batch, batches, readers = 10, 150, 2
    with rstore.Store(path) as store:
        pipe = store.pipeline()
        for j in range(batch):
            pipe.xadd(KEY, {"b": 0, "j": j})
        pipe.execute()
    ctx = children.ctx
    ready = ctx.Barrier(readers + 1)  # the writer starts once each reader took a snapshot
    stop = ctx.Event()
    results = ctx.Queue()
    for r in range(readers):
        children.start(h.snapshot_reader, path, r, batch, ready, stop, results)
    children.start(h.batch_writer, path, 1, batches, batch, ready, results)
    assert collect(results, 1, children) == {"writer": batches}
    stop.set()
    seen = collect(results, readers, children)
    children.join()
    final = batch * (batches + 1)
    for r, (snapshots, lengths) in seen.items():
        assert lengths[0] == batch and lengths[-1] == final, (r, lengths)
        assert snapshots >= 2
    with rstore.Store(path) as store:
        assert len(h.check_stream(store)) == final


# --------------------------------------------------------------------------- (d) map growth


@pytest.mark.slow
def test_map_grows_under_concurrent_writer_processes(path: str, children: Children) -> None:
    """Two processes write ~5 MB into a store opened with a 64 KiB map while a third reads:
    the map grows (and the others follow) without a MapFullError reaching anyone."""
    writers, count, pad = 2, 1200, 2000
    rstore.Store(path, map_size=TINY_MAP).close()
    ctx = children.ctx
    start = ctx.Barrier(writers + 1)  # everyone has opened the store before anyone writes
    stop = ctx.Event()
    results = ctx.Queue()
    children.start(h.tail_reader, path, TINY_MAP, start, stop, results)
    for w in range(writers):
        children.start(h.append_worker, path, w, count, pad, start, results, {"map_size": TINY_MAP})
    returned = collect(results, writers, children)
    stop.set()
    assert collect(results, 1, children)["reader"] > 0
    children.join()
    with rstore.Store(path, map_size=TINY_MAP) as store:
        entries = h.check_stream(store)
        assert h.by_writer(entries) == {w: list(range(count)) for w in range(writers)}
        assert {eid for ids in returned.values() for eid in ids} == {e for e, _ in entries}
        assert all(fields[b"pad"] == b"x" * pad for _, fields in entries)
    assert os.path.getsize(os.path.join(path, "data.mdb")) > 50 * TINY_MAP


def test_open_while_another_process_grows_the_map(
    path: str, children: Children, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a store races with another process growing it: LMDB maps the file at its
    size when opened, and if a writer elsewhere grows it before the opener's first
    transaction, that transaction reports MDB_MAP_RESIZED.  The open must adopt the new size,
    not fail.  The race is made certain by letting the writer grow the store from inside
    ``lmdb.open``, just after the environment was mapped."""
    with rstore.Store(path, map_size=TINY_MAP) as store:
        store.xadd(KEY, {"w": 0, "seq": 0})
    ctx = children.ctx
    parent_end, child_end = ctx.Pipe()
    children.start(h.grow_on_request, path, child_end, 400, 2000)
    assert recv(parent_end) == "ready"
    real_open = lmdb.open
    hooked: list[str] = []

    def open_then_let_the_store_grow(*args: Any, **kwargs: Any) -> Any:
        env = real_open(*args, **kwargs)
        parent_end.send("go")
        assert recv(parent_end) == "done"
        hooked.append("grown")
        return env

    monkeypatch.setattr(lmdb, "open", open_then_let_the_store_grow)
    with rstore.Store(path, map_size=TINY_MAP) as store:
        assert hooked == ["grown"], "the store no longer opens through lmdb.open"
        assert store.xlen(KEY) == 401
        store.xadd(KEY, {"w": 0, "seq": 1})


# --------------------------------------------------------------------------- (e) threads


def _run_threads(targets: list[Any], timeout: float = WAIT_S) -> None:
    """Start threads on ``targets``; join them all; re-raise the first failure."""
    errors: list[BaseException] = []

    def guard(fn: Any) -> Any:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guard(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    if errors:
        raise errors[0]


def _moved_on(state: dict[str, int], seen: int) -> bool:
    return state["writes"] != seen or not state["writers_left"]


@pytest.mark.slow
def test_threads_share_one_store(path: str) -> None:
    """Writer and reader threads share ONE Store opened with a tiny map: every XADD lands in
    per-writer order, readers see consistent snapshots, the map grows under them.

    Readers take a snapshot whenever a write happened since their last one (they do not spin:
    a CPU-bound thread holding the GIL stalls every writer waiting to take it back after an
    LMDB call, a convoy that turns a second's work into tens of seconds).  ``sync=False``
    only keeps the run short; thread safety does not depend on it.
    """
    writers, readers, count, pad = 6, 2, 150, 300
    store = rstore.Store(path, map_size=TINY_MAP, sync=False)
    start = threading.Barrier(writers + readers)
    progress = threading.Condition()
    state = {"writes": 0, "writers_left": writers}
    returned: dict[int, list[bytes]] = {}
    snapshots: list[int] = []

    def writer(w: int) -> None:
        start.wait(WAIT_S)
        ids = returned.setdefault(w, [])
        for seq in range(count):
            ids.append(store.xadd(KEY, {"w": w, "seq": seq, "pad": "p" * pad}))
            with progress:
                state["writes"] += 1
                progress.notify_all()
        with progress:
            state["writers_left"] -= 1
            progress.notify_all()

    def reader() -> None:
        start.wait(WAIT_S)
        previous: list[h.Entry] = []
        seen = 0
        while True:
            with progress:
                assert progress.wait_for(partial(_moved_on, state, seen), WAIT_S)
                seen, left = state["writes"], state["writers_left"]
            entries = h.check_stream(store, paged=False)
            _seqs_are_prefixes(entries)
            assert entries[: len(previous)] == previous, "a later snapshot rewrote history"
            assert len(entries) >= seen  # every XADD counted so far has returned
            previous = entries
            snapshots.append(len(entries))
            if not left:
                return

    _run_threads([partial(writer, w) for w in range(writers)] + [reader] * readers)
    entries = h.check_stream(store)
    assert h.by_writer(entries) == {w: list(range(count)) for w in range(writers)}
    all_returned = [eid for ids in returned.values() for eid in ids]
    assert sorted(all_returned, key=h.parse_id) == [e for e, _ in entries]
    assert len(snapshots) >= 2 * readers and max(snapshots) == writers * count
    assert store._live_env().map_size > TINY_MAP
    store.close()


def test_two_stores_on_one_path_in_one_process(path: str) -> None:
    """Two Store objects on one path share the process's LMDB handle: each sees the other's
    writes at once, threads may use both, and closing one leaves the other working."""
    a = rstore.Store(path)
    b = rstore.Store(os.path.join(path, ".", ""))  # another spelling of the same path
    first = a.xadd(KEY, {"w": 0, "seq": 0})
    assert b.xrange(KEY) == [(first, {b"w": b"0", b"seq": b"0"})]
    count = 100

    def write(store: rstore.Store, w: int) -> None:
        for seq in range(count):
            store.xadd(KEY, {"w": w, "seq": seq})

    _run_threads([lambda: write(a, 1), lambda: write(b, 2), lambda: write(a, 3)])
    assert h.check_stream(a) == h.check_stream(b)
    assert h.by_writer(h.check_stream(b)) == {
        0: [0],
        1: list(range(count)),
        2: [*range(count)],
        3: list(range(count)),
    }
    a.close()
    assert b.xlen(KEY) == 1 + 3 * count
    b.xadd(KEY, {"w": 0, "seq": 1})
    b.close()
    with rstore.Store(path) as again:  # the last close really closed: reopening works
        assert again.xlen(KEY) == 2 + 3 * count


# --------------------------------------------------------------------------- (f) fork


@needs_fork
def test_forked_child_uses_the_inherited_store(path: str, children: Children) -> None:
    """A Store opened before a fork works in the child (which reopens LMDB behind the scenes)
    and keeps working in the parent, during and after the child's writes."""
    store = rstore.Store(path)
    mine = [store.xadd(KEY, {"w": 0, "seq": seq}) for seq in range(5)]
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    children.start(h.use_inherited_store, store, 20, results, ctx=ctx)
    mine.append(store.xadd(KEY, {"w": 0, "seq": 5}))  # the parent writes on meanwhile
    before, theirs = collect(results, 1, children)["child"]
    children.join()
    assert [eid for eid, _ in before][:5] == mine[:5]  # the child saw the parent's data
    mine.append(store.xadd(KEY, {"w": 0, "seq": 6}))
    entries = h.check_stream(store)
    assert sorted(mine + theirs, key=h.parse_id) == [eid for eid, _ in entries]
    assert h.by_writer(entries)[0] == list(range(7))


@needs_fork
@pytest.mark.parametrize("inherited_used_first", [False, True])
def test_forked_child_can_open_the_same_path(
    path: str, children: Children, inherited_used_first: bool
) -> None:
    """The usual worker pattern: the parent holds the store open, forks, and the child opens
    ``Store(path)`` itself (whether or not it touched the inherited Store first)."""
    store = rstore.Store(path)
    store.xadd(KEY, {"w": 0, "seq": 0})
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    inherited = store if inherited_used_first else None
    children.start(h.open_by_path, path, inherited, results, ctx=ctx)
    length, new_id = collect(results, 1, children)["child"]
    children.join()
    assert length == 1
    assert store.xrange(KEY)[-1][0] == new_id
    store.close()


@needs_fork
@pytest.mark.slow
def test_forked_child_can_grow_the_map(path: str, children: Children) -> None:
    """A forked child writing through the inherited Store past the map's end grows the map
    (the resize gate must not be left unbalanced by the reopen after the fork)."""
    store = rstore.Store(path, map_size=TINY_MAP)
    store.xadd(KEY, {"w": 0, "seq": 0})
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    children.start(h.grow_inherited_store, store, 600, 2000, results, ctx=ctx)
    assert collect(results, 1, children, timeout=15) == {"child": 601}
    children.join()
    assert store.xlen(KEY) == 601
    store.xadd(KEY, {"w": 0, "seq": 1})
    assert len(h.check_stream(store)) == 602
    store.close()
