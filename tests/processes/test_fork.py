"""fork() after open while the parent writes: the children use the Store they inherited.

docs/durability.md ("fork()") promises a transparent reopen in a child.  With the write-ahead
log the parent has a checkpointer thread and pins a snapshot, and a writer thread may hold a
lock, an LMDB write transaction or a flush at the moment of the fork.  Before the child stopped
touching what it inherited (rstore/storage/forks.py), a child reopening closed the inherited
LMDB handle: py-lmdb then aborted the inherited read transactions, which cleared the *parent's*
reader slots, and waited for the parent thread's write transaction, or the flusher's lock that
thread held, forever (the first trial of the campaign below hung).
"""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

import rstore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

CHILDREN = 4
CHILD_WRITES = 30
TRIALS = 100
CHILD_WAIT_S = 60.0


def _fork(body: Callable[[], None]) -> int:
    """A child running ``body``; its exit status is 0 if it returned, 1 if it raised."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # its stacks, if it hangs
        try:
            body()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def _wait(pid: int) -> int:
    """The child's exit status; a child still running after CHILD_WAIT_S is killed (a hang)."""
    deadline = time.monotonic() + CHILD_WAIT_S
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGUSR1)  # every thread's stack to stderr, in the test's report
    time.sleep(1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -999  # hung


def _child_writes(store: rstore.Store, stream: str) -> None:
    for i in range(CHILD_WRITES):
        store.xadd(stream, {"i": str(i)})
    if store.xlen(stream) != CHILD_WRITES:
        raise AssertionError(f"{stream}: {store.xlen(stream)} entries")


def _trial(path: str, sync: bool) -> str | None:
    """One trial: what went wrong, or ``None``."""
    store = rstore.Store(path, sync=sync)
    for i in range(20):
        store.xadd("parent", {"i": str(i)})
    stop = threading.Event()
    written = [0]

    def write_on() -> None:
        while not stop.is_set():
            store.xadd("parent", {"bg": "x"})
            written[0] += 1

    writer = threading.Thread(target=write_on)
    writer.start()
    pids = []
    for c in range(CHILDREN):
        time.sleep(0.001 * c)
        pids.append(_fork(lambda c=c: _child_writes(store, f"child{c}")))
    statuses = [_wait(pid) for pid in pids]
    stop.set()
    writer.join()
    lengths = [store.xlen(f"child{c}") for c in range(CHILDREN)]
    parent = store.xlen("parent")
    store.close()
    problems = rstore.check_store(path)
    if any(statuses) or lengths != [CHILD_WRITES] * CHILDREN or problems:
        return f"exits {statuses}, lengths {lengths}, {problems}"
    if parent != 20 + written[0]:
        return f"the parent has {parent} entries of {20 + written[0]}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("sync", [True, False])
def test_children_forked_beside_a_writing_parent_all_succeed(tmp_path: Path, sync: bool) -> None:
    """The issue's campaign: 100 trials, each forking 4 children at staggered moments while a
    thread of the parent writes (its checkpointer thread running); every child writes through
    the inherited Store, the parent keeps writing, and nothing fails, hangs or is lost."""
    failures = []
    for trial in range(TRIALS // 2):  # two parametrized runs: 100 trials in all
        outcome = _trial(str(tmp_path / f"s{trial}"), sync)
        if outcome is not None:
            failures.append(f"trial {trial}: {outcome}")
    assert failures == []


def _reader_slots(store: rstore.Store, pid: int) -> list[str]:
    """The transaction ids of ``pid``'s slots in LMDB's reader table (``-`` for a free one)."""
    table = store._env.lmdb_readers()
    return re.findall(rf"^\s*{pid}\s+\S+\s+(\S+)\s*$", table, re.MULTILINE)


def test_a_child_leaves_the_parents_reader_slots_alone(tmp_path: Path) -> None:
    """The parent's snapshots -- here the log's checkpoint pin, which keeps the checkpoint's
    pages from reuse -- still hold their slots after a child reopened the store it inherited,
    wrote through it and closed it."""
    store = rstore.Store(str(tmp_path / "s"))
    store.xadd("s", {"a": "1"})  # a write: this process now pins a checkpoint
    log = store._env._wal
    assert log is not None

    def held() -> list[str]:
        """What this process holds open (its pin and its candidate, if any)."""
        return [str(txnid) for txnid in log.checkpoints.held()]

    assert held() and set(held()) <= set(_reader_slots(store, os.getpid()))

    def child() -> None:
        store.xadd("s", {"from": "child"})
        store.close()

    assert _wait(_fork(child)) == 0
    assert set(held()) <= set(_reader_slots(store, os.getpid()))
    assert store.xlen("s") == 2
    store.close()
