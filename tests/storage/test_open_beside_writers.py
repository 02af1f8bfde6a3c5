"""Opening a store walks its trees (``opening.verify_structure``) from a snapshot's meta page;
writers of other processes committing tens of thousands of times a second overwrite that meta
page within a fraction of a millisecond.  The walk must still succeed: before it mapped the
file ahead of taking its snapshot and retried stale snapshots for a while, about one walk in
twenty failed beside two such writers ("the store changed too fast to be checked"), which a
forked child reopening its store beside a writing parent hit too (tests/processes/test_fork.py).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import time
from pathlib import Path

import lmdb

from rstore import StorageError
from rstore.storage import opening

WRITERS = 2
WALKS = 300


def _commit_until(path: str, stop: multiprocessing.synchronize.Event) -> None:
    env = lmdb.open(path, map_size=1 << 30, sync=False, metasync=False)
    i = 0
    while not stop.is_set():
        with env.begin(write=True) as txn:
            txn.put(b"k%d" % (i % 5000), b"v" * 100)
        i += 1
    env.close()


def test_the_trees_are_walked_beside_writers_committing_as_fast_as_they_can(
    tmp_path: Path,
) -> None:
    path = str(tmp_path)
    env = lmdb.open(path, map_size=1 << 30)
    with env.begin(write=True) as txn:
        for i in range(20_000):
            txn.put(b"k%d" % i, b"v" * 100)
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    writers = [spawn.Process(target=_commit_until, args=(path, stop)) for _ in range(WRITERS)]
    for writer in writers:
        writer.start()
    try:
        start = env.info()["last_txnid"]
        deadline = time.monotonic() + 60
        while env.info()["last_txnid"] < start + 1000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert env.info()["last_txnid"] >= start + 1000, "the writers did not start"
        failures = []
        for _ in range(WALKS):
            try:
                report = opening.verify_structure(env, path, pinned=True)
                assert report.problems == []
            except StorageError as exc:
                failures.append(str(exc))
        committed = env.info()["last_txnid"] - start
    finally:
        stop.set()
        for writer in writers:
            writer.join(timeout=30)
        env.close()
    assert failures == []
    assert committed > 10 * WALKS  # the writers kept committing throughout
    assert [writer.exitcode for writer in writers] == [0] * WRITERS
