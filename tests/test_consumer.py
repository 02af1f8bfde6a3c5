"""``rstore.Consumer`` in one process: what it hands out, with which delivery count, when other
consumers act on the same messages between its steps.

The interleavings are forced, not hoped for: :class:`Interleave` runs another consumer's action
right after the Consumer's write transaction that made a condition true (a claim, a history
read) and before the Consumer's next step -- whatever that step is.  The interfering action is
what a live consumer may do at any moment: acknowledge a message it was slow to finish, or claim
one.  Under 326 SIGKILLs, one message in 9,144 was once handed to a handler with
``deliveries=1`` after its previous owner had acknowledged it, in exactly this window.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore

STREAM = b"jobs"
GROUP = b"workers"
DEAD = b"jobs:dead"
IDLE_MS = 60_000  # how long the interesting message has been idle
CLAIM_IDLE_MS = 30_000
WAIT_S = 30.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "store") as s:
        s.xgroup_create(STREAM, GROUP, "0", mkstream=True)
        yield s


class Interleave:
    """Run ``action`` once, right after the first write transaction on ``store``'s directory
    (by any Store of this process) that commits while ``ready()`` holds."""

    def __init__(self, ready: Callable[[], bool], action: Callable[[], Any]) -> None:
        self.ready = ready
        self.action = action
        self.fired = False

    @contextlib.contextmanager
    def on(self, store: rstore.Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        env = store._live_env()
        original = env.write

        def write(fn: Callable[[Any], Any], *rest: Any) -> Any:
            result = original(fn, *rest)
            if not self.fired and self.ready():
                self.fired = True
                self.action()
            return result

        with monkeypatch.context() as patch:
            patch.setattr(env, "write", write)
            yield


def pending(store: rstore.Store, entry_id: bytes) -> dict[str, Any] | None:
    rows = store.xpending_range(STREAM, GROUP, entry_id, entry_id, 1)
    return rows[0] if rows else None


def owned_by(store: rstore.Store, entry_id: bytes, name: bytes) -> bool:
    row = pending(store, entry_id)
    return row is not None and row["consumer"] == name


def delivered_to(
    store: rstore.Store, owner: str, *, times: int = 1, idle_ms: int = IDLE_MS
) -> bytes:
    """A new message, delivered to ``owner`` ``times`` times and idle for ``idle_ms``."""
    entry_id: bytes = store.xadd(STREAM, {"job": "resize"})
    store.xreadgroup(GROUP, owner, {STREAM: ">"}, count=1)
    store.xclaim(STREAM, GROUP, owner, 0, [entry_id], idle=idle_ms, retrycount=times)
    return entry_id


def consume(consumer: rstore.Consumer, *, until: Callable[[], bool]) -> list[rstore.Message]:
    """What ``consumer.messages()`` yields until ``until()`` holds (checked by a watcher)."""

    def watch() -> None:
        deadline = time.monotonic() + WAIT_S
        while not until() and time.monotonic() < deadline:
            time.sleep(0.01)
        consumer.stop()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    got = list(consumer.messages())
    watcher.join(WAIT_S)
    return got


def make_consumer(store: rstore.Store, name: str, **options: Any) -> rstore.Consumer:
    settings: dict[str, Any] = {"count": 10, "block_ms": 20, "claim_idle_ms": CLAIM_IDLE_MS}
    settings.update(options)
    return rstore.Consumer(store, STREAM, GROUP, name, **settings)


# ============================================================================ the race


def test_claimed_message_acked_by_its_previous_owner_is_not_handed_out(
    store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 8: "a" is slow and acknowledges its message right after "b" claimed it."""
    m = delivered_to(store, "a")
    b = make_consumer(store, "b")
    race = Interleave(lambda: owned_by(store, m, b"b"), lambda: store.xack(STREAM, GROUP, m))
    with race.on(store, monkeypatch):
        got = consume(b, until=lambda: race.fired)
    assert race.fired
    assert [(msg.id, msg.deliveries) for msg in got] == []
    assert pending(store, m) is None
    assert store.check() == []


def test_claimed_message_claimed_by_another_consumer_is_not_handed_out(
    store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after "b" claimed it, "c" claims it too: "c" owns it now, "b" must not run it."""
    m = delivered_to(store, "a")
    b = make_consumer(store, "b")
    race = Interleave(
        lambda: owned_by(store, m, b"b"), lambda: store.xclaim(STREAM, GROUP, "c", 0, [m])
    )
    with race.on(store, monkeypatch):
        got = consume(b, until=lambda: race.fired)
    assert race.fired
    assert [(msg.id, msg.deliveries) for msg in got] == []
    assert (pending(store, m) or {}).get("consumer") == b"c"


def test_history_message_acked_meanwhile_is_not_handed_out(
    store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "b" restarts; right after its history read, an earlier "b" still running (two processes
    under one name) acknowledges the message."""
    m = delivered_to(store, "b")
    b = make_consumer(store, "b", claim_idle_ms=None)
    race = Interleave(
        lambda: (pending(store, m) or {}).get("times_delivered") == 2,
        lambda: store.xack(STREAM, GROUP, m),
    )
    with race.on(store, monkeypatch):
        got = consume(b, until=lambda: race.fired)
    assert race.fired
    assert [(msg.id, msg.deliveries) for msg in got] == []
    assert pending(store, m) is None


def test_history_message_claimed_away_meanwhile_is_not_handed_out(
    store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = delivered_to(store, "b")
    b = make_consumer(store, "b", claim_idle_ms=None)
    race = Interleave(
        lambda: (pending(store, m) or {}).get("times_delivered") == 2,
        lambda: store.xclaim(STREAM, GROUP, "c", 0, [m]),
    )
    with race.on(store, monkeypatch):
        got = consume(b, until=lambda: race.fired)
    assert race.fired
    assert [(msg.id, msg.deliveries) for msg in got] == []
    assert (pending(store, m) or {}).get("consumer") == b"c"


def test_poison_message_acked_by_its_previous_owner_is_neither_handed_out_nor_dead_lettered(
    store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delivered 5 times with ``max_deliveries=3``: the claim makes it the 6th delivery, a
    dead-letter case -- but its previous owner finally acknowledged it right after the claim."""
    m = delivered_to(store, "a", times=5)
    b = make_consumer(store, "b", max_deliveries=3, dead_letter=DEAD)
    race = Interleave(lambda: owned_by(store, m, b"b"), lambda: store.xack(STREAM, GROUP, m))
    with race.on(store, monkeypatch):
        got = consume(b, until=lambda: race.fired)
    assert race.fired
    assert [(msg.id, msg.deliveries) for msg in got] == []
    assert store.exists(DEAD) == 0
    assert pending(store, m) is None


# ============================================================================ delivery counts


def test_claimed_message_carries_the_count_its_claim_set(store: rstore.Store) -> None:
    m = delivered_to(store, "a", times=3)
    b = make_consumer(store, "b")
    got = consume(b, until=lambda: owned_by(store, m, b"b"))
    assert [(msg.id, msg.deliveries) for msg in got] == [(m, 4)]
    assert got[0].fields == {b"job": b"resize"}
    row = pending(store, m)
    assert row is not None and (row["consumer"], row["times_delivered"]) == (b"b", 4)


def test_restart_hands_back_own_messages_with_raised_counts_and_drops_deleted_ones(
    store: rstore.Store,
) -> None:
    """A restarted "b" gets its own pending messages first (history read), each delivered once
    more; a message deleted from the stream meanwhile is acknowledged, not handed out."""
    kept = [delivered_to(store, "b", times=n, idle_ms=0) for n in (1, 2)]
    deleted = delivered_to(store, "b", idle_ms=0)
    later = delivered_to(store, "b", times=4, idle_ms=0)
    store.xdel(STREAM, deleted)
    b = make_consumer(store, "b", count=1, claim_idle_ms=None)  # one history entry per read
    got = consume(b, until=lambda: (pending(store, later) or {}).get("times_delivered") == 5)
    assert [(msg.id, msg.deliveries) for msg in got] == [(kept[0], 2), (kept[1], 3), (later, 5)]
    assert pending(store, deleted) is None
    assert store.check() == []


def test_new_messages_are_first_deliveries(store: rstore.Store) -> None:
    ids = [store.xadd(STREAM, {"n": n}) for n in range(3)]
    b = make_consumer(store, "b")
    got = consume(b, until=lambda: store.xpending(STREAM, GROUP)["pending"] == 3)
    assert [(msg.id, msg.deliveries) for msg in got] == [(i, 1) for i in ids]


# ============================================================================ dead letters


def test_poison_message_is_dead_lettered_with_the_count_of_its_claim(store: rstore.Store) -> None:
    m = delivered_to(store, "a", times=3)
    b = make_consumer(store, "b", max_deliveries=3, dead_letter=DEAD)
    got = consume(b, until=lambda: store.exists(DEAD) == 1)
    assert got == []
    [(_, fields)] = store.xrange(DEAD)
    assert fields == {
        b"job": b"resize",
        b"rstore:stream": STREAM,
        b"rstore:group": GROUP,
        b"rstore:id": m,
        b"rstore:deliveries": b"4",
        b"rstore:reason": b"delivered 4 times",
    }
    assert pending(store, m) is None


def test_dead_letter_moves_only_a_message_still_pending_to_the_consumer(
    store: rstore.Store,
) -> None:
    first, second = (store.xadd(STREAM, {"n": n}) for n in range(2))
    b = make_consumer(store, "b", dead_letter=DEAD)
    messages = b.messages()
    one, two = next(messages), next(messages)
    assert (one.id, two.id) == (first, second)
    store.xack(STREAM, GROUP, first)  # acknowledged meanwhile
    assert b.dead_letter(one, "bad") is False
    assert store.exists(DEAD) == 0
    store.xclaim(STREAM, GROUP, "c", 0, [second])  # claimed by another consumer meanwhile
    assert b.dead_letter(two, "bad") is False
    assert store.exists(DEAD) == 0
    store.xclaim(STREAM, GROUP, "b", 0, [second])  # back to "b"
    assert b.dead_letter(two, "bad") is True
    assert [f[b"rstore:id"] for _, f in store.xrange(DEAD)] == [second]
    assert store.xpending(STREAM, GROUP)["pending"] == 0


def test_a_message_delivered_again_is_dead_lettered_once(store: rstore.Store) -> None:
    """The dead-letter XADD is idempotent: after XGROUP SETID moved the group back, the message
    comes again; dead-lettering it again acknowledges it and adds nothing."""
    m = store.xadd(STREAM, {"n": 1})
    b = make_consumer(store, "b", dead_letter=DEAD)
    assert b.dead_letter(next(b.messages()), "bad") is True
    store.xgroup_setid(STREAM, GROUP, "0")
    again = next(b.messages())
    assert again.id == m
    assert b.dead_letter(again, "bad again") is True
    assert [f[b"rstore:reason"] for _, f in store.xrange(DEAD)] == [b"bad"]
    assert store.xpending(STREAM, GROUP)["pending"] == 0
    assert store.xinfo_stream(DEAD)["iids-duplicates"] == 1


def test_refused_dead_letter_writes_nothing_and_leaves_the_message_pending(
    store: rstore.Store,
) -> None:
    """An XADD the dead-letter stream refuses (it has used up every ID) must not lose the
    message: the acknowledgement is in the same transaction and is undone with it."""
    store.xadd(DEAD, {"x": 1}, id="18446744073709551615-18446744073709551615")
    m = store.xadd(STREAM, {"n": 1})
    b = make_consumer(store, "b", dead_letter=DEAD)
    msg = next(b.messages())
    with pytest.raises(rstore.ResponseError, match="exhausted the last possible ID"):
        b.dead_letter(msg, "bad")
    assert owned_by(store, m, b"b")
    assert store.xlen(DEAD) == 1


def test_count_must_be_positive(store: rstore.Store) -> None:
    with pytest.raises(ValueError, match="count must be at least 1"):
        make_consumer(store, "b", count=0)


def test_a_consumer_on_a_decoding_store_deals_in_bytes(tmp_path: Path) -> None:
    """A Store opened with decode_responses=True (as most redis-py code is) still gives the
    Consumer bytes everywhere; its claim cursor once compared str with bytes and re-ran
    XAUTOCLAIM on every loop."""
    with rstore.Store(tmp_path / "store", decode_responses=True) as s:
        ids = [s.xadd(STREAM, {"n": str(i)}) for i in range(3)]
        consumer = rstore.Consumer(s, STREAM, GROUP, "w1", block_ms=50, claim_idle_ms=10_000)
        seen: list[rstore.Message] = []

        def handle(msg: rstore.Message) -> None:
            seen.append(msg)
            if len(seen) == 3:
                consumer.stop()

        consumer.run(handle)
        assert [m.id for m in seen] == [i.encode() for i in ids]
        assert [m.fields for m in seen] == [{b"n": str(i).encode()} for i in range(3)]
        assert all(isinstance(m.stream, bytes) for m in seen)
        assert s.xpending(STREAM, GROUP)["pending"] == 0


def test_a_second_ctrl_c_gives_the_message_back_at_once(store: rstore.Store) -> None:
    """XNACK SILENT: released, one delivery less, and the next claim of another worker takes
    it without waiting claim_idle_ms."""
    m = store.xadd(STREAM, {"n": 1})
    b = make_consumer(store, "b")

    def interrupted(msg: rstore.Message) -> None:
        raise KeyboardInterrupt

    b.run(interrupted)
    [pending] = store.xpending_range(STREAM, GROUP, "-", "+", 10)
    assert (pending["message_id"], pending["consumer"], pending["times_delivered"]) == (m, b"", 0)
    c = make_consumer(store, "c", claim_idle_ms=3_600_000)
    msg = next(c.messages())
    assert (msg.id, msg.deliveries) == (m, 1)


def test_nack_fatal_marks_a_poison_message(store: rstore.Store) -> None:
    m = store.xadd(STREAM, {"n": 1})
    b = make_consumer(store, "b", dead_letter=DEAD, max_deliveries=5)
    assert b.nack(next(b.messages()), mode="FATAL") == 1
    c = make_consumer(store, "c", dead_letter=DEAD, max_deliveries=5, claim_idle_ms=3_600_000)
    handed = consume(c, until=lambda: store.exists(DEAD) == 1)
    assert handed == []  # dead-lettered at its next delivery, never handed out
    assert [f[b"rstore:id"] for _, f in store.xrange(DEAD)] == [m]
