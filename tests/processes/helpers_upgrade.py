"""What the upgrade's process tests (test_upgrade_crashes.py) put in a store and compare, and
the bodies of the children that open it (module level, so that ``spawn`` can import them)."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

import lmdb

import rstore

from .children import WAIT_S, Reports, Waitable, report

#: A store's whole content as its users see it: ``{"config": ..., key: XINFO STREAM key FULL
#: COUNT 0}`` -- every entry, group, consumer and pending entry (with its delivery time and
#: count), and each stream's and group's counters.
Contents = dict[Any, Any]


def fill(store: rstore.Store) -> None:
    """Streams (several nodes each, one with deleted entries), groups with consumers and ~1,000
    pending entries (2,000 PEL records: more than one batch of the format-1 upgrade), one
    pending entry claimed by another consumer, an empty stream with a group, node settings."""
    store.config_set("stream-node-max-entries", 50)
    pipe = store.pipeline()
    for i in range(2000):
        pipe.xadd("orders", {"n": i, "item": f"sku-{i % 37}", "pad": "o" * (i % 90)})
    for i in range(300):
        pipe.xadd("audit", {"n": i}, id=f"{1000 + i}-{i % 3}")
    pipe.execute()
    orders = [entry_id for entry_id, _ in store.xrange("orders", count=20)]
    store.xdel("orders", *orders[5:10])
    store.xgroup_create("orders", "workers", "0")
    first = store.xreadgroup("workers", "c1", {"orders": ">"}, count=700)
    store.xreadgroup("workers", "c2", {"orders": ">"}, count=500)
    acked = [entry_id for entry_id, _ in first[0][1][:200]]
    store.xack("orders", "workers", *acked)
    store.xclaim("orders", "workers", "c3", 0, [first[0][1][300][0]])
    store.xgroup_create("orders", "late", "$")
    store.xgroup_create("audit", "readers", "0")
    store.xreadgroup("readers", "r1", {"audit": ">"}, count=40)
    store.xgroup_create("empty", "g", "$", mkstream=True)


def contents(store: rstore.Store) -> Contents:
    """Everything the store holds (see :data:`Contents`), read in one snapshot per key."""
    config = store.config
    out: Contents = {"config": (config.node_max_bytes, config.node_max_entries)}
    for key in sorted(store.keys("*")):
        out[key] = store.execute("XINFO", "STREAM", key, "FULL", "COUNT", "0")
    return out


def open_for_writing(path: str, start: Waitable, who: int, results: Reports) -> None:
    """Open ``path`` for writing as soon as every child is ready (``start``); report
    ``(format, records this open rewrote, contents)``."""

    def body() -> tuple[int, int, Contents]:
        start.wait(WAIT_S)
        with rstore.Store(path) as store:
            return store.format, store.upgrade(), contents(store)

    report(results, who, body)


def hold_open(path: str, how: str, conn: Connection) -> None:
    """Hold the store open until told to close: ``how`` is ``"reader"`` (this rstore, read-only)
    or ``"older"`` (LMDB opened for writing, as an older rstore writing the store has it)."""
    if how == "reader":
        store = rstore.Store(path, readonly=True)
        conn.send(("open", store.format))
        conn.recv()
        store.close()
    else:
        env = lmdb.open(path, max_dbs=16)
        conn.send(("open", None))
        conn.recv()
        env.close()
    conn.send("closed")
