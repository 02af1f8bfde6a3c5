"""Child-process bodies and parent-side probes for the queue and blocking-read tests.

Everything a child runs lives here, at module level, so that the ``spawn`` start method (which
pickles the target by name) can import it.  Children report through a ``multiprocessing``
queue as ``(who, status, value)`` (:func:`.children.report`).  Consumers also write what they
processed to a per-consumer JSON-lines file, fsynced *before* they acknowledge, so the file
survives a SIGKILL and shows exactly what a consumer had done when it died.

Probes read what the kernel and the store say about a blocked reader:

* :func:`waiters` -- the "slots in use" word of the store's waiter table ``notify.shm``
  (see ``rstore/storage/waiting/notify.py``): a blocked reader holds one slot per key it waits on.
* :func:`in_select` -- whether a process (or thread) is asleep in ``select``/``poll``, which
  is where a blocked read waits.  A reader that registered but is still re-checking its keys
  is not blocked yet; tests that depend on arrival order wait for both.

A child that the parent will SIGKILL must not be waiting on a shared ``multiprocessing``
Event at that moment: ``Event.set()`` waits for every sleeper to wake, and a dead sleeper never
does, so the next ``set()`` would hang.  Victims get events of their own.

Blocking children can lengthen rstore's safety re-check (``SAFETY_RECHECK_S``, 1 s) so that
only a real wake-up -- never the periodic re-check -- can end their wait within the test.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import rstore

from .children import WAIT_S, Event, Reports, report, wait_for

STREAM = "jobs"
GROUP = "workers"
DEAD_LETTER = "jobs:dead"
NO_RECHECK_S = 30.0  # a safety re-check interval no test waits for

_NOTIFY_FILE = "notify.shm"
_IN_USE = struct.Struct("<I")
_IN_USE_OFFSET = 12  # header: magic (8 bytes), u32 version, u32 slots in use, ...


# =========================================================================== probes


def waiters(path: str) -> int:
    """Slots in use in the store's waiter table (one per key a blocked reader waits on)."""
    try:
        with open(os.path.join(path, _NOTIFY_FILE), "rb") as f:
            header = f.read(_IN_USE_OFFSET + _IN_USE.size)
    except FileNotFoundError:
        return 0
    if len(header) < _IN_USE_OFFSET + _IN_USE.size:
        return 0
    return int(_IN_USE.unpack_from(header, _IN_USE_OFFSET)[0])


# select, pselect6, poll, ppoll
_SELECT_SYSCALLS = {"x86_64": {"23", "270", "7", "271"}, "aarch64": {"72", "73"}}


def in_select(pid: int, tid: int | None = None) -> bool:
    """Whether thread ``tid`` (default: the main thread) of ``pid`` sleeps in select/poll."""
    base = f"/proc/{pid}/task/{tid or pid}"
    try:
        with open(f"{base}/wchan") as f:
            wchan = f.read()
    except OSError:
        wchan = ""
    if "poll" in wchan or "select" in wchan:
        return True
    try:
        with open(f"{base}/syscall") as f:
            number = f.read().split()[0]
    except (OSError, IndexError):
        return False
    return number in _SELECT_SYSCALLS.get(platform.machine(), set())


def wait_blocked(path: str, slots: int, pids: Sequence[int] = (), tids: Sequence[int] = ()) -> None:
    """Wait until ``slots`` waiter slots are taken and every given process (or thread of this
    process) sleeps in select -- registered *and* done with its re-check."""
    me = os.getpid()
    wait_for(
        lambda: (
            waiters(path) >= slots
            and all(in_select(pid) for pid in pids)
            and all(in_select(me, tid) for tid in tids)
        ),
        f"{slots} blocked readers",
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_records(path: str) -> list[dict[str, Any]]:
    """The JSON lines a consumer wrote (none if it never wrote its file)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# =========================================================================== child plumbing


def _set_recheck(seconds: float | None) -> None:
    if seconds is not None:
        from rstore.commands import executor

        executor.SAFETY_RECHECK_S = seconds


def _text(value: Any) -> Any:
    """Replies with bytes turned into str, so they travel and compare easily."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list | tuple):
        return [_text(v) for v in value]
    if isinstance(value, dict):
        return {_text(k): _text(v) for k, v in value.items()}
    return value


class _Records:
    """A consumer's results file: JSON lines, flushed and fsynced on :meth:`commit`."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a")  # noqa: SIM115 -- closed by close()

    def add(self, **record: Any) -> None:
        self._file.write(json.dumps(record) + "\n")

    def commit(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


# =========================================================================== blocking children


def blocking_call(
    path: str,
    argv: list[Any],
    who: Any,
    results: Reports,
    recheck_s: float | None = NO_RECHECK_S,
    go: Event | None = None,
) -> None:
    """Run one (blocking) command; report ``(monotonic time it returned, reply)``.

    With ``go``, wait for it before the call (so the parent decides the arrival order).
    """

    def body() -> tuple[float, Any]:
        _set_recheck(recheck_s)
        store = rstore.Store(path)
        if go is not None:
            assert go.wait(WAIT_S), "never told to go"
        reply = store.execute(*argv)
        return time.monotonic(), _text(reply)

    report(results, who, body)


def xread_rounds(path: str, key: str, rounds: int, results: Reports) -> None:
    """``rounds`` times: XREAD BLOCK after the last entry seen; report each return time."""

    def body() -> None:
        _set_recheck(NO_RECHECK_S)
        store = rstore.Store(path)
        last = "$"
        for i in range(rounds):
            reply = store.execute("XREAD", "BLOCK", int(WAIT_S * 1000), "STREAMS", key, last)
            done = time.monotonic()
            assert reply is not None, "XREAD timed out"
            last = reply[0][1][-1][0].decode()
            results.put((i, "ok", (done, last)))

    report(results, "rounds", body)


def idle_reader(path: str, argv: list[Any], results: Reports) -> None:
    """A reader blocked forever (BLOCK 0) with rstore's normal safety re-check; reports its
    own CPU time (``os.times``) once woken."""

    def body() -> tuple[float, Any]:
        store = rstore.Store(path)
        reply = store.execute(*argv)
        t = os.times()
        return t.user + t.system, _text(reply)

    report(results, "idle", body)


def xadd_batch(path: str, key: str, count: int, results: Reports) -> None:
    """XADD ``count`` entries in one pipeline (one transaction); report their IDs."""

    def body() -> list[str]:
        store = rstore.Store(path)
        pipe = store.pipeline()
        for i in range(count):
            pipe.xadd(key, {"n": i})
        ids: list[str] = _text(pipe.execute())
        return ids

    report(results, "writer", body)


def xadd_without_wakeup(path: str, key: str, results: Reports) -> None:
    """XADD as a writer that died between its commit and waking anyone would: committed,
    nobody notified.  Reports ``(monotonic time of the commit, ID)``."""

    def body() -> tuple[float, str]:
        from rstore.storage.env import Env

        Env.notify = lambda self, keys, phase=0: 0  # type: ignore[method-assign]
        store = rstore.Store(path)
        new_id = store.xadd(key, {"lost": "wake-up"})
        return time.monotonic(), new_id.decode()

    report(results, "writer", body)


# =========================================================================== queue children


def producer(
    path: str,
    number: int,
    count: int,
    first_part: int,
    first_part_done: Event,
    results: Reports,
    poison: bool = False,
) -> None:
    """XADD ``count`` messages carrying ``producer`` and ``seq``; set ``first_part_done``
    after the first ``first_part``.  With ``poison``, one more message with ``poison=1``."""

    def body() -> list[str]:
        store = rstore.Store(path)
        ids = []
        for seq in range(count):
            if seq == first_part:
                first_part_done.set()
            ids.append(store.xadd(STREAM, {"producer": number, "seq": seq}).decode())
        if poison:
            ids.append(store.xadd(STREAM, {"producer": number, "seq": count, "poison": 1}).decode())
        first_part_done.set()
        return ids

    report(results, ("producer", number), body)


def _message(eid: bytes, fields: dict[bytes, bytes]) -> dict[str, Any]:
    return {"id": eid.decode(), "producer": int(fields[b"producer"]), "seq": int(fields[b"seq"])}


def victim_consumer(
    path: str, name: str, out_path: str, go: Event, batch_read: Event, batch: int, done: int
) -> None:
    """Read one batch with XREADGROUP, process (record) its first ``done`` messages, then
    hang before acknowledging anything -- the parent SIGKILLs us there."""
    store = rstore.Store(path)
    assert go.wait(WAIT_S), "never told to go"
    reply = store.xreadgroup(GROUP, name, {STREAM: ">"}, count=batch, block=int(WAIT_S * 1000))
    entries = reply[0][1]
    records = _Records(out_path)
    records.add(batch=[eid.decode() for eid, _ in entries], t=time.time())
    for eid, fields in entries[:done]:
        records.add(consumer=name, via="new", deliveries=1, **_message(eid, fields))
    records.commit()
    batch_read.set()
    time.sleep(WAIT_S)  # "processing" the rest of the batch; the SIGKILL comes first


def queue_consumer(
    path: str,
    name: str,
    out_path: str,
    go: Event,
    stop: Event,
    progress: Reports,
    claim_idle_ms: int,
    claim_every_s: float,
) -> None:
    """A consumer written against the redis-py-style API: XREADGROUP BLOCK for new messages,
    XAUTOCLAIM every ``claim_every_s`` for messages idle ``claim_idle_ms`` in any consumer.

    Each batch is recorded (message, ``via`` new/claim, delivery count) and fsynced, then
    acknowledged; the number XACK reports is recorded and sent on ``progress``.
    """

    def batches(store: rstore.Store) -> Iterator[tuple[str, list[Any]]]:
        cursor: bytes = b"0-0"
        next_claim = time.monotonic() + claim_every_s
        while not stop.is_set():
            if time.monotonic() >= next_claim:
                cursor, claimed, _gone = store.xautoclaim(
                    STREAM, GROUP, name, claim_idle_ms, cursor, count=10
                )
                if cursor == b"0-0":
                    next_claim = time.monotonic() + claim_every_s
                if claimed:
                    yield "claim", claimed
                    continue
            reply = store.xreadgroup(GROUP, name, {STREAM: ">"}, count=10, block=100)
            if reply:
                yield "new", reply[0][1]

    def body() -> None:
        store = rstore.Store(path)
        records = _Records(out_path)
        assert go.wait(WAIT_S), "never told to go"
        for via, entries in batches(store):
            now = time.time()
            for eid, fields in entries:
                deliveries = 1
                if via == "claim":
                    (pending,) = store.xpending_range(STREAM, GROUP, eid, eid, 1)
                    deliveries = pending["times_delivered"]
                records.add(
                    consumer=name, via=via, deliveries=deliveries, t=now, **_message(eid, fields)
                )
            records.commit()
            acked = store.xack(STREAM, GROUP, *(eid for eid, _ in entries))
            records.add(acked=acked, of=len(entries))
            records.commit()
            progress.put((name, "acked", acked))
        records.close()

    report(progress, name, body)


def worker(
    path: str,
    name: str,
    out_path: str,
    go: Event,
    stop: Event,
    results: Reports,
    options: dict[str, Any],
    hang_on: int | None = None,
    hanging: Event | None = None,
) -> None:
    """An :class:`rstore.Consumer` running a handler that records each message (fsynced).

    A message with ``poison`` always fails.  With ``hang_on=k`` the handler hangs on its
    k-th message (after setting ``hanging``) -- the parent SIGKILLs us there.
    """
    logging.getLogger("rstore.queue.consumer").addHandler(logging.NullHandler())
    logging.getLogger("rstore.queue.consumer").propagate = False

    def body() -> None:
        store = rstore.Store(path)
        consumer = rstore.Consumer(store, STREAM, GROUP, name, create_group=False, **options)
        records = _Records(out_path)
        handled = 0

        def handle(msg: rstore.Message) -> None:
            nonlocal handled
            handled += 1
            record = _message(msg.id, msg.fields)
            record.update(consumer=name, deliveries=msg.deliveries, t=time.time())
            if b"poison" in msg.fields:
                records.add(outcome="failed", **record)
                records.commit()
                raise RuntimeError("poison message")
            if handled == hang_on and hanging is not None:
                records.add(outcome="hung", **record)
                records.commit()
                hanging.set()
                time.sleep(WAIT_S)  # the SIGKILL comes first
            records.add(outcome="ok", **record)
            records.commit()

        def stopper() -> None:
            stop.wait(WAIT_S)
            consumer.stop()

        assert go.wait(WAIT_S), "never told to go"
        threading.Thread(target=stopper, daemon=True).start()
        consumer.run(handle)
        records.close()

    report(results, name, body)


# =========================================================================== docs


def doc_blocks(markdown: Any) -> list[tuple[str | None, str, str]]:
    """The fenced code blocks of a markdown file as ``(file, language, code)``.

    ``file`` is set when the line before the fence (blank lines aside) is a marker
    ``<!-- file: docs/examples/NAME.py -->``: the block shows that file verbatim.
    """
    out: list[tuple[str | None, str, str]] = []
    marker: str | None = None
    with open(markdown) as f:
        lines = f.read().splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("<!-- file:") and line.endswith("-->"):
            marker = line[len("<!-- file:") : -len("-->")].strip()
        elif line.startswith("```"):
            lang = line[3:].strip()  # "" for a bare fence (a diagram)
            body: list[str] = []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((marker, lang, "".join(body)))
            marker = None
        elif line:
            marker = None
        i += 1
    return out
