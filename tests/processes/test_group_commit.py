"""Durable writers in several processes: every commit is made durable by a flush (its own or
one that covered it), and nothing acknowledged is lost when a process whose threads share
commits is killed.  (A writer killed at each step of its commit, its flush included:
test_wal_crashes.py.)"""

from __future__ import annotations

import pytest

import rstore

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
