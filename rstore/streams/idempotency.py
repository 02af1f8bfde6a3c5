"""Idempotent production (Redis 8.6): ``XADD ... IDMP pid iid`` / ``IDMPAUTO pid``, XCFGSET and
the idempotency fields of XINFO STREAM.

A producer (pid) tags each XADD with an idempotent ID (iid), or lets it be derived from the
entry's fields and values (IDMPAUTO).  The stream remembers, per producer, the iids of its
last XADDs and the entries they added: an XADD whose (pid, iid) is remembered adds nothing
and answers the first one's ID -- a retry after a crash or a lost reply is not stored twice.
The memory is bounded as in Redis: at most ``maxsize`` iids per producer (the oldest goes
first) and for ``duration`` seconds after its entry's time (an iid whose entry ID's
milliseconds are at most now - duration is forgotten; Redis forgets them in a once-a-second
sweep, rstore when the stream's idempotency state is next used, and XINFO leaves them out).

Unlike a server's memory, this state is in the store: it survives restarts and is shared by
every process, in the same transaction as the entry, so a producer that crashed after its
XADD committed gets the same ID back when it retries.  It is not in RDB files (``docs/rdb.md``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rstore.ids import ID
from rstore.model import IdempotencyInfo, IdempotentProducer, StreamIdempotency
from rstore.storage.records import idmp_records as records
from rstore.storage.records.idmp_records import IdmpState
from rstore.storage.records.txn import Txn

__all__ = [
    "Producer",
    "auto_iid",
    "configure",
    "duplicate_of",
    "forget_stream",
    "info",
    "load",
    "record",
    "recorded_entry",
    "snapshot",
]

MAX_DURATION = 86400
MAX_MAXSIZE = 10000
_MOD = 1 << 256


@dataclass(frozen=True)
class Producer:
    """XADD's IDMP / IDMPAUTO option: the producer, and the iid (``None`` for IDMPAUTO)."""

    pid: bytes
    iid: bytes | None

    def iid_for(self, fields_values: Sequence[bytes]) -> bytes:
        return self.iid if self.iid is not None else auto_iid(fields_values)


def auto_iid(fields_values: Sequence[bytes]) -> bytes:
    """IDMPAUTO's iid: a digest of the field-value pairs that does not depend on their order
    (the sum of each pair's SHA-256, the field's length framing it).  Redis derives its own
    from XXH3; the value is never visible but in its files, which do not carry rstore's."""
    total = 0
    for i in range(0, len(fields_values), 2):
        field, value = fields_values[i], fields_values[i + 1]
        pair = hashlib.sha256(len(field).to_bytes(8, "big") + field + value).digest()
        total = (total + int.from_bytes(pair, "big")) % _MOD
    return b"auto:" + total.to_bytes(32, "big")


def settings(txn: Txn, handle: int) -> IdmpState:
    """The stream's state; a stream that never used idempotency has the store's settings."""
    state = records.state_get(txn, handle)
    if state is None:
        config = txn.config()
        state = IdmpState(config.idmp_duration, config.idmp_maxsize)
    return state


def _expired(txn: Txn, handle: int, state: IdmpState, now_ms: int) -> list[tuple[int, bytes]]:
    """``(sequence, pid digest)`` of the iids whose time is over, oldest first."""
    if not state.tracked:
        return []
    cutoff = now_ms - state.duration * 1000
    out = []
    for sequence, pid_digest, _, ms in records.oldest(txn, handle):
        if ms > cutoff:
            break
        out.append((sequence, pid_digest))
    return out


def _expire(txn: Txn, handle: int, state: IdmpState, now_ms: int) -> None:
    """Forget the iids whose time is over (the caller writes ``state`` back)."""
    expired = _expired(txn, handle, state, now_ms)
    for pid_digest, count in Counter(records.forget(txn, handle, s) for s, _ in expired).items():
        if records.lower(txn, handle, pid_digest, count):
            state.producers -= 1
    state.tracked -= len(expired)


def duplicate_of(txn: Txn, handle: int, pid: bytes, iid: bytes, now_ms: int) -> ID | None:
    """The entry ID that an earlier XADD of ``iid`` by ``pid`` added, counted as a duplicate,
    or ``None`` when it is not remembered (iids whose time is over are forgotten first)."""
    return _find(txn, handle, pid, iid, now_ms, duplicate=True)


def recorded_entry(txn: Txn, handle: int, pid: bytes, iid: bytes, now_ms: int) -> ID | None:
    """The entry ``pid``'s ``iid`` is recorded for, or ``None`` (XIDMPRECORD: no duplicate is
    counted; iids whose time is over are forgotten first)."""
    return _find(txn, handle, pid, iid, now_ms, duplicate=False)


def _find(
    txn: Txn, handle: int, pid: bytes, iid: bytes, now_ms: int, *, duplicate: bool
) -> ID | None:
    state = records.state_get(txn, handle)
    if state is None:
        return None
    _expire(txn, handle, state, now_ms)
    found = records.recorded(txn, handle, records.digest(pid), iid)
    if found is not None and duplicate:
        state.duplicates += 1
    records.state_put(txn, handle, state)
    return None if found is None else found.entry_id


def record(txn: Txn, handle: int, pid: bytes, iid: bytes, entry_id: ID) -> None:
    """Remember that ``pid``'s ``iid`` added ``entry_id``; the producer's oldest iid goes when
    it holds more than ``maxsize``."""
    state = settings(txn, handle)
    pid_digest = records.digest(pid)
    count = records.producer_count(txn, handle, pid_digest)
    if not count:
        state.producers += 1
    records.remember(txn, handle, pid, iid, entry_id, state.next_sequence, count)
    state.next_sequence += 1
    state.added += 1
    state.tracked += 1
    if count + 1 > state.maxsize:
        oldest = records.oldest_of(txn, handle, pid_digest)
        assert oldest is not None  # the producer holds count + 1 > 0 iids
        records.forget(txn, handle, oldest)
        records.lower(txn, handle, pid_digest, 1)
        state.tracked -= 1
    records.state_put(txn, handle, state)


def configure(txn: Txn, handle: int, duration: int | None, maxsize: int | None) -> None:
    """XCFGSET: new settings; a change forgets every producer (the counters stay)."""
    state = settings(txn, handle)
    wanted = (
        state.duration if duration is None else duration,
        state.maxsize if maxsize is None else maxsize,
    )
    if wanted == (state.duration, state.maxsize):
        return
    records.forget_producers(txn, handle)
    state.duration, state.maxsize = wanted
    state.producers = state.tracked = 0
    records.state_put(txn, handle, state)


def info(txn: Txn, handle: int, now_ms: int) -> IdempotencyInfo:
    """XINFO STREAM's view: iids whose time is over are left out (read-only)."""
    state = settings(txn, handle)
    expired = _expired(txn, handle, state, now_ms)
    gone = 0
    for pid_digest, count in Counter(p for _, p in expired).items():
        if records.producer_count(txn, handle, pid_digest) <= count:
            gone += 1
    return IdempotencyInfo(
        state.duration, state.maxsize, state.producers - gone, state.tracked - len(expired),
        state.added, state.duplicates,
    )  # fmt: skip


def snapshot(txn: Txn, handle: int, now_ms: int) -> StreamIdempotency:
    """What RDB 13 keeps of the stream (its settings, counters, and the iids held, those whose
    time is over left out, as Redis 8.6 saves them), producers by pid."""
    state = settings(txn, handle)
    cutoff = now_ms - state.duration * 1000
    producers = []
    for pid, iids in records.held(txn, handle):
        kept = tuple((iid, entry_id) for iid, entry_id in iids if entry_id[0] > cutoff)
        if kept:
            producers.append(IdempotentProducer(pid, kept))
    producers.sort(key=lambda p: p.pid)
    return StreamIdempotency(
        state.duration, state.maxsize, tuple(producers), state.added, state.duplicates
    )


def load(txn: Txn, handle: int, saved: StreamIdempotency) -> None:
    """Take a stream's idempotency from a file (RDB 13): the settings and counters, and each
    producer's iids, oldest first (a producer keeps its newest ``maxsize``).  Recorded in the
    order of their entries, which is the order they expire in."""
    records.forget_producers(txn, handle)
    records.state_put(txn, handle, IdmpState(saved.duration, saved.maxsize))
    held = sorted(
        ((entry_id, place, p.pid, iid) for p in saved.producers
         for place, (iid, entry_id) in enumerate(p.entries)),
    )  # fmt: skip
    for entry_id, _, pid, iid in held:
        record(txn, handle, pid, iid, entry_id)
    state = settings(txn, handle)
    state.added, state.duplicates = saved.added, saved.duplicates
    records.state_put(txn, handle, state)


def forget_stream(txn: Txn, handle: int) -> None:
    """Everything the stream remembers, removed (the stream is deleted)."""
    records.delete_all(txn, handle)
