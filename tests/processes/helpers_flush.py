"""Child-process bodies of the group-commit process tests (module level, for ``spawn``)."""

from __future__ import annotations

import os
import signal
import threading
from multiprocessing.connection import Connection

import rstore
from rstore.storage import durable

from .children import WAIT_S, Reports, Waitable, report

KEY = "events"


def durable_writer(path: str, start: Waitable, who: int, count: int, results: Reports) -> None:
    """``count`` single XADDs with ``sync=True``; reports ``(ids, flushes, skipped)``: the
    after-commit flushes this process made and the ones it skipped (covered by another)."""
    with rstore.Store(path, sync=True) as store:
        start.wait(WAIT_S)

        def body() -> tuple[list[bytes], int, int]:
            f0, s0 = durable.counters.flushes, durable.counters.skipped
            ids = [store.xadd(KEY, {"w": who, "seq": n}) for n in range(count)]
            return ids, durable.counters.flushes - f0, durable.counters.skipped - s0

        report(results, who, body)


def killed_between_commit_and_flush(path: str, conn: Connection) -> None:
    """One durable XADD, then one whose commit succeeds and whose meta-page flush kills the
    process (SIGKILL at the ``fdatasync``): the commit is in LMDB, not yet known durable."""
    store = rstore.Store(path, sync=True)
    conn.send_bytes(store.xadd(KEY, {"w": 0, "seq": 0}))

    def die(fd: int) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    os.fdatasync = die  # this child only
    store.xadd(KEY, {"w": 0, "seq": 1})
    conn.send_bytes(b"not reached")


def threads_until_killed(path: str, conn: Connection, threads: int, pipeline: int) -> None:
    """``threads`` threads on one Store write until the parent SIGKILLs the process: single
    XADDs, or pipelines of ``pipeline`` XADDs (field ``b`` numbers the pipeline, ``j`` the
    entry in it).  After each write returned, its ID(s) are sent (one message per write)."""
    store = rstore.Store(path, sync=True)
    send_lock = threading.Lock()

    def writer(t: int) -> None:
        seq = 0
        while True:
            if pipeline:
                pipe = store.pipeline()
                for j in range(pipeline):
                    pipe.xadd(KEY, {"w": t, "seq": seq, "b": seq, "j": j})
                ids = pipe.execute()
            else:
                ids = [store.xadd(KEY, {"w": t, "seq": seq})]
            with send_lock:
                conn.send_bytes(b" ".join(ids))
            seq += 1

    for t in range(threads):
        threading.Thread(target=writer, args=(t,), daemon=True).start()
    threading.Event().wait()
