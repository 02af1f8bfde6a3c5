"""Idempotent production on disk: what ``XADD ... IDMP`` remembers of each stream's producers.

The records live in the ``meta`` sub-database under ``b"idmp:"`` + the stream's u64 handle, so
a store keeps its format; DEL, RESTORE over a key and FLUSHALL remove them with the stream.
Producer IDs (pids) and idempotent IDs (iids) are binary strings of any length, longer than an
LMDB key may be: keys carry their SHA-256 instead, and the values the strings themselves.

=========================================== =============================================
key (after ``idmp:`` + u64 handle)          value
=========================================== =============================================
``s``                                       :class:`IdmpState` (7 x u64)
``p`` + sha256(pid)                         u64 iids held + the pid
``i`` + sha256(pid) + sha256(iid)           u64 sequence + u64 ms + u64 seq (entry ID) + iid
``o`` + u64 sequence                        sha256(pid) + sha256(iid) + u64 ms of the entry
``q`` + sha256(pid) + u64 sequence          nothing (the producer's iids, oldest first)
=========================================== =============================================

The sequence numbers every recorded iid of a stream in order; entry IDs grow with it, so the
``o`` records are in the order iids expire, and the ``q`` records in the order a producer's
oldest is evicted.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from rstore.model import ID
from rstore.storage.records import layout
from rstore.storage.records.txn import Txn

__all__ = [
    "IdmpState",
    "Recorded",
    "delete_all",
    "delete_everything",
    "digest",
    "forget",
    "forget_producers",
    "held",
    "lower",
    "oldest",
    "oldest_of",
    "producer_count",
    "recorded",
    "remember",
    "state_get",
    "state_put",
]

PREFIX = b"idmp:"
_META = layout.DB_META
_STATE = struct.Struct(">7Q")
_U64 = struct.Struct(">Q")
_IID_VALUE = struct.Struct(">QQQ")
_ORDER_MS = struct.Struct(">Q")
DIGEST_SIZE = 32


@dataclass
class IdmpState:
    """A stream's idempotency settings and counters (Redis 8.6's, per stream)."""

    duration: int  # seconds an iid is remembered (IDMP-DURATION)
    maxsize: int  # iids remembered per producer (IDMP-MAXSIZE)
    added: int = 0  # iids ever recorded (iids-added)
    duplicates: int = 0  # XADDs answered as duplicates (iids-duplicates)
    producers: int = 0  # producers holding iids now (pids-tracked)
    tracked: int = 0  # iids held now (iids-tracked)
    next_sequence: int = 0

    def pack(self) -> bytes:
        return _STATE.pack(
            self.duration, self.maxsize, self.added, self.duplicates, self.producers,
            self.tracked, self.next_sequence,
        )  # fmt: skip

    @classmethod
    def unpack(cls, b: bytes) -> IdmpState:
        return cls(*(int(v) for v in _STATE.unpack(b)))


@dataclass(frozen=True)
class Recorded:
    """An iid held for a producer: the entry its XADD added."""

    sequence: int
    entry_id: ID


def digest(data: bytes) -> bytes:
    """The 32 bytes that stand for a pid or an iid in keys."""
    return hashlib.sha256(data).digest()


def _stream(handle: int) -> bytes:
    return PREFIX + layout.pack_u64(handle)


def state_get(txn: Txn, handle: int) -> IdmpState | None:
    key = _stream(handle) + b"s"
    raw = txn.get(_META, key)
    return None if raw is None else txn.decode(_META, key, IdmpState.unpack, raw)


def state_put(txn: Txn, handle: int, state: IdmpState) -> None:
    txn.put(_META, _stream(handle) + b"s", state.pack())


def recorded(txn: Txn, handle: int, pid_digest: bytes, iid: bytes) -> Recorded | None:
    """The entry recorded for ``iid`` of the producer, or ``None``."""
    key = _stream(handle) + b"i" + pid_digest + digest(iid)
    raw = txn.get(_META, key)
    if raw is None:
        return None
    sequence, ms, seq = txn.decode(_META, key, _IID_VALUE.unpack_from, raw)
    if raw[_IID_VALUE.size :] != iid:
        raise txn.corrupt(_META, key, "an idempotency record holds another ID than its key's")
    return Recorded(int(sequence), (int(ms), int(seq)))


def producer_count(txn: Txn, handle: int, pid_digest: bytes) -> int:
    """How many iids the producer holds (0 when it is not tracked)."""
    key = _stream(handle) + b"p" + pid_digest
    raw = txn.get(_META, key)
    return 0 if raw is None else int(txn.decode(_META, key, _U64.unpack_from, raw)[0])


def _set_producer(txn: Txn, handle: int, pid_digest: bytes, pid: bytes, count: int) -> None:
    key = _stream(handle) + b"p" + pid_digest
    if count:
        txn.put(_META, key, _U64.pack(count) + pid)
    else:
        txn.delete(_META, key)


def remember(
    txn: Txn, handle: int, pid: bytes, iid: bytes, entry_id: ID, sequence: int, count: int
) -> None:
    """Record ``iid`` of ``pid`` (which held ``count`` iids) as the entry ``entry_id``."""
    base = _stream(handle)
    pid_digest, iid_digest = digest(pid), digest(iid)
    order = _U64.pack(sequence)
    txn.put(
        _META, base + b"i" + pid_digest + iid_digest, _IID_VALUE.pack(sequence, *entry_id) + iid
    )
    txn.put(_META, base + b"o" + order, pid_digest + iid_digest + _ORDER_MS.pack(entry_id[0]))
    txn.put(_META, base + b"q" + pid_digest + order, b"")
    _set_producer(txn, handle, pid_digest, pid, count + 1)


def oldest(txn: Txn, handle: int) -> Iterator[tuple[int, bytes, bytes, int]]:
    """The stream's iids, oldest first: ``(sequence, pid digest, iid digest, entry ms)``."""
    prefix = _stream(handle) + b"o"
    for key, value in txn.items(_META, prefix):
        pid_digest, iid_digest = value[:DIGEST_SIZE], value[DIGEST_SIZE : 2 * DIGEST_SIZE]
        (ms,) = _ORDER_MS.unpack_from(value, 2 * DIGEST_SIZE)
        yield int(_U64.unpack_from(key, len(prefix))[0]), pid_digest, iid_digest, int(ms)


def oldest_of(txn: Txn, handle: int, pid_digest: bytes) -> int | None:
    """The sequence of the producer's oldest iid, or ``None``."""
    prefix = _stream(handle) + b"q" + pid_digest
    for key, _ in txn.items(_META, prefix):
        return int(_U64.unpack_from(key, len(prefix))[0])
    return None


def forget(txn: Txn, handle: int, sequence: int) -> bytes:
    """Remove the iid recorded under ``sequence``; the digest of its producer, whose count the
    caller lowers (:func:`producer_count`, :func:`lower`)."""
    base = _stream(handle)
    order_key = base + b"o" + _U64.pack(sequence)
    raw = txn.get(_META, order_key)
    if raw is None:
        raise txn.corrupt(_META, order_key, "an idempotency record is missing")
    pid_digest, iid_digest = raw[:DIGEST_SIZE], raw[DIGEST_SIZE : 2 * DIGEST_SIZE]
    txn.delete(_META, order_key)
    txn.delete(_META, base + b"q" + pid_digest + _U64.pack(sequence))
    txn.delete(_META, base + b"i" + pid_digest + iid_digest)
    return pid_digest


def lower(txn: Txn, handle: int, pid_digest: bytes, by: int) -> bool:
    """The producer holds ``by`` iids fewer; ``True`` when it holds none any more (and is gone)."""
    key = _stream(handle) + b"p" + pid_digest
    raw = txn.get(_META, key)
    if raw is None:
        raise txn.corrupt(_META, key, "an idempotency producer record is missing")
    count = int(_U64.unpack_from(raw)[0]) - by
    _set_producer(txn, handle, pid_digest, raw[_U64.size :], max(count, 0))
    return count <= 0


def held(txn: Txn, handle: int) -> Iterator[tuple[bytes, list[tuple[bytes, ID]]]]:
    """Every producer of the stream (in digest order) with its iids, oldest first, and the
    entry each added."""
    base = _stream(handle)
    for key, value in list(txn.items(_META, base + b"p")):
        pid_digest, pid = key[len(base) + 1 :], bytes(value[_U64.size :])
        queue = base + b"q" + pid_digest
        iids = []
        for order_key, _ in list(txn.items(_META, queue)):
            sequence = order_key[len(queue) :]
            raw = txn.get(_META, base + b"o" + sequence)
            if raw is None:
                raise txn.corrupt(_META, order_key, "an idempotency record is missing")
            iid_key = base + b"i" + pid_digest + raw[DIGEST_SIZE : 2 * DIGEST_SIZE]
            iid_raw = txn.get(_META, iid_key)
            if iid_raw is None:
                raise txn.corrupt(_META, order_key, "an idempotency record is missing")
            _, ms, seq = txn.decode(_META, iid_key, _IID_VALUE.unpack_from, iid_raw)
            iids.append((bytes(iid_raw[_IID_VALUE.size :]), (int(ms), int(seq))))
        yield pid, iids


def forget_producers(txn: Txn, handle: int) -> None:
    """Every producer and iid of the stream forgotten; its state record stays."""
    base = _stream(handle)
    for kind in (b"i", b"o", b"p", b"q"):
        txn.delete_prefix(_META, base + kind)


def delete_all(txn: Txn, handle: int) -> None:
    """Everything the stream remembers (the stream is deleted)."""
    txn.delete_prefix(_META, _stream(handle))


def delete_everything(txn: Txn) -> None:
    """Every stream's records (FLUSHALL)."""
    txn.delete_prefix(_META, PREFIX)
