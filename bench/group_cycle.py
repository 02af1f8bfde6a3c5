"""Consumer-group cycle: XREADGROUP COUNT 100, then XACK of those IDs, until the stream is
drained; rstore beside valkey, and beside the Python durable queues, in one run.

**Against valkey** (issue 23's targets: >= 1.5x durable, >= 2x relaxed), in both durability
pairs: ``sync=True`` vs ``appendfsync always`` and ``sync=False`` vs ``everysec``. Both sides
are loaded (untimed, pipelines of 1000) with the same 100k entries of the standard fields and
get a group reading from ``0``. One *cycle* is ``xreadgroup(group, consumer, {stream: ">"},
count=100)`` followed by ``xack`` of the 100 IDs it returned: two commands, and on rstore two
write transactions (delivering adds the entries to the group's pending list; acknowledging
removes them). Cycles alternate between the sides in blocks until both are drained; the rate is
messages / wall time of the timed blocks, and one cycle's duration is reported as latency
percentiles. A warm-up of two cycles per side runs first, on a second group.

**Against the Python queues** (no target; the ratio is rstore / peer), on a 10k-message queue
of the same fields, each library used as its documentation shows:

* persist-queue ``SQLiteAckQueue(path)`` -- its defaults: ``multithreading=False`` (one SQLite
  connection, one thread), ``auto_commit=True`` (the ack queue refuses ``False``); SQLite in WAL
  mode at its default ``synchronous=FULL``, so every ``get`` (marks the row unacked) and every
  ``ack`` is a transaction flushed to disk.  A cycle is 100 x (``get(block=False)`` +
  ``ack(item)``).  It has no batch API.  Compared with rstore ``sync=True``.
* persist-queue ``SQLiteQueue(path, auto_commit=False)`` -- the library's batch mode (its README:
  "use for batch operations, call ``task_done()`` to persist"): ``get`` only moves a cursor, and
  ``task_done()`` deletes everything taken so far in one flushed transaction.  At least once, like
  an ack, but no per-message ack and nothing that stops a second consumer from taking the same
  rows.  A cycle is 100 ``get(block=False)`` + one ``task_done()``.  Compared with ``sync=True``.
* litequeue ``LiteQueue(path)`` -- ``pop()`` (marks the row locked) + ``done(message_id)`` per
  message; it sets WAL mode with ``synchronous=NORMAL``: commits are not flushed (the WAL is,
  at checkpoints), which survives a process crash but not a power loss -- like rstore
  ``sync=False``, which it is compared with.  Messages are text, so they go in as JSON and the
  cycle ``json.loads`` each one.

The peers' per-message cost grows with the queue (litequeue sorts every ready message on each
``pop``; persist-queue's ``get`` steps over the acknowledged rows it keeps), so each row also
gives the rate over the first and last tenth of the drain.

    python bench/group_cycle.py --repeat 3
    python bench/group_cycle.py --no-peers --mode durable
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from common import (
    FIELDS,
    FSYNC_FOR_SYNC,
    STREAM,
    Result,
    Sampler,
    Valkey,
    add_common_args,
    exit_on_sigterm,
    fmt_rate,
    interleave,
    latency_table,
    percentiles,
    rate_result,
    repeat_runs,
    results_table,
    set_placement,
    temp_store,
    write_json,
)
from scan import load

COUNT = 100
GROUP = "workers"
WARM_GROUP = "warm-up"
CONSUMER = "worker-1"
TARGETS = {True: 1.5, False: 2.0}  # by sync (issue 23)
# entries in the stream, alternating blocks (rstore vs valkey)
SIZES = {False: (100_000, 10), True: (10_000, 4)}
# messages per queue, alternating blocks (rstore vs the Python queues)
PEER_SIZES = {False: (10_000, 5), True: (1_000, 2)}
WARM_CYCLES = 2


def workload_name(entries: int) -> str:
    return f"XREADGROUP {COUNT} + XACK, {entries // 1000}k entries"


def mode_name(sync: bool) -> str:
    return f"rstore sync={sync} / valkey appendfsync {FSYNC_FOR_SYNC[sync]}"


# ----------------------------------------------------------------------------- rstore and valkey


def group_cycler(client: Any, group: str = GROUP) -> Sampler:
    """``n`` cycles of XREADGROUP COUNT 100 + XACK on ``client`` (an rstore Store or a redis-py
    client: the same calls on both); one duration per cycle.  Each cycle must get 100."""

    def sample(n: int) -> list[float]:
        clock = time.perf_counter
        xreadgroup, xack = client.xreadgroup, client.xack
        out = [0.0] * n
        for i in range(n):
            t0 = clock()
            reply = xreadgroup(group, CONSUMER, {STREAM: ">"}, count=COUNT)
            entries = reply[0][1]
            acked = xack(STREAM, group, *[entry_id for entry_id, _ in entries])
            out[i] = clock() - t0
            if len(entries) != COUNT or acked != COUNT:
                raise RuntimeError(f"a cycle got {len(entries)} entries and acked {acked}")
        return out

    return sample


def drained(client: Any, group: str = GROUP) -> bool:
    """Nothing new for the group and nothing pending."""
    new = client.xreadgroup(group, CONSUMER, {STREAM: ">"}, count=COUNT)
    return not new and client.xpending(STREAM, group)["pending"] == 0


def run(*, sync: bool, quick: bool = False, base_dir: str | None = None) -> Result:
    """One side-by-side run of the group cycle in one durability mode."""
    entries, rounds = SIZES[quick]
    cycles = entries // COUNT
    with (
        temp_store(sync, base_dir) as store,
        Valkey(FSYNC_FOR_SYNC[sync], base_dir=base_dir) as valkey,
    ):
        client = valkey.client()
        sides: dict[str, Sampler] = {}
        for name, side, pipeline in (
            ("rstore", store, store.pipeline),
            ("valkey", client, lambda: client.pipeline(transaction=False)),
        ):
            load(pipeline, entries)
            side.xgroup_create(STREAM, GROUP, "0")
            side.xgroup_create(STREAM, WARM_GROUP, "0")
            group_cycler(side, WARM_GROUP)(WARM_CYCLES)
            sides[name] = group_cycler(side)
        timed = interleave(sides, cycles, rounds)
        if not (drained(store) and drained(client)):
            raise RuntimeError("a side was not drained by the timed cycles")

    (r_samples, r_wall), (v_samples, v_wall) = timed["rstore"], timed["valkey"]
    return rate_result(
        workload=workload_name(entries),
        mode=mode_name(sync),
        target=TARGETS[sync],
        unit="msg/s",
        rstore_rate=entries / r_wall,
        valkey_rate=entries / v_wall,
        rstore_latency_ms=percentiles(r_samples, 1e3),
        valkey_latency_ms=percentiles(v_samples, 1e3),
        latency_of=f"one cycle ({COUNT} messages)",
        cycles=cycles,
    )


# ----------------------------------------------------------------------------- the Python queues


class PeerQueue:
    """One Python queue library on its own temporary directory: ``fill`` untimed, then
    :meth:`cycler` drains it ``COUNT`` messages per cycle the way its users would."""

    name = ""
    mode = ""
    compare_sync = True  # which rstore mode it is compared with

    def __init__(self, base_dir: str | None) -> None:
        self.dir = tempfile.mkdtemp(prefix="bench-peer-", dir=base_dir)

    def fill(self, messages: int) -> None:
        raise NotImplementedError

    def cycle(self) -> int:
        """Take and acknowledge up to ``COUNT`` messages; how many there were."""
        raise NotImplementedError

    def remaining(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def cycler(self) -> Sampler:
        def sample(n: int) -> list[float]:
            clock = time.perf_counter
            cycle = self.cycle
            out = [0.0] * n
            for i in range(n):
                t0 = clock()
                got = cycle()
                out[i] = clock() - t0
                if got != COUNT:
                    raise RuntimeError(f"{self.name}: a cycle got {got} messages")
            return out

        return sample


def _synchronous(conn: Any) -> str:
    """SQLite's ``synchronous`` setting on a connection, by name."""
    level = int(conn.execute("PRAGMA synchronous").fetchone()[0])
    return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(level, str(level))


class PersistAck(PeerQueue):
    name = "persist-queue SQLiteAckQueue, get + ack per message"
    compare_sync = True

    def __init__(self, base_dir: str | None) -> None:
        super().__init__(base_dir)
        import persistqueue

        self._empty = persistqueue.Empty
        self.queue = persistqueue.SQLiteAckQueue(os.path.join(self.dir, "queue"))
        # the library keeps no public handle on its connection; a fresh one to the same file
        # shows the defaults it leaves in place
        probe = sqlite3.connect(os.path.join(self.dir, "queue", "data.db"))
        journal = probe.execute("PRAGMA journal_mode").fetchone()[0].upper()
        self.mode = (
            f"SQLite {journal}, synchronous={_synchronous(probe)} (defaults): a flushed commit "
            "per get and per ack; multithreading=False"
        )
        probe.close()

    def fill(self, messages: int) -> None:
        put = self.queue.put
        for _ in range(messages):
            put(dict(FIELDS))

    def cycle(self) -> int:
        get, ack = self.queue.get, self.queue.ack
        for done in range(COUNT):
            try:
                item = get(block=False)
            except self._empty:
                return done
            ack(item)
        return COUNT

    def remaining(self) -> int:
        return int(self.queue.qsize()) + int(self.queue.unack_count())

    def close(self) -> None:
        self.queue.close()
        super().close()


class PersistBatch(PeerQueue):
    name = f"persist-queue SQLiteQueue auto_commit=False, {COUNT} get + task_done"
    compare_sync = True

    def __init__(self, base_dir: str | None) -> None:
        super().__init__(base_dir)
        import persistqueue

        self._empty = persistqueue.Empty
        self.queue = persistqueue.SQLiteQueue(os.path.join(self.dir, "queue"), auto_commit=False)
        probe = sqlite3.connect(os.path.join(self.dir, "queue", "data.db"))
        journal = probe.execute("PRAGMA journal_mode").fetchone()[0].upper()
        self.mode = (
            f"SQLite {journal}, synchronous={_synchronous(probe)} (defaults): one flushed commit "
            f"per task_done, i.e. per {COUNT}; multithreading=False"
        )
        probe.close()

    def fill(self, messages: int) -> None:
        put = self.queue.put
        for _ in range(messages):
            put(dict(FIELDS))
        self.queue.task_done()

    def cycle(self) -> int:
        get = self.queue.get
        taken = 0
        while taken < COUNT:
            try:
                get(block=False)
            except self._empty:
                break
            taken += 1
        self.queue.task_done()
        return taken

    def remaining(self) -> int:
        return int(self.queue.qsize())

    def close(self) -> None:
        self.queue.close()
        super().close()


class Lite(PeerQueue):
    name = "litequeue, pop + done per message"
    compare_sync = False

    def __init__(self, base_dir: str | None) -> None:
        super().__init__(base_dir)
        import litequeue

        self.queue = litequeue.LiteQueue(os.path.join(self.dir, "queue.db"))
        journal = self.queue.conn.execute("PRAGMA journal_mode").fetchone()[0].upper()
        self.mode = (
            f"SQLite {journal}, synchronous={_synchronous(self.queue.conn)} (set by litequeue): "
            "commits not flushed"
        )

    def fill(self, messages: int) -> None:
        put, text = self.queue.put, json.dumps(FIELDS)
        for _ in range(messages):
            put(text)

    def cycle(self) -> int:
        pop, done, loads = self.queue.pop, self.queue.done, json.loads
        for taken in range(COUNT):
            message = pop()
            if message is None:
                return taken
            loads(message.data)
            done(message.message_id)
        return COUNT

    def remaining(self) -> int:
        return int(self.queue.qsize())

    def close(self) -> None:
        self.queue.close()
        super().close()


PEERS: tuple[type[PeerQueue], ...] = (PersistAck, PersistBatch, Lite)


@contextmanager
def open_peers(base_dir: str | None) -> Iterator[list[PeerQueue]]:
    with ExitStack() as stack:
        peers = []
        for cls in PEERS:
            peer = cls(base_dir)
            stack.callback(peer.close)
            peers.append(peer)
        yield peers


def _tenth_rates(samples: list[float]) -> tuple[float, float]:
    """Messages per second over the first and the last tenth of a drain's cycles."""
    tenth = max(1, len(samples) // 10)
    return COUNT * tenth / sum(samples[:tenth]), COUNT * tenth / sum(samples[-tenth:])


def run_peers(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    """rstore (both modes) beside the Python queues, all on the same messages, interleaved."""
    messages, rounds = PEER_SIZES[quick]
    cycles = messages // COUNT
    warm = COUNT  # one warm-up cycle per side, on extra messages
    with (
        temp_store(True, base_dir) as durable,
        temp_store(False, base_dir) as relaxed,
        open_peers(base_dir) as peers,
    ):
        stores = {True: durable, False: relaxed}
        sides: dict[str, Sampler] = {}
        for sync, store in stores.items():
            load(store.pipeline, messages + warm)
            store.xgroup_create(STREAM, GROUP, "0")
            sides[f"rstore sync={sync}"] = group_cycler(store)
        for peer in peers:
            peer.fill(messages + warm)
            sides[peer.name] = peer.cycler()
        for sample in sides.values():
            sample(warm // COUNT)
        timed = interleave(sides, cycles, rounds)
        leftovers = {p.name: p.remaining() for p in peers if p.remaining()}
        if leftovers or not all(drained(s) for s in stores.values()):
            raise RuntimeError(f"a queue was not drained by the timed cycles: {leftovers}")

    results = []
    for peer in peers:
        ours = f"rstore sync={peer.compare_sync}"
        (r_samples, r_wall), (p_samples, p_wall) = timed[ours], timed[peer.name]
        r_first, r_last = _tenth_rates(r_samples)
        p_first, p_last = _tenth_rates(p_samples)
        results.append(
            rate_result(
                workload=f"{peer.name}: drain {messages // 1000}k messages",
                mode=peer.mode,
                target=None,
                unit="msg/s",
                rstore_rate=messages / r_wall,
                valkey_rate=messages / p_wall,
                kind="peer",
                peer=peer.name,
                rstore_mode=f"sync={peer.compare_sync}",
                rstore_first_tenth=r_first,
                rstore_last_tenth=r_last,
                peer_first_tenth=p_first,
                peer_last_tenth=p_last,
            )
        )
    return results


def peers_table(results: list[Result]) -> str:
    """rstore beside the Python queues: rates, ratio rstore / peer (with its spread)."""
    lines = [
        "| peer, how it is used | its durability | rstore | peer | rstore / peer (min–max) "
        "| first → last tenth of the drain, rstore | same, peer |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r.get("kind") != "peer":
            continue
        spread = ""
        if r.get("runs", 1) > 1:
            spread = f" ({r['ratio_min']:.2f}–{r['ratio_max']:.2f})"
        lines.append(
            f"| {r['peer']} | {r['mode']} | {fmt_rate(r['rstore'])} {r['unit']} "
            f"({r['rstore_mode']}) | {fmt_rate(r['valkey'])} {r['unit']} "
            f"| {r['ratio']:.2f}x{spread} "
            f"| {fmt_rate(r['rstore_first_tenth'])} → {fmt_rate(r['rstore_last_tenth'])} "
            f"| {fmt_rate(r['peer_first_tenth'])} → {fmt_rate(r['peer_last_tenth'])} |"
        )
    return "\n".join(lines)


def run_all(
    *, quick: bool = False, base_dir: str | None = None, peers: bool = True
) -> list[Result]:
    results = [run(sync=sync, quick=quick, base_dir=base_dir) for sync in (True, False)]
    if peers:
        results += run_peers(quick=quick, base_dir=base_dir)
    return results


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument(
        "--mode",
        choices=("durable", "relaxed", "both"),
        default="both",
        help="durable: sync=True vs always; relaxed: sync=False vs everysec",
    )
    parser.add_argument("--no-peers", action="store_true", help="skip persist-queue and litequeue")
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    modes = {"durable": [True], "relaxed": [False], "both": [True, False]}[args.mode]

    def once() -> list[Result]:
        out = [run(sync=s, quick=args.quick, base_dir=args.dir) for s in modes]
        if not args.no_peers:
            out += run_peers(quick=args.quick, base_dir=args.dir)
        return out

    results = repeat_runs(once, args.repeat)
    print(results_table(results))
    print()
    print(latency_table(results))
    if not args.no_peers:
        print()
        print(peers_table(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
