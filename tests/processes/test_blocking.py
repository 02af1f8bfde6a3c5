"""Blocking reads across processes: XREAD / XREADGROUP with BLOCK.

A blocked reader in one process must wake when another process writes, promptly and without
using CPU while it waits.  Most children here run with rstore's safety re-check (normally every
second) lengthened to 30 s, so a reply within the test's bounds can only come from a real
wake-up, never from the periodic re-check.  Latency bounds are deliberately generous (< 1 s);
the measured figures belong to ``bench/``.

Before writing, the parent waits until each reader is *blocked*: it holds its slot in the
store's waiter table and sleeps in ``select`` (see ``helpers_queue.wait_blocked``).
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore.commands import executor

from . import helpers_queue as h
from .children import WAIT_S, Children, next_report, sigkill, wait_for

ROOT = Path(__file__).resolve().parents[2]
PROMPT_S = 1.0  # a generous bound on a wake-up; the real latency is measured in bench/
NOGROUP = "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option"
FOREVER = ["BLOCK", 0]


def _group(store: rstore.Store) -> None:
    store.xgroup_create("s", "g", "$", mkstream=True)


def _xreadgroup(consumer: str, *options: Any) -> list[Any]:
    return ["XREADGROUP", "GROUP", "g", consumer, *options, "STREAMS", "s", ">"]


def _start_blocked(
    children: Children,
    path: str,
    argv: list[Any],
    who: Any,
    results: Any,
    recheck_s: float | None = h.NO_RECHECK_S,
) -> Any:
    """A child running ``argv``; with ``recheck_s=None``, rstore's own safety re-check."""
    return children.start(h.blocking_call, path, argv, who, results, recheck_s)


# =========================================================================== woken by writes


@pytest.mark.slow
def test_xread_block_is_woken_by_xadd_in_another_process(
    path: str, store: rstore.Store, children: Children
) -> None:
    store.xadd("s", {"n": 0})
    results = children.ctx.Queue()
    rounds = 5
    reader = children.start(h.xread_rounds, path, "s", rounds, results)
    latencies = []
    for i in range(rounds):
        assert reader.pid is not None
        h.wait_blocked(path, 1, [reader.pid])
        t0 = time.monotonic()
        new_id = store.xadd("s", {"n": i + 1}).decode()
        _, _, (woke, got) = next_report(results, i)
        assert got == new_id
        latencies.append(woke - t0)
    next_report(results, "rounds")
    children.join([reader])
    print(f"XREAD wake-up: median {statistics.median(latencies) * 1000:.2f} ms, "
          f"max {max(latencies) * 1000:.2f} ms")  # fmt: skip
    assert max(latencies) < PROMPT_S, latencies


@pytest.mark.slow
def test_xadd_creating_the_key_wakes_xread(
    path: str, store: rstore.Store, children: Children
) -> None:
    results = children.ctx.Queue()
    argv = ["XREAD", "BLOCK", 30_000, "STREAMS", "new", "$"]  # "$" of a missing key: 0-0
    reader = _start_blocked(children, path, argv, "r", results)
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    t0 = time.monotonic()
    new_id = store.xadd("new", {"a": "1"})
    _, status, (woke, reply) = next_report(results, "r")
    assert status == "ok" and reply == [["new", [[new_id.decode(), ["a", "1"]]]]]
    assert woke - t0 < PROMPT_S


@pytest.mark.slow
def test_block_0_waits_past_the_safety_recheck_until_woken(
    path: str, store: rstore.Store, children: Children
) -> None:
    """BLOCK 0 waits forever: the 1 s safety re-check finds nothing and waits again."""
    store.xadd("s", {"n": 0})
    results = children.ctx.Queue()
    reader = _start_blocked(
        children, path, ["XREAD", *FOREVER, "STREAMS", "s", "$"], "r", results, recheck_s=None
    )
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    with pytest.raises(AssertionError, match="no report"):
        next_report(results, timeout=1.5)  # at least one safety re-check has run meanwhile
    assert h.waiters(path) == 1
    new_id = store.xadd("s", {"n": 1}).decode()
    _, _, (_, reply) = next_report(results, "r")
    assert reply == [["s", [[new_id, ["n", "1"]]]]]
    children.join([reader])
    assert h.waiters(path) == 0


@pytest.mark.slow
def test_xreadgroup_block_is_woken_across_processes(
    path: str, store: rstore.Store, children: Children
) -> None:
    _group(store)
    results = children.ctx.Queue()
    reader = _start_blocked(children, path, _xreadgroup("c1", "BLOCK", 30_000), "c1", results)
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    t0 = time.monotonic()
    new_id = store.xadd("s", {"job": "1"}).decode()
    _, _, (woke, reply) = next_report(results, "c1")
    assert reply == [["s", [[new_id, ["job", "1"]]]]]
    assert woke - t0 < PROMPT_S
    (pending,) = store.xpending_range("s", "g", "-", "+", 10)
    assert pending["consumer"] == b"c1" and pending["times_delivered"] == 1


@pytest.mark.slow
def test_blocked_group_readers_are_served_in_arrival_order(
    path: str, store: rstore.Store, children: Children
) -> None:
    """Three processes block on one group with COUNT 1, then 3 entries arrive in one
    pipeline: the first to block gets the first entry, and so on (not by name or pid)."""
    _group(store)
    ctx = children.ctx
    results = ctx.Queue()
    names = ["c3", "c1", "c2"]  # arrival order
    gos = {name: ctx.Event() for name in names}
    procs = {}
    for name in reversed(names):
        argv = _xreadgroup(name, "COUNT", 1, "BLOCK", 30_000)
        procs[name] = children.start(
            h.blocking_call, path, argv, name, results, h.NO_RECHECK_S, gos[name]
        )
    for i, name in enumerate(names):
        gos[name].set()
        pid = procs[name].pid
        assert pid is not None
        h.wait_blocked(path, i + 1, [pid])
    pipe = store.pipeline()
    for n in range(3):
        pipe.xadd("s", {"n": n})
    ids = [eid.decode() for eid in pipe.execute()]
    got = {}
    for _ in names:
        who, status, (_, reply) = next_report(results)
        assert status == "ok"
        ((_key, entries),) = reply
        got[who] = [eid for eid, _ in entries]
    assert got == {"c3": [ids[0]], "c1": [ids[1]], "c2": [ids[2]]}
    children.join(list(procs.values()))


# =========================================================================== errors while blocked


@pytest.mark.slow
@pytest.mark.parametrize(
    "change",
    [["DEL", "s"], ["UNLINK", "s"], ["XGROUP", "DESTROY", "s", "g"], ["FLUSHALL"]],
    ids=["del", "unlink", "xgroup-destroy", "flushall"],
)
def test_blocked_xreadgroup_gets_nogroup(
    path: str, store: rstore.Store, children: Children, change: list[str]
) -> None:
    _group(store)
    results = children.ctx.Queue()
    reader = _start_blocked(children, path, _xreadgroup("c1", *FOREVER), "c1", results)
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    t0 = time.monotonic()
    store.execute(*change)
    _, status, (woke, text) = next_report(results, "c1")
    assert (status, text) == ("refused", NOGROUP)
    assert woke - t0 < PROMPT_S
    children.join([reader])
    assert h.waiters(path) == 0


@pytest.mark.slow
def test_group_destroyed_and_recreated_in_one_pipeline_keeps_the_reader_blocked(
    path: str, store: rstore.Store, children: Children
) -> None:
    """The woken command is run again (Valkey 7.2+): the group exists again, so it blocks
    again, and the next XADD serves it."""
    _group(store)
    results = children.ctx.Queue()
    reader = _start_blocked(children, path, _xreadgroup("c1", *FOREVER), "c1", results)
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    store.pipeline().xgroup_destroy("s", "g").xgroup_create("s", "g", "$").execute()
    h.wait_blocked(path, 1, [reader.pid])
    new_id = store.xadd("s", {"n": 1}).decode()
    _, status, (_, reply) = next_report(results, "c1")
    assert status == "ok" and reply == [["s", [[new_id, ["n", "1"]]]]]


@pytest.mark.slow
def test_deleting_the_key_does_not_end_a_blocked_xread(
    path: str, store: rstore.Store, children: Children
) -> None:
    """XREAD readers never get errors: after DEL the reader waits on, and a new stream under
    the key serves it (with IDs after the one it waited for)."""
    store.xadd("s", {"n": 0})
    results = children.ctx.Queue()
    reader = _start_blocked(children, path, ["XREAD", *FOREVER, "STREAMS", "s", "$"], "r", results)
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    store.delete("s")
    with pytest.raises(AssertionError, match="no report"):
        next_report(results, timeout=0.5)
    new_id = store.xadd("s", {"n": 1}).decode()
    _, _, (_, reply) = next_report(results, "r")
    assert reply == [["s", [[new_id, ["n", "1"]]]]]


# =========================================================================== dead readers


@pytest.mark.slow
@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_sigkilled_blocked_group_reader_does_not_stop_the_others(
    path: str, store: rstore.Store, children: Children, reaped: bool
) -> None:
    """The oldest blocked reader of a group is SIGKILLed: the next XADD wakes the next
    reader at once (its re-check is 30 s away), and the one after that still gets its turn."""
    _group(store)
    ctx = children.ctx
    results = ctx.Queue()
    procs = []
    for i, name in enumerate(["dead", "c1", "c2"]):
        argv = _xreadgroup(name, "COUNT", 1, "BLOCK", 30_000)
        procs.append(children.start(h.blocking_call, path, argv, name, results))
        assert procs[-1].pid is not None
        h.wait_blocked(path, i + 1, [procs[-1].pid])
    sigkill(procs[0], reap=reaped)
    for name in ("c1", "c2"):
        t0 = time.monotonic()
        new_id = store.xadd("s", {"for": name}).decode()
        _, status, (woke, reply) = next_report(results, name)
        assert status == "ok" and reply == [["s", [[new_id, ["for", name]]]]]
        assert woke - t0 < PROMPT_S
    children.join(procs[1:])
    if reaped:
        assert h.waiters(path) == 0, "the dead reader's slot was not reclaimed"


@pytest.mark.slow
def test_sigkilled_blocked_xread_reader_does_not_stop_the_others(
    path: str, store: rstore.Store, children: Children
) -> None:
    store.xadd("s", {"n": 0})
    results = children.ctx.Queue()
    procs = []
    for i, name in enumerate(["dead", "r1", "r2"]):
        argv = ["XREAD", "BLOCK", 30_000, "STREAMS", "s", "$"]
        procs.append(children.start(h.blocking_call, path, argv, name, results))
        assert procs[-1].pid is not None
        h.wait_blocked(path, i + 1, [procs[-1].pid])
    sigkill(procs[0])
    t0 = time.monotonic()
    new_id = store.xadd("s", {"n": 1}).decode()
    for _ in range(2):
        _, status, (woke, reply) = next_report(results)
        assert status == "ok" and reply == [["s", [[new_id, ["n", "1"]]]]]
        assert woke - t0 < PROMPT_S
    children.join(procs[1:])
    assert h.waiters(path) == 0


@pytest.mark.slow
def test_safety_recheck_finds_an_entry_whose_wakeup_was_lost(
    path: str, store: rstore.Store, children: Children
) -> None:
    """A writer that dies between its commit and the wake-up: the reader's periodic re-check
    (every second) still serves the entry."""
    store.xadd("s", {"n": 0})
    results = children.ctx.Queue()
    reader = _start_blocked(
        children, path, ["XREAD", "BLOCK", 30_000, "STREAMS", "s", "$"], "r", results,
        recheck_s=None,
    )  # fmt: skip
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    children.start(h.xadd_without_wakeup, path, "s", results)
    _, _, (committed, new_id) = next_report(results, "writer")
    _, _, (woke, reply) = next_report(results, "r")
    assert reply == [["s", [[new_id, ["lost", "wake-up"]]]]]
    assert woke - committed < executor.SAFETY_RECHECK_S + PROMPT_S


def _group_reader(
    store: rstore.Store,
    replies: list[Any],
    tids: list[int],
    consumer: str = "c",
    count: int | None = None,
) -> threading.Thread:
    def run() -> None:
        tids.append(threading.get_native_id())
        replies.append(store.xreadgroup("g", consumer, {"s": ">"}, count=count, block=30_000))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_the_recheck_does_not_serve_a_group_moved_back_by_setid(
    path: str, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valkey wakes a blocked XREADGROUP only for writes that signal its key (XADD, a deleted
    key or group), not for XGROUP SETID: the entries SETID made new wait for the next XADD.
    The periodic re-check (made frequent here) must not serve them earlier."""
    monkeypatch.setattr(executor, "SAFETY_RECHECK_S", 0.02)
    store.xadd("s", {"f": "v1"}, id="1-0")
    store.xadd("s", {"f": "v2"}, id="2-0")
    store.xgroup_create("s", "g", id="$")
    replies: list[Any] = []
    tids: list[int] = []
    reader = _group_reader(store, replies, tids)
    wait_for(lambda: bool(tids), "the reader thread")
    h.wait_blocked(path, 1, tids=tids)
    store.xgroup_setid("s", "g", id="0")
    reader.join(0.5)  # 25 re-checks
    assert reader.is_alive() and replies == []
    store.xadd("s", {"f": "v3"}, id="3-0")
    reader.join(WAIT_S)
    assert replies == [[[b"s", [(b"1-0", {b"f": b"v1"}), (b"2-0", {b"f": b"v2"}),
                               (b"3-0", {b"f": b"v3"})]]]]  # fmt: skip


def test_the_recheck_serves_a_group_reader_whose_wakeup_was_lost(
    path: str, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An XADD whose wake-up never came (its writer died after the commit): the re-check still
    serves a blocked XREADGROUP, as it does an XREAD."""
    monkeypatch.setattr(executor, "SAFETY_RECHECK_S", 0.02)
    store.xgroup_create("s", "g", id="$", mkstream=True)
    replies: list[Any] = []
    tids: list[int] = []
    reader = _group_reader(store, replies, tids)
    wait_for(lambda: bool(tids), "the reader thread")
    h.wait_blocked(path, 1, tids=tids)
    env = store._live_env()
    monkeypatch.setattr(env, "notify", lambda *args: 0)  # the wake-up is lost
    new_id = store.xadd("s", {"lost": "wake-up"})
    reader.join(WAIT_S)
    assert replies == [[[b"s", [(new_id, {b"lost": b"wake-up"})]]]]


def test_the_recheck_of_a_later_group_reader_waits_for_the_first(
    path: str, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readers of a group are served in the order they blocked, the periodic re-check too: a
    later reader whose re-check comes first leaves a lost wake-up's entry to the first reader
    (in a full test run, two threads once got ``2-0`` and ``1-0`` the wrong way round)."""
    store.xgroup_create("s", "g", id="$", mkstream=True)
    first: list[Any] = []
    later: list[Any] = []
    tids: list[int] = []
    monkeypatch.setattr(executor, "SAFETY_RECHECK_S", 60.0)  # the first re-checks late
    readers = [_group_reader(store, first, tids, "c1", count=1)]
    wait_for(lambda: len(tids) == 1, "the first reader thread")
    h.wait_blocked(path, 1, tids=tids)
    monkeypatch.setattr(executor, "SAFETY_RECHECK_S", 0.02)  # the later one soon and often
    readers.append(_group_reader(store, later, tids, "c2", count=1))
    wait_for(lambda: len(tids) == 2, "the later reader thread")
    h.wait_blocked(path, 2, tids=tids)
    env = store._live_env()
    with monkeypatch.context() as lost:
        lost.setattr(env, "notify", lambda *args: 0)
        store.xadd("s", {"n": 1}, id="1-0")
    readers[1].join(0.3)  # 15 re-checks of the later reader
    assert readers[1].is_alive() and later == []
    store.xadd("s", {"n": 2}, id="2-0")  # wakes the first, which passes the baton on
    for reader in readers:
        reader.join(WAIT_S)
    assert first == [[[b"s", [(b"1-0", {b"n": b"1"})]]]]
    assert later == [[[b"s", [(b"2-0", {b"n": b"2"})]]]]


# =========================================================================== threads, pipelines


@pytest.mark.slow
def test_threads_of_one_process_block_on_one_store(
    path: str, store: rstore.Store, children: Children
) -> None:
    """Three XREAD and three XREADGROUP threads (two Store objects on one path) are woken by
    a pipeline of three XADDs from another process: every XREAD thread gets all three entries,
    every group thread one entry of its own."""
    _group(store)
    other = rstore.Store(path)
    replies: dict[str, Any] = {}
    tids: list[int] = []
    lock = threading.Lock()

    def run(name: str, s: rstore.Store, argv: list[Any]) -> None:
        with lock:
            tids.append(threading.get_native_id())
        reply = s.execute(*argv)
        with lock:
            replies[name] = reply

    threads = []
    for i in range(3):
        xread = ["XREAD", "BLOCK", 30_000, "STREAMS", "s", "$"]
        group = _xreadgroup(f"c{i}", "COUNT", 1, "BLOCK", 30_000)
        for name, argv in ((f"r{i}", xread), (f"c{i}", group)):
            store_i = (store, other)[i % 2]
            thread = threading.Thread(target=run, args=(name, store_i, argv), daemon=True)
            thread.start()
            threads.append(thread)
    wait_for(lambda: len(tids) == 6, "the threads to start")
    h.wait_blocked(path, 6, tids=tids)
    results = children.ctx.Queue()
    children.start(h.xadd_batch, path, "s", 3, results)
    _, _, ids = next_report(results, "writer")
    for thread in threads:
        thread.join(WAIT_S)
        assert not thread.is_alive(), "a blocked thread was not woken"
    for i in range(3):
        assert [e[0].decode() for e in replies[f"r{i}"][0][1]] == ids
    taken = sorted(replies[f"c{i}"][0][1][0][0].decode() for i in range(3))
    assert taken == ids
    other.close()


def test_block_inside_a_pipeline_returns_at_once(store: rstore.Store) -> None:
    _group(store)
    t0 = time.monotonic()
    pipe = store.pipeline()
    pipe.xread({"s": "$"}, block=30_000)
    pipe.xreadgroup("g", "c1", {"s": ">"}, block=30_000)
    pipe.execute_command("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    assert pipe.execute() == [[], [], None]
    assert time.monotonic() - t0 < PROMPT_S
    assert h.waiters(store.path) == 0


@pytest.mark.parametrize("method", ["execute", "xread", "xreadgroup"])
def test_timeout_returns_nil_and_leaves_nothing_behind(store: rstore.Store, method: str) -> None:
    _group(store)
    t0 = time.monotonic()
    if method == "execute":
        reply = store.execute("XREAD", "BLOCK", 200, "STREAMS", "s", "$")
        assert reply is None  # RESP2 nil array
    elif method == "xread":
        assert store.xread({"s": "$"}, block=200) == []  # redis-py's shape
    else:
        assert store.xreadgroup("g", "c1", {"s": ">"}, block=200) == []
        assert store.xpending("s", "g")["pending"] == 0
    elapsed = time.monotonic() - t0
    assert 0.2 <= elapsed < 0.2 + PROMPT_S
    assert h.waiters(store.path) == 0


# =========================================================================== idle cost


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [["XREAD", *FOREVER, "STREAMS", "s", "$"], _xreadgroup("c1", *FOREVER)],
    ids=["xread", "xreadgroup"],
)
def test_idle_blocked_reader_uses_almost_no_cpu(
    path: str, store: rstore.Store, children: Children, argv: list[Any]
) -> None:
    """Over 2 s (two safety re-checks) a blocked reader uses < 5 % of one CPU.  The real
    figure (well under 1 %) is measured in bench/."""
    _group(store)
    results = children.ctx.Queue()
    reader = children.start(h.idle_reader, path, argv, results)
    assert reader.pid is not None
    h.wait_blocked(path, 1, [reader.pid])
    cpu0, t0 = h.cpu_seconds(reader.pid), time.monotonic()
    time.sleep(2.0)  # the measurement window
    cpu1, t1 = h.cpu_seconds(reader.pid), time.monotonic()
    share = (cpu1 - cpu0) / (t1 - t0)
    store.xadd("s", {"n": 1})
    next_report(results, "idle")
    print(f"idle blocked {argv[0]}: {share * 100:.2f} % CPU over {t1 - t0:.2f} s")
    assert share < 0.05


# =========================================================================== limits


def test_one_reader_may_wait_on_4096_keys(store: rstore.Store) -> None:
    keys = [f"k{i}" for i in range(4096)]
    assert store.execute("XREAD", "BLOCK", 50, "STREAMS", *keys, *["$"] * len(keys)) is None
    assert h.waiters(store.path) == 0


def test_a_read_beyond_the_waiter_table_still_works_by_polling(
    store: rstore.Store, caplog: pytest.LogCaptureFixture
) -> None:
    """More waiting keys than the 4096 slots of the waiter table: the read cannot be woken, so
    it polls (and says so once in the log) -- it is served all the same, and leaks nothing.
    (It once raised a bare ``OSError(ENOSPC)``, then an error; Valkey has no such limit.)"""
    keys = [f"k{i}" for i in range(4097)]
    writer = threading.Timer(0.2, lambda: store.xadd("k4096", {"n": 1}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        writer.start()
        started = time.monotonic()
        reply = store.execute("XREAD", "BLOCK", 5000, "STREAMS", *keys, *["$"] * len(keys))
        waited = time.monotonic() - started
        writer.join()
        gc.collect()
    assert reply is not None and reply[0][0] == b"k4096"
    assert waited < 2.0  # polled every 50 ms, not left to the 5 s timeout
    assert [r.message for r in caplog.records if "polls" in r.message]
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert h.waiters(store.path) == 0


# =========================================================================== bugs


@pytest.mark.slow
def test_a_dead_readers_slot_is_freed_once(
    path: str, store: rstore.Store, children: Children
) -> None:
    """BUG (rstore/storage/waiting/notify.py): two writers that both find the same dead reader's
    slot
    both free it.  ``Notifier.notify`` reads the waiting slots without the lock, and
    ``Notifier.unregister`` frees a slot without checking it is still the dead reader's: the
    "slots in use" count drops twice, to 0 while a live reader still waits, so writers stop
    looking and that reader is woken only by its safety re-check.  (The same stale free can
    also wipe a slot a new reader has just taken over from the dead one.)

    Two writer processes are modelled by two handles on the waiter table, interleaved the way
    two concurrent XADDs can be: both scan, then both try to wake the dead reader.
    """
    from rstore.storage.waiting.notify import Notifier

    store.xadd("s", {"n": 0})
    results = children.ctx.Queue()
    argv = ["XREAD", "BLOCK", 30_000, "STREAMS", "s", "$"]
    dead = children.start(h.blocking_call, path, argv, "dead", results)
    assert dead.pid is not None
    h.wait_blocked(path, 1, [dead.pid])
    live = children.start(h.blocking_call, path, argv, "live", results)
    assert live.pid is not None
    h.wait_blocked(path, 2, [live.pid])
    sigkill(dead)

    writers = [Notifier(path), Notifier(path)]
    scans = [w._waiting() for w in writers]  # both scan before either frees anything
    for writer, scan in zip(writers, scans):
        for _, slot, _, pid, _, _, token, _ in scan:
            if pid == dead.pid:
                writer._send(pid, token, slot)
    for writer in writers:
        writer.close()
    counted = h.waiters(path)
    t0 = time.monotonic()
    store.xadd("s", {"n": 1})
    try:
        _, _, (woke, _) = next_report(results, "live", timeout=3.0)
    except AssertionError:
        woke = None
    assert woke is not None and woke - t0 < PROMPT_S, (
        f"the live reader was not woken by the XADD (slots in use counted: {counted}, "
        "really waiting: 1)"
    )
    assert counted == 1


@pytest.mark.slow
def test_idle_group_readers_recheck_in_linear_time(
    store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BUG (rstore/commands/executor.py, ``_wait``): a blocked XREADGROUP passes the baton to
    the next reader of its group after *every* run, including its periodic safety re-check
    that found nothing.  So each re-check of reader k also re-runs readers k+1..n: n idle
    readers of one group cost about n(n+1)/2 re-runs per second instead of n -- each one a
    write transaction (XREADGROUP updates the consumer's seen-time), fsynced with sync=True.
    """
    _group(store)
    runs = 0
    real_run_one = executor.run_one

    def counting_run_one(env: Any, argv: list[bytes], dicts: bool = False) -> Any:
        nonlocal runs
        runs += 1
        return real_run_one(env, argv, dicts)

    monkeypatch.setattr(executor, "run_one", counting_run_one)
    readers = 16
    tids: list[int] = []

    def read(i: int) -> None:
        tids.append(threading.get_native_id())
        store.xreadgroup("g", f"c{i}", {"s": ">"}, count=1, block=30_000)

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(readers)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(tids) == readers, "the threads to start")
    h.wait_blocked(store.path, readers, tids=tids)
    before, t0 = runs, time.monotonic()
    time.sleep(3.0)  # the measurement window: three safety re-checks each
    per_second = (runs - before) / (time.monotonic() - t0)
    pipe = store.pipeline()
    for n in range(readers):
        pipe.xadd("s", {"n": n})
    pipe.execute()
    for thread in threads:
        thread.join(WAIT_S)
        assert not thread.is_alive()
    print(f"{readers} idle group readers: {per_second:.0f} re-runs per second")
    assert per_second <= 1.5 * readers / executor.SAFETY_RECHECK_S


# =========================================================================== docs/blocking.md


def test_blocking_doc_snippets_run(tmp_path: Path) -> None:
    blocks = [
        code for _, lang, code in h.doc_blocks(ROOT / "docs" / "blocking.md") if lang == "python"
    ]
    assert blocks, "docs/blocking.md has runnable examples"
    for code in blocks:
        script = tmp_path / "snippet.py"
        script.write_text(code)
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT_S,
            cwd=tmp_path, check=False,
        )  # fmt: skip
        assert done.returncode == 0, code + done.stdout + done.stderr
