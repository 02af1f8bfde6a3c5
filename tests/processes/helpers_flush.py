"""Child-process bodies of the group-commit process tests (module level, for ``spawn``)."""

from __future__ import annotations

import os
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any

import rstore
from rstore.storage.engine.log_flush import LogFlusher, counters

from .children import WAIT_S, Reports, Waitable, report

KEY = "events"


def durable_writer(path: str, start: Waitable, who: int, count: int, results: Reports) -> None:
    """``count`` single XADDs with ``sync=True``; reports ``(ids, flushes, skipped)``: the
    after-commit flushes this process made and the ones it skipped (covered by another)."""
    with rstore.Store(path, sync=True) as store:
        start.wait(WAIT_S)

        def body() -> tuple[list[bytes], int, int]:
            f0, s0 = counters.flushes, counters.skipped
            ids = [store.xadd(KEY, {"w": who, "seq": n}) for n in range(count)]
            return ids, counters.flushes - f0, counters.skipped - s0

        report(results, who, body)


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


# =========================================================================== early wake-ups

GROUP = "g"


def _durability(store: rstore.Store) -> tuple[int, int]:
    """``(last record of the log, highest one known on disk)`` of the store, seen from here."""
    return store._live_env().durability()


def durable_group_reader(path: str, results: Reports, die_once_woken: bool, ack: bool) -> None:
    """A ``sync=True`` reader blocked in XREADGROUP (group ``g``, consumer ``c1``, COUNT 1),
    with the safety re-check out of reach, so only a wake-up serves it.  Reports ``(reply,
    durability when it returned, durability when its XACK returned)`` (``_durability``).

    With ``die_once_woken``, the first after-commit flush step after a wake-up -- that of the
    reader's own delivery commit -- SIGKILLs the process: killed between its commit and its
    reply.  (The step, not any ``fdatasync``: a store written through the log also flushes
    from its checkpointer thread, and before a process's first commit.)"""
    from rstore.commands import executor
    from rstore.storage.waiting import waiters

    executor.SAFETY_RECHECK_S = 60.0

    def body() -> tuple[Any, tuple[int, int], tuple[int, int] | None]:
        store = rstore.Store(path, sync=True)
        if die_once_woken:
            woken: list[bool] = []
            real_wait = waiters.Waiter.wait

            def wait(self: waiters.Waiter, timeout_s: float) -> bool:
                got = real_wait(self, timeout_s)
                woken.append(got)
                return got

            real_make_durable = LogFlusher.make_durable

            def die(self: LogFlusher, lsn: int, grace_s: float = 0.0) -> None:
                if any(woken):
                    os.kill(os.getpid(), signal.SIGKILL)
                real_make_durable(self, lsn, grace_s)

            waiters.Waiter.wait = wait  # type: ignore[method-assign]
            LogFlusher.make_durable = die  # type: ignore[method-assign]  # this child only
        reply = store.xreadgroup(GROUP, "c1", {KEY: ">"}, count=1, block=60_000)
        when_read = _durability(store)
        when_acked = None
        if ack:
            [[_, [(entry_id, _)]]] = reply
            assert store.xack(KEY, GROUP, entry_id) == 1
            when_acked = _durability(store)
        return _decoded(reply), when_read, when_acked

    report(results, "reader", body)


def _decoded(reply: Any) -> Any:
    if isinstance(reply, bytes):
        return reply.decode()
    if isinstance(reply, list | tuple):
        return [_decoded(v) for v in reply]
    if isinstance(reply, dict):
        return {_decoded(k): _decoded(v) for k, v in reply.items()}
    return reply


def xadd_killed_at_its_flush(path: str, conn: Connection) -> None:
    """A ``sync=True`` XADD killed (SIGKILL) where its commit is made durable: it committed
    and woke the readers that may be woken before that, then died (never returned)."""
    store = rstore.Store(path, sync=True)

    def die(self: LogFlusher, lsn: int, grace_s: float = 0.0) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    LogFlusher.make_durable = die  # type: ignore[method-assign]  # this child only
    store.xadd(KEY, {"from": "killed writer"})
    conn.send_bytes(b"not reached")
