"""Child-process bodies and shared checks for the multi-process and durability tests.

Everything a child runs lives here, at module level, so that the ``spawn`` start method (which
pickles the target by name) can import it.  Children report through a ``multiprocessing``
queue (:func:`.children.report`) or pipe *after* the store call returned, so the parent knows
exactly which writes a killed child saw acknowledged.

Entries written by these helpers carry their origin in their fields:

* ``w`` -- the writer's number, ``seq`` -- its running count (per-writer order);
* ``b`` -- a pipeline's batch number, ``j`` -- the entry's place in that batch;
* ``pad`` -- filler that makes entries big enough to fill pages and grow the map.
"""

from __future__ import annotations

import itertools
import os
import time
from multiprocessing.connection import Connection
from typing import Any

import rstore

from .children import WAIT_S, Children, Event, Reports, Waitable, report, sigkill

ID = tuple[int, int]
Entry = tuple[bytes, dict[bytes, bytes]]

KEY = "events"


def parse_id(raw: bytes) -> ID:
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


def _open(target: str | rstore.Store, **options: Any) -> rstore.Store:
    """A Store: the one given (inherited across a fork), or a new one on the path."""
    return target if isinstance(target, rstore.Store) else rstore.Store(target, **options)


# --------------------------------------------------------------------------- shared checks


def check_stream(store: rstore.Store, key: str = KEY, *, paged: bool = True) -> list[Entry]:
    """Every entry of ``key``, after checking that all views of the stream agree.

    XRANGE (whole and paged), XREVRANGE, XLEN and XINFO STREAM are read in one read-only
    pipeline, which is one snapshot; each must describe the same entries.  Assumes nothing was
    ever deleted from the stream (so ``entries-added`` equals the length).
    """
    pipe = store.pipeline()
    pipe.xlen(key).xrange(key).xrevrange(key).xinfo_stream(key)
    replies: list[Any] = pipe.execute()
    length, reverse, info = replies[0], replies[2], replies[3]
    entries: list[Entry] = replies[1]
    ids = [parse_id(eid) for eid, _ in entries]
    assert all(a < b for a, b in itertools.pairwise(ids)), "XRANGE IDs are not strictly increasing"
    assert length == len(entries), f"XLEN {length} but XRANGE returned {len(entries)}"
    assert reverse == entries[::-1], "XREVRANGE is not XRANGE reversed"
    assert info["length"] == length, f"XINFO length {info['length']} != XLEN {length}"
    assert info["entries-added"] == length, (
        f"XINFO entries-added {info['entries-added']} != {length} entries (nothing was deleted)"
    )
    if entries:
        assert info["first-entry"] == entries[0], "XINFO first-entry is not XRANGE's first"
        assert info["last-entry"] == entries[-1], "XINFO last-entry is not XRANGE's last"
        assert info["last-generated-id"] == entries[-1][0], "last-generated-id is not the last ID"
        assert info["recorded-first-entry-id"] == entries[0][0]
    if paged:
        _check_paged(store, key, entries)
    return entries


def _check_paged(store: rstore.Store, key: str, entries: list[Entry]) -> None:
    """Paging with COUNT seeks into the middle of nodes: it must see the same entries (and
    perhaps more, when a writer is still appending)."""
    pages: list[Entry] = []
    start = b"-"
    while True:
        page = store.xrange(key, start, b"+", count=37)
        pages.extend(page)
        if len(page) < 37:
            break
        ms, seq = parse_id(page[-1][0])
        start = f"{ms}-{seq + 1}".encode()
    assert pages[: len(entries)] == entries, "paged XRANGE differs from XRANGE"


def by_writer(entries: list[Entry]) -> dict[int, list[int]]:
    """``{writer: [seq, ...]}`` in stream order."""
    out: dict[int, list[int]] = {}
    for _, fields in entries:
        out.setdefault(int(fields[b"w"]), []).append(int(fields[b"seq"]))
    return out


# --------------------------------------------------------------------------- writers


def append_worker(
    target: str | rstore.Store,
    writer: int,
    count: int,
    pad: int,
    start: Waitable,
    results: Reports,
    store_options: dict[str, Any],
) -> None:
    """XADD ``count`` entries with auto IDs; reports the list of returned IDs."""

    def body() -> list[bytes]:
        store = _open(target, **store_options)
        start.wait(WAIT_S)
        ids = []
        filler = "x" * pad
        for seq in range(count):
            fields = {"w": writer, "seq": seq, "pad": filler} if pad else {"w": writer, "seq": seq}
            ids.append(store.xadd(KEY, fields))
        return ids

    report(results, writer, body)


def batch_writer(
    path: str, first_batch: int, batches: int, batch: int, start: Waitable, results: Reports
) -> None:
    """Pipelines of ``batch`` XADDs each (batch numbers from ``first_batch``)."""

    def body() -> int:
        store = rstore.Store(path)
        start.wait(WAIT_S)
        for b in range(first_batch, first_batch + batches):
            pipe = store.pipeline()
            for j in range(batch):
                pipe.xadd(KEY, {"b": b, "j": j})
            pipe.execute()
        return batches

    report(results, "writer", body)


def xadd_until_killed(path: str, conn: Connection, sync: bool, pad: int) -> None:
    """XADD forever; after each XADD returned, send its ID.  The parent SIGKILLs us."""
    store = rstore.Store(path, sync=sync)
    filler = "y" * pad
    seq = 0
    while True:
        conn.send_bytes(store.xadd(KEY, {"w": os.getpid(), "seq": seq, "pad": filler}))
        seq += 1


def pipelines_until_killed(
    path: str, conn: Connection, run: int, sync: bool, batch: int, pad: int
) -> None:
    """Pipelines of ``batch`` XADDs forever, announcing each before and after it runs.

    Entries carry ``r`` (this run), ``b`` (the batch) and ``j`` (the place in the batch).
    Sends ``("start", b)`` before ``execute()`` and ``("done", b, first_id, last_id,
    seconds)`` after it returned.  The parent SIGKILLs us, preferably in between.
    """
    store = rstore.Store(path, sync=sync)
    filler = "z" * pad
    b = 0
    while True:
        pipe = store.pipeline()
        for j in range(batch):
            pipe.xadd(KEY, {"r": run, "b": b, "j": j, "pad": filler})
        conn.send(("start", b))
        t0 = time.perf_counter()
        ids = pipe.execute()
        conn.send(("done", b, ids[0], ids[-1], time.perf_counter() - t0))
        b += 1


# --------------------------------------------------------------------------- readers


def snapshot_reader(
    path: str,
    reader: int,
    batch: int,
    ready: Waitable,
    stop: Event,
    results: Reports,
) -> None:
    """Read whole snapshots until ``stop``; check each is consistent and follows the last.

    Reports ``(snapshots taken, sorted distinct lengths seen)``.  The writer commits whole
    pipelines of ``batch`` entries, so every snapshot must hold whole batches.
    """

    def snapshot(store: rstore.Store, previous: list[Entry]) -> list[Entry]:
        entries = check_stream(store)
        assert len(entries) % batch == 0, f"a snapshot holds {len(entries)} entries: torn batch"
        counts: dict[int, list[int]] = {}
        for _, fields in entries:
            counts.setdefault(int(fields[b"b"]), []).append(int(fields[b"j"]))
        for b, js in counts.items():
            assert js == list(range(batch)), f"batch {b} is incomplete in a snapshot: {js}"
        assert entries[: len(previous)] == previous, "a later snapshot rewrote history"
        return entries

    def body() -> tuple[int, list[int]]:
        store = rstore.Store(path)
        entries = snapshot(store, [])
        lengths = {len(entries)}
        taken = 1
        ready.wait(WAIT_S)
        while not stop.is_set():
            entries = snapshot(store, entries)
            lengths.add(len(entries))
            taken += 1
        entries = snapshot(store, entries)  # the writer has finished: the final state
        lengths.add(len(entries))
        return taken + 1, sorted(lengths)

    report(results, reader, body)


def tail_reader(path: str, map_size: int, start: Waitable, stop: Event, results: Reports) -> None:
    """Read the tail of the stream until ``stop`` (on a small map: adopts other processes'
    map growth); reports the number of reads."""

    def body() -> int:
        store = rstore.Store(path, map_size=map_size)
        start.wait(WAIT_S)
        reads = 0
        last = 0
        while not stop.is_set():
            length, tail = store.pipeline().xlen(KEY).xrevrange(KEY, count=3).execute()
            assert length >= last, "XLEN went backwards"
            assert len(tail) == min(3, length), "XREVRANGE disagrees with XLEN in one snapshot"
            last = length
            reads += 1
        return reads

    report(results, "reader", body)


def grow_on_request(path: str, conn: Connection, count: int, pad: int) -> None:
    """Open the store (tiny map), say "ready"; on "go" write ``count`` big entries, which
    grows the data file, then say "done"."""
    store = rstore.Store(path, map_size=64 * 1024)
    conn.send("ready")
    assert conn.recv() == "go"
    for seq in range(count):
        store.xadd(KEY, {"w": 1, "seq": seq, "pad": "q" * pad})
    store.close()
    conn.send("done")


def hold_read_until_killed(path: str, conn: Connection) -> None:
    """Open a read transaction, say so, and keep it open until the parent SIGKILLs us."""
    store = rstore.Store(path)

    def inside(_txn: Any) -> None:
        conn.send("inside")
        conn.recv()  # never answered: we die here, holding a reader slot

    store._live_env().read(inside)


# --------------------------------------------------------------------------- fork children


def use_inherited_store(store: rstore.Store, count: int, results: Reports) -> None:
    """In a forked child: read what the parent wrote, then write ``count`` entries."""

    def body() -> tuple[list[Entry], list[bytes]]:
        before = store.xrange(KEY)
        ids = [store.xadd(KEY, {"w": os.getpid(), "seq": seq}) for seq in range(count)]
        return before, ids

    report(results, "child", body)


def open_by_path(path: str, use_inherited_first: rstore.Store | None, results: Reports) -> None:
    """In a forked child: open the store by path (after using the inherited one, if given)."""

    def body() -> tuple[int, bytes]:
        if use_inherited_first is not None:
            use_inherited_first.xlen(KEY)
        store = rstore.Store(path)
        length = store.xlen(KEY)
        new_id = store.xadd(KEY, {"w": os.getpid(), "seq": 0})
        store.close()
        return length, new_id

    report(results, "child", body)


def grow_inherited_store(store: rstore.Store, count: int, pad: int, results: Reports) -> None:
    """In a forked child: write enough through the inherited store to grow its map."""

    def body() -> int:
        filler = "g" * pad
        for seq in range(count):
            store.xadd(KEY, {"w": os.getpid(), "seq": seq, "pad": filler})
        return int(store.xlen(KEY))

    report(results, "child", body)


# --------------------------------------------------------------------------- parent side


def kill_xadd_writer(
    children: Children, path: str, *, sync: bool, kill_after: int, pad: int = 200
) -> list[bytes]:
    """Run :func:`xadd_until_killed`, SIGKILL it after ``kill_after`` acknowledged XADDs.

    Returns every ID the child saw returned (and managed to send) before it died.
    """
    parent_end, child_end = children.ctx.Pipe(duplex=False)
    proc = children.start(xadd_until_killed, path, child_end, sync, pad)
    child_end.close()
    acknowledged: list[bytes] = []
    while len(acknowledged) < kill_after:
        assert parent_end.poll(WAIT_S), "the writer sent nothing"
        acknowledged.append(parent_end.recv_bytes())
    sigkill(proc)
    while True:
        try:
            acknowledged.append(parent_end.recv_bytes())
        except EOFError:
            break
    parent_end.close()
    return acknowledged


def tail_reader_once(path: str, results: Reports) -> None:
    """Open the store in a fresh process; report ``[XLEN, last ID]``."""

    def body() -> list[object]:
        with rstore.Store(path) as store:
            return [store.xlen(KEY), store.xrevrange(KEY, count=1)[0][0]]

    report(results, "reader", body)
