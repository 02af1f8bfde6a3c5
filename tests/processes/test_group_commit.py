"""Durable writers in several processes: every commit is made durable by a flush (its own or
one that covered it), nothing acknowledged is lost, and a writer killed between its commit
and its flush leaves a store whose next opener flushes that commit."""

from __future__ import annotations

import signal

import pytest
from store_formats import legacy_store

import rstore
from rstore.storage import durable

from . import helpers_flush as hf
from . import helpers_mp as h
from .children import WAIT_S, Children, collect, sigkill


def test_durable_writer_processes_make_every_commit_durable(path: str, children: Children) -> None:
    """4 processes XADD with sync=True at once: each commit was flushed by its writer or
    covered by another flush (the process's counters add up to its commits), and every entry
    is stored once, in each writer's order."""
    writers, count = 4, 60
    rstore.Store(path, sync=True).close()
    start = children.ctx.Barrier(writers)
    results = children.ctx.Queue()
    for w in range(writers):
        children.start(hf.durable_writer, path, start, w, count, results)
    reports = collect(results, writers, children)
    children.join()
    with rstore.Store(path) as store:
        entries = store.xrange(hf.KEY)
    assert len(entries) == writers * count
    for w, (ids, flushes, skipped) in reports.items():
        assert flushes + skipped == count, (w, flushes, skipped)
        mine = [eid for eid, f in entries if f[b"w"] == str(w).encode()]
        assert mine == ids


def test_a_writer_killed_between_commit_and_flush(path: str, children: Children) -> None:
    """The killed writer's last commit is in the store (it never returned, so keeping it is
    allowed, as for a kill just after a commit); the next process to open the store flushes
    it, since no flush is known to cover it.  (A format-2 store: with the log there is no
    second flush; the log's crash cases are in test_wal_crashes.py.)"""
    legacy_store(path)
    parent_end, child_end = children.ctx.Pipe(duplex=False)
    proc = children.start(hf.killed_between_commit_and_flush, path, child_end)
    child_end.close()
    assert parent_end.poll(WAIT_S)
    first = parent_end.recv_bytes()
    proc.join(WAIT_S)
    assert proc.exitcode == -signal.SIGKILL
    with pytest.raises(EOFError):  # the second XADD never returned
        parent_end.recv_bytes()
    f0 = durable.counters.flushes
    with rstore.Store(path, sync=True) as store:
        assert durable.counters.flushes - f0 == 1  # the opener made the commit durable
        entries = store.xrange(hf.KEY)
        assert entries[0][0] == first
        assert [f[b"seq"] for _, f in entries] == [b"0", b"1"]
        store.xadd(hf.KEY, {"w": 1, "seq": 2})
        assert store.xlen(hf.KEY) == 3


@pytest.mark.parametrize("pipeline", [0, 20])
def test_sigkill_during_batched_commits_of_many_threads(
    path: str, children: Children, pipeline: int
) -> None:
    """A process whose 8 threads share commits is SIGKILLed while writing: every write that
    returned is in the store, every pipeline whole or absent, and the store takes writes."""
    rstore.Store(path).close()
    parent_end, child_end = children.ctx.Pipe(duplex=False)
    proc = children.start(hf.threads_until_killed, path, child_end, 8, pipeline)
    child_end.close()
    acknowledged: list[bytes] = []
    while len(acknowledged) < 150:
        assert parent_end.poll(WAIT_S), "the writers sent nothing"
        acknowledged.extend(parent_end.recv_bytes().split())
    sigkill(proc)
    while True:
        try:
            acknowledged.extend(parent_end.recv_bytes().split())
        except EOFError:
            break
    parent_end.close()
    with rstore.Store(path) as store:
        entries = h.check_stream(store, hf.KEY)
        ids = {eid for eid, _ in entries}
        assert set(acknowledged) <= ids
        if pipeline:
            batches: dict[tuple[bytes, bytes], int] = {}
            for _, f in entries:
                key = (f[b"w"], f[b"b"])
                batches[key] = batches.get(key, 0) + 1
            assert set(batches.values()) == {pipeline}  # no pipeline is torn
        store.xadd(hf.KEY, {"after": "kill"})
        assert store.xlen(hf.KEY) == len(entries) + 1
