"""The durable local queue, end to end: producer and consumer *processes* on one store.

Four producer processes add messages carrying ``producer`` and ``seq``; four consumer
processes share one consumer group.  One consumer is SIGKILLed after it read a batch and before
it acknowledged it; the survivors reclaim its messages once they have been idle long enough.
The checks are the queue's contract:

* every message is processed, and acknowledged exactly once (the XACK replies add up);
* no message is delivered to two *live* consumers: the only second deliveries are the explicit
  claims of the dead consumer's messages, each with delivery count 2;
* nothing is lost, nothing stays pending, and ``store.check()`` finds the store consistent.

Children run the bodies in ``helpers_queue``; every wait has a timeout and a hanging child fails the
test.  See ``docs/queue.md`` for the same queue as a user would write it.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore

from . import helpers_queue as h
from .children import WAIT_S, Children, next_report, sigkill, wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"

PRODUCERS = 4
PER_PRODUCER = 150
TOTAL = PRODUCERS * PER_PRODUCER
FIRST_PART = 10  # each producer's messages written before the victim reads its batch
BATCH = 10  # the victim's batch
DONE_BEFORE_KILL = 5  # messages of that batch the victim processed before it died
CLAIM_IDLE_MS = 1000
CLAIM_EVERY_S = 0.2


def _group_state(store: rstore.Store) -> dict[str, Any]:
    (group,) = store.xinfo_groups(h.STREAM)
    return group  # type: ignore[no-any-return]


def _drained(store: rstore.Store) -> bool:
    """Every message delivered and acknowledged (False while the group does not exist)."""
    groups = store.xinfo_groups(h.STREAM) if store.exists(h.STREAM) else []
    return bool(groups and groups[0]["lag"] == 0 and groups[0]["pending"] == 0)


def _assert_queue_empty_and_consistent(store: rstore.Store, total: int) -> None:
    summary = store.xpending(h.STREAM, h.GROUP)
    assert summary["pending"] == 0, summary
    group = _group_state(store)
    assert group["entries-read"] == total and group["lag"] == 0, group
    assert store.xlen(h.STREAM) == total
    assert store.check() == []


def _every_message(store: rstore.Store) -> dict[str, tuple[int, int]]:
    """``{id: (producer, seq)}`` of the stream, checking each producer's sequence is whole."""
    entries = store.xrange(h.STREAM)
    seqs: dict[int, list[int]] = {}
    out = {}
    for eid, fields in entries:
        producer, seq = int(fields[b"producer"]), int(fields[b"seq"])
        seqs.setdefault(producer, []).append(seq)
        out[eid.decode()] = (producer, seq)
    for producer, got in seqs.items():
        assert got == sorted(got), f"producer {producer}'s messages out of order"
    return out


# ====================================================================== XREADGROUP + XAUTOCLAIM


@pytest.mark.slow
def test_consumer_processes_survive_a_sigkilled_consumer(
    path: str, store: rstore.Store, tmp_path: Path, children: Children
) -> None:
    store.xgroup_create(h.STREAM, h.GROUP, "0", mkstream=True)
    ctx = children.ctx
    progress = ctx.Queue()
    first_parts = [ctx.Event() for _ in range(PRODUCERS)]
    victim_go, batch_read, live_go, stop = (ctx.Event() for _ in range(4))
    out = {f"c{i}": str(tmp_path / f"c{i}.jsonl") for i in range(4)}

    producers = [
        children.start(h.producer, path, i, PER_PRODUCER, FIRST_PART, first_parts[i], progress)
        for i in range(PRODUCERS)
    ]
    victim = children.start(
        h.victim_consumer, path, "c0", out["c0"], victim_go, batch_read, BATCH, DONE_BEFORE_KILL
    )
    claims = (CLAIM_IDLE_MS, CLAIM_EVERY_S)
    live = [
        children.start(h.queue_consumer, path, name, out[name], live_go, stop, progress, *claims)
        for name in ("c1", "c2", "c3")
    ]

    # The victim reads a full batch first, then the others start while producers go on.
    for event in first_parts:
        assert event.wait(WAIT_S), "a producer did not start"
    victim_go.set()
    assert batch_read.wait(WAIT_S), "the victim read nothing"
    live_go.set()
    owed = store.xpending_range(h.STREAM, h.GROUP, "-", "+", 100, "c0")
    sigkill(victim)
    victim_batch = [p["message_id"].decode() for p in owed]
    assert len(victim_batch) == BATCH, owed

    # Wait for every message to be acknowledged (the XACK replies add up), and the producers.
    acked = 0
    produced: dict[int, list[str]] = {}
    deadline = time.monotonic() + WAIT_S
    while acked < TOTAL or len(produced) < PRODUCERS:
        remaining = deadline - time.monotonic()
        assert remaining > 0, (
            f"only {acked} of {TOTAL} acknowledged; group {_group_state(store)}; "
            f"pending {store.xpending(h.STREAM, h.GROUP)}"
        )
        who, status, value = next_report(progress, timeout=remaining)
        if status == "acked":
            acked += value
        else:
            assert who[0] == "producer", f"{who} stopped early: {status} {value}"
            produced[who[1]] = value
    stop.set()
    finished: set[str] = set()
    while len(finished) < len(live):
        who, status, value = next_report(progress)
        if status == "acked":
            acked += value
        else:
            finished.add(who)
    children.join(producers + live)

    # --- the store: everything there once, nothing pending, consistent.
    messages = _every_message(store)
    assert len(messages) == TOTAL
    assert sorted(messages) == sorted(eid for ids in produced.values() for eid in ids)
    _assert_queue_empty_and_consistent(store, TOTAL)
    assert acked == TOTAL, "some message was acknowledged twice (or never)"

    # --- what each consumer processed.
    (victim_head, *victim_done) = h.read_records(out["c0"])
    assert victim_head["batch"] == victim_batch
    assert [r["id"] for r in victim_done] == victim_batch[:DONE_BEFORE_KILL]
    live_records = [
        r for name in ("c1", "c2", "c3") for r in h.read_records(out[name]) if "id" in r
    ]
    per_id = Counter(r["id"] for r in live_records)
    assert set(per_id) == set(messages), "a message was never processed by a live consumer"
    twice = sorted(eid for eid, n in per_id.items() if n > 1)
    assert twice == [], f"delivered to two live consumers: {twice}"
    for r in live_records:
        assert (r["producer"], r["seq"]) == messages[r["id"]], r
    claimed = {r["id"]: r for r in live_records if r["via"] == "claim"}
    assert sorted(claimed) == sorted(victim_batch), "claims took more (or less) than the dead's"
    for r in claimed.values():
        assert r["deliveries"] == 2, r
        assert r["t"] >= victim_head["t"] + CLAIM_IDLE_MS / 1000 - 0.05, "claimed before idle"
    # At least once: the victim's processed-but-unacknowledged messages were processed again.
    assert set(victim_batch[:DONE_BEFORE_KILL]) <= set(claimed)
    assert len({r["consumer"] for r in live_records}) == 3, "a live consumer got nothing"


# =========================================================================== rstore.Consumer


WORKER_OPTIONS: dict[str, Any] = {
    "count": 5,
    "block_ms": 100,
    "claim_idle_ms": CLAIM_IDLE_MS,
    "claim_every_ms": 100,
    "max_deliveries": 3,
    "dead_letter": h.DEAD_LETTER,
}


@pytest.mark.slow
def test_consumer_workers_dead_letter_a_poison_message(
    path: str, store: rstore.Store, tmp_path: Path, children: Children
) -> None:
    store.xgroup_create(h.STREAM, h.GROUP, "0", mkstream=True)
    ctx = children.ctx
    results = ctx.Queue()
    first_parts = [ctx.Event() for _ in range(PRODUCERS)]
    victim_go, hanging, live_go, stop = (ctx.Event() for _ in range(4))
    # A process SIGKILLed while it waits on an Event would hang every later set() of that
    # Event (multiprocessing's Condition waits for each sleeper to wake): the victim waits on
    # its own, never-set stop.
    victim_stop = ctx.Event()
    out = {f"w{i}": str(tmp_path / f"w{i}.jsonl") for i in range(4)}

    producers = [
        children.start(
            h.producer, path, i, PER_PRODUCER, FIRST_PART, first_parts[i], results, i == 0
        )
        for i in range(PRODUCERS)
    ]
    hang = (2, hanging)  # the victim hangs on its second message
    victim = children.start(
        h.worker, path, "w0", out["w0"], victim_go, victim_stop, results, WORKER_OPTIONS, *hang
    )
    live = [
        children.start(h.worker, path, name, out[name], live_go, stop, results, WORKER_OPTIONS)
        for name in ("w1", "w2", "w3")
    ]

    for event in first_parts:
        assert event.wait(WAIT_S), "a producer did not start"
    victim_go.set()
    assert hanging.wait(WAIT_S), "the victim never got its second message"
    live_go.set()
    owed = store.xpending_range(h.STREAM, h.GROUP, "-", "+", 100, "w0")
    sigkill(victim)
    victim_owed = [p["message_id"].decode() for p in owed]
    # The victim's batch was 5: the first acknowledged, the second hung, three unread.
    assert len(victim_owed) == WORKER_OPTIONS["count"] - 1, owed

    produced: dict[int, list[str]] = {}
    while len(produced) < PRODUCERS:
        who, _, value = next_report(results)
        assert who[0] == "producer", f"{who} stopped early"
        produced[who[1]] = value
    total = TOTAL + 1
    wait_for(
        lambda: _drained(store) and store.xlen(h.DEAD_LETTER) == 1,
        "every message processed or dead-lettered",
        timeout=WAIT_S,
        interval=0.05,
    )
    stop.set()
    assert {next_report(results)[0] for _ in live} == {"w1", "w2", "w3"}
    children.join(producers + live)

    # --- the store.
    messages = _every_message(store)
    (poison_id,) = [eid for eid, (p, seq) in messages.items() if seq == PER_PRODUCER]
    assert produced[0][-1] == poison_id
    _assert_queue_empty_and_consistent(store, total)

    # --- the poison message: three failed deliveries, then the dead-letter stream.
    ((_, dead),) = store.xrange(h.DEAD_LETTER)
    assert dead == {
        b"producer": b"0",
        b"seq": str(PER_PRODUCER).encode(),
        b"poison": b"1",
        b"rstore:stream": h.STREAM.encode(),
        b"rstore:group": h.GROUP.encode(),
        b"rstore:id": poison_id.encode(),
        b"rstore:deliveries": b"4",
        b"rstore:reason": b"delivered 4 times",
    }
    records = {name: h.read_records(file) for name, file in out.items()}
    every = sorted((r for rs in records.values() for r in rs), key=lambda r: r["t"])
    failed = [r for r in every if r["outcome"] == "failed"]
    assert [r["id"] for r in failed] == [poison_id] * 3
    assert [r["deliveries"] for r in failed] == [1, 2, 3]

    # --- everything else: processed exactly once, the dead worker's through a claim.
    victim_records = records["w0"]
    assert [r["outcome"] for r in victim_records] == ["ok", "hung"]
    assert victim_records[1]["id"] == victim_owed[0]
    ok = [r for r in every if r["outcome"] == "ok"]
    per_id = Counter(r["id"] for r in ok)
    assert set(per_id) == set(messages) - {poison_id}, "a message was never processed"
    assert [eid for eid, n in per_id.items() if n > 1] == [], "a message was processed twice"
    for r in ok:
        assert (r["producer"], r["seq"]) == messages[r["id"]], r
        expected = 2 if r["id"] in victim_owed else 1
        assert r["deliveries"] == expected, r


@pytest.mark.slow
def test_restarted_worker_gets_its_own_unacknowledged_messages_first(
    path: str, store: rstore.Store, tmp_path: Path, children: Children
) -> None:
    """A worker restarted under the same name needs no claim: its own pending messages come
    back first (history read), with their delivery count raised."""
    store.xgroup_create(h.STREAM, h.GROUP, "0", mkstream=True)
    ids = [store.xadd(h.STREAM, {"producer": 0, "seq": seq}).decode() for seq in range(12)]
    ctx = children.ctx
    results = ctx.Queue()
    go, hanging, stop, victim_stop = (ctx.Event() for _ in range(4))
    go.set()
    options = dict(WORKER_OPTIONS, claim_idle_ms=None)
    first = str(tmp_path / "first.jsonl")
    second = str(tmp_path / "second.jsonl")

    victim = children.start(
        h.worker, path, "w", first, go, victim_stop, results, options, 2, hanging
    )
    assert hanging.wait(WAIT_S)
    sigkill(victim)
    assert [r["outcome"] for r in h.read_records(first)] == ["ok", "hung"]
    owed = [p["message_id"].decode() for p in store.xpending_range(h.STREAM, h.GROUP, "-", "+", 9)]
    assert owed == ids[1:5]

    again = children.start(h.worker, path, "w", second, go, stop, results, options)
    wait_for(lambda: _drained(store), "the restarted worker to finish", interval=0.05)
    stop.set()
    assert next_report(results)[0] == "w"
    children.join([again])
    records = h.read_records(second)
    assert [r["id"] for r in records] == ids[1:]
    assert [r["deliveries"] for r in records] == [2] * 4 + [1] * 7
    _assert_queue_empty_and_consistent(store, 12)


# =========================================================================== bugs


def test_claimed_message_carries_its_true_delivery_count(store: rstore.Store) -> None:
    """A claimed message carries its own delivery count, even when the claiming consumer owns
    other pending messages between the claimed IDs (once a range lookup capped at ``2n + 10``
    rows gave the later claimed ones the default count 1, so a message past
    ``max_deliveries`` reached the handler again instead of the dead-letter stream)."""
    ids = [store.xadd(h.STREAM, {"n": n}) for n in range(100)]
    store.xgroup_create(h.STREAM, h.GROUP, "0")
    store.xreadgroup(h.GROUP, "crashed", {h.STREAM: ">"}, count=1)  # ids[0]
    store.xreadgroup(h.GROUP, "me", {h.STREAM: ">"}, count=98)  # ids[1..98], just delivered
    store.xreadgroup(h.GROUP, "crashed", {h.STREAM: ">"}, count=1)  # ids[99]
    # The crashed worker's two messages: delivered 5 times, idle for a minute.
    store.xclaim(h.STREAM, h.GROUP, "crashed", 0, [ids[0], ids[99]], idle=60_000, retrycount=5)
    consumer = rstore.Consumer(
        store, h.STREAM, h.GROUP, "me", count=10, block_ms=50, claim_idle_ms=30_000,
        max_deliveries=3, dead_letter=h.DEAD_LETTER,
    )  # fmt: skip

    def dead_letters() -> dict[bytes, bytes]:
        return {f[b"rstore:id"]: f[b"rstore:deliveries"] for _, f in store.xrange(h.DEAD_LETTER)}

    def stop_when_both_are_dead() -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not {ids[0], ids[99]} <= dead_letters().keys():
            time.sleep(0.02)
        consumer.stop()

    watcher = threading.Thread(target=stop_when_both_are_dead, daemon=True)
    yielded: dict[bytes, int] = {}
    watcher.start()
    for msg in consumer.messages():  # "me"'s own 98 (history), then the claim
        yielded[msg.id] = msg.deliveries
    watcher.join(WAIT_S)
    dead = dead_letters()
    assert dead.get(ids[0]) == b"6"
    assert dead.get(ids[99]) == b"6"
    assert ids[0] not in yielded and ids[99] not in yielded
    assert sorted(yielded) == sorted(ids[1:99])  # its own history, each delivered twice now
    assert set(yielded.values()) == {2}


# =========================================================================== docs/queue.md


def _run(*args: str, timeout: float = WAIT_S) -> str:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@contextlib.contextmanager
def _worker(store_path: str, name: str, *extra: str) -> Iterator[list[str]]:
    """Run docs/examples/queue_worker.py for the ``with`` block, then stop it with SIGTERM
    (it must exit cleanly); the list receives its output lines."""
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "queue_worker.py"), store_path, name, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        yield lines
    except BaseException:
        proc.kill()
        proc.communicate(timeout=WAIT_S)
        raise
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, stderr
    lines.extend(stdout.splitlines())
    lines.extend(stderr.splitlines())


def _killed_mid_job(store_path: str) -> None:
    """Run a slow worker-1 and SIGKILL it while it works on its first job of the batch."""
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "queue_worker.py"), store_path, "worker-1",
         "--seconds-per-job", "30"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("working on")
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT_S)


def test_queue_doc_shows_the_example_files_verbatim() -> None:
    blocks = h.doc_blocks(ROOT / "docs" / "queue.md")
    shown = {name: code for name, _, code in blocks if name is not None}
    assert sorted(shown) == sorted(
        f"docs/examples/{p.name}" for p in EXAMPLES.glob("queue_*.py")
    ), "every example script is shown in docs/queue.md"
    for name, code in shown.items():
        assert code == (ROOT / name).read_text(), f"docs/queue.md shows an outdated {name}"


def test_queue_doc_snippets_run(tmp_path: Path) -> None:
    for name, lang, code in h.doc_blocks(ROOT / "docs" / "queue.md"):
        if name is None and lang == "python":
            script = tmp_path / "snippet.py"
            script.write_text(code)
            _run(str(script))


@pytest.mark.slow
def test_queue_doc_example_runs(tmp_path: Path) -> None:
    """The scenario docs/queue.md walks through, with its scripts."""
    store_path = str(tmp_path / "queue-demo")
    producer = str(EXAMPLES / "queue_producer.py")
    dead_letters = str(EXAMPLES / "queue_dead_letters.py")

    # Producer, worker, a poison job dead-lettered after 3 failed deliveries.
    assert "added 20 jobs" in _run(producer, store_path, "20", "--poison")
    with (
        _worker(store_path, "worker-1", "--claim-idle-ms", "300") as lines,
        rstore.Store(store_path) as store,
    ):
        wait_for(
            lambda: _drained(store) and store.xlen(h.DEAD_LETTER) == 1,
            "the worker to finish",
            interval=0.05,
        )
    assert len([line for line in lines if line.startswith("done")]) == 20, lines
    assert any("dead-lettered" in line for line in lines), lines
    report = _run(dead_letters, store_path)
    assert "1 dead letter" in report and "deliveries=4" in report, report
    assert "pending=0" in report, report

    # Requeue it: it is a job again.
    assert "requeued 1" in _run(dead_letters, store_path, "--requeue")
    with rstore.Store(store_path) as store:
        assert store.xlen(h.DEAD_LETTER) == 0
        assert _group_state(store)["lag"] == 1

    # A worker killed mid-batch and restarted under its name gets its messages back first.
    restart = str(tmp_path / "restart-demo")
    _run(producer, restart, "5")
    _killed_mid_job(restart)
    with _worker(restart, "worker-1") as lines, rstore.Store(restart) as store:
        wait_for(lambda: _drained(store), "the restarted worker", interval=0.05)
    done = [line for line in lines if line.startswith("done")]
    assert len(done) == 5 and all("(delivery 2)" in line for line in done), lines

    # ... and if it never comes back, another worker claims them once idle.
    claim = str(tmp_path / "claim-demo")
    _run(producer, claim, "5")
    _killed_mid_job(claim)
    with (
        _worker(claim, "worker-2", "--claim-idle-ms", "300") as lines,
        rstore.Store(claim) as store,
    ):
        wait_for(lambda: _drained(store), "the claims of worker-2", interval=0.05)
    done = [line for line in lines if line.startswith("done")]
    assert len(done) == 5 and all("(delivery 2)" in line for line in done), lines
