"""The on-disk layout: sub-database names, key schemas and fixed-layout records.

Pure code (no lmdb): it only turns records into bytes and back, so ``docs/format.md`` can
describe every byte and tests can check it.  All integers are big-endian.

======== ============================================ =========================================
sub-db   key                                          value (then the checksum, format 2)
======== ============================================ =========================================
meta     ``b"format"``                                 magic ``b"rstore"`` + u32 format version
meta     ``b"config"``                                 u64 node_max_bytes, u64 node_max_entries
                                                      [, u8 flags, u64 idmp duration, u64 maxsize]
meta     ``b"idmp:"`` + u64 handle + kind + ...          a stream's idempotency records
                                                      (:mod:`rstore.storage.records.idmp_records`)
meta     ``b"next_handle"``                            u64 next free stream handle
keys     u64 crc64(name) + name (or + sha256(name))    u8 type, u8 flags, u64 handle [+ name]
streams  u64 handle                                    :class:`StreamMeta` (104 bytes; 96
                                                      before format 4: no byte count)
nodes    u64 handle + u64 master ms + u64 master seq   the node listpack, byte-identical to Redis
groups   u64 stream handle + group name                :class:`GroupMeta`
consumers u64 group handle + consumer name             :class:`ConsumerMeta`
pel      u64 group handle + entry ID                   delivery time, count, owner
consumer_pel  group handle + u16 len + name + ID       nothing (an index)
======== ============================================ =========================================

**Checksums (format 2).**  Every value but the format record ends with a u32 big-endian
CRC-32 (zlib's) of the key followed by the value: :func:`seal` adds it, :func:`unseal` checks and
removes it.  Covering the key too means a record that moved, or whose key was damaged, does not
pass.  The node listpack itself stays byte-identical to Redis's; the checksum sits after it.
Format 1 stores (no checksums) are read; the first open that may write one seals every record
(:mod:`rstore.storage.engine.upgrade`).

The key name is prefixed with its CRC64 so the keyspace is ordered by a stable hash: SCAN's
cursor is that hash (a plain integer, stateless, with Redis's guarantee that keys present for
the whole iteration are returned).  Names too long for an LMDB key are stored as their SHA-256
with the full name in the value.
"""

from __future__ import annotations

import functools
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from rstore.codec.crc64 import crc64
from rstore.model import ID, INVALID_ENTRIES_READ, ConsumerState, GroupState, StreamState

FORMAT_MAGIC = b"rstore"
FORMAT_VERSION = 4
#: The first format with checksums (format 1, without, is read, and sealed when upgraded).
FIRST_SEALED_FORMAT = 2
#: The first format written through the write-ahead log (``wal.log``): the only one written;
#: a store of an older format is read, and upgraded by the first open that may write it.
FIRST_LOGGED_FORMAT = 3
#: The first format whose stream records may count the bytes of their nodes
#: (:attr:`StreamMeta.node_bytes`); a format-3 store becomes format 4 by recording it.
FIRST_COUNTED_FORMAT = 4

DB_META = b"meta"
DB_KEYS = b"keys"
DB_STREAMS = b"streams"
DB_NODES = b"nodes"
DB_GROUPS = b"groups"
DB_CONSUMERS = b"consumers"
DB_PEL = b"pel"
DB_CONSUMER_PEL = b"consumer_pel"
ALL_DBS = (DB_META, DB_KEYS, DB_STREAMS, DB_NODES, DB_GROUPS, DB_CONSUMERS, DB_PEL, DB_CONSUMER_PEL)
DATA_DBS = ALL_DBS[1:]  # everything FLUSHALL empties

META_FORMAT = b"format"
META_CONFIG = b"config"
META_NEXT_HANDLE = b"next_handle"
#: ``Store.append_entries(batch=(name, number))``: the last batch number applied per name.
META_BATCH_PREFIX = b"batch:"
#: The longest batch name (LMDB keys are at most 511 bytes).
MAX_BATCH_NAME = 400
#: ``Store.append_entries(bookmark=(name, value))``: a replay's position per name (raw bytes);
#: the key keeps the name it had before bookmarks were renamed (docs/format.md#meta).
META_BOOKMARK_PREFIX = b"checkpoint:"
#: The largest bookmark value, in bytes.
MAX_BOOKMARK_VALUE = 1 << 20

TYPE_STREAM = 1
TYPE_NAMES = {TYPE_STREAM: "stream"}

KEY_FLAG_LONG = 1
# LMDB's default maximum key size is 511 bytes; names longer than this are hashed.
MAX_INLINE_NAME = 480

DEFAULT_NODE_MAX_BYTES = 4096
DEFAULT_NODE_MAX_ENTRIES = 100
#: Redis 8.6's ``stream-idmp-duration`` (seconds) and ``stream-idmp-maxsize`` (IDs per producer)
DEFAULT_IDMP_DURATION = 100
DEFAULT_IDMP_MAXSIZE = 100
_IDMP_DEFAULTS = (DEFAULT_IDMP_DURATION, DEFAULT_IDMP_MAXSIZE)

_U64 = struct.Struct(">Q")


def _sha256(name: bytes) -> bytes:
    """SHA-256 of a long name (hashlib loaded on first use: long names are rare, and every
    CLI start would pay for it)."""
    import hashlib  # noqa: PLC0415

    return hashlib.sha256(name).digest()


#: An entry ID as 16 big-endian bytes (ms, seq): ``ID_PACK(ms, seq)``.
ID_PACK = struct.Struct(">QQ").pack
_KEYREC = struct.Struct(">BBQ")
_CONFIG = struct.Struct(">QQ")
_CONFIG_MORE = struct.Struct(">BQQ")  # flags, idmp duration, idmp maxsize
_CONFIG_NO_COMPRESSION = 1  # the flags byte of the config record
_FORMAT = struct.Struct(">6sI")
_META = struct.Struct(">13Q")
_META_UNCOUNTED = struct.Struct(">12Q")  # written before format 4, and for an uncounted stream


#: A u64, big-endian (the struct's own method: no Python call on the write path).
pack_u64: Callable[[int], bytes] = _U64.pack
#: The u64 that starts a key (a handle), as a 1-tuple (the struct's own method, likewise).
unpack_u64_from: Callable[[bytes], tuple[int]] = _U64.unpack_from


def unpack_u64(b: bytes) -> int:
    return int(_U64.unpack(b)[0])


# ----------------------------------------------------------------------------- format / config


_CHECKSUM = struct.Struct(">I")
CHECKSUM_SIZE = _CHECKSUM.size


def seal_py(key: bytes, payload: bytes | bytearray) -> bytes:
    """The stored value of ``payload`` under ``key``: the payload, then CRC-32(key + payload)
    (the reference of :func:`seal`)."""
    return bytes(payload) + _CHECKSUM.pack(zlib.crc32(payload, zlib.crc32(key)))


def unseal_py(key: bytes | memoryview, value: bytes | memoryview) -> bytes | None:
    """The payload of a stored value (a copy: ``value`` may be a view into LMDB's map), or
    ``None`` when its checksum does not match (the reference of :func:`unseal`)."""
    end = len(value) - CHECKSUM_SIZE
    if end < 0:
        return None
    view = memoryview(value)
    if zlib.crc32(view[:end], zlib.crc32(key)) != _CHECKSUM.unpack_from(view, end)[0]:
        return None
    return bytes(view[:end])


#: :func:`seal_py` and :func:`unseal_py`, in C when ``rstore/storage/records/_sealed.c`` is
#: built (and ``RSTORE_NO_SPEEDUPS`` is not set): the same bytes (tests/storage/test_sealed.py).
seal: Callable[[bytes, bytes | bytearray], bytes] = seal_py
unseal: Callable[[bytes | memoryview, bytes | memoryview], bytes | None] = unseal_py
#: ``pop_sealed(raw, db, keys) -> (payloads, damaged)`` of the same module: each sealed record
#: checked with :func:`unseal` and deleted, in one call (:meth:`Txn.pop_many
#: <rstore.storage.records.txn.Txn.pop_many>`); ``None`` where the records are popped one by one.
pop_sealed: Callable[..., tuple[list[bytes | None], int]] | None = None
if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    try:
        from rstore.storage.records import _sealed  # type: ignore[attr-defined]
    except ImportError:  # not built: sealed in Python
        pass
    else:
        seal, unseal, pop_sealed = _sealed.seal, _sealed.unseal, _sealed.pop_sealed


def pack_format(version: int = FORMAT_VERSION) -> bytes:
    return _FORMAT.pack(FORMAT_MAGIC, version)


def unpack_format(b: bytes) -> int | None:
    """The format version, or ``None`` when the record is not an rstore format record."""
    if len(b) != _FORMAT.size:
        return None
    magic, version = _FORMAT.unpack(b)
    return int(version) if magic == FORMAT_MAGIC else None


@dataclass(frozen=True)
class StoreConfig:
    """Per-store settings: Redis's ``stream-node-max-bytes``, ``stream-node-max-entries``,
    ``rdbcompression``, ``stream-idmp-duration`` and ``stream-idmp-maxsize``.

    The record is the two node limits, then -- only when another setting is not its default --
    a flags byte and the two idempotency settings, so a store that keeps the defaults has the
    record older rstore versions read.
    """

    node_max_bytes: int = DEFAULT_NODE_MAX_BYTES
    node_max_entries: int = DEFAULT_NODE_MAX_ENTRIES
    rdb_compression: bool = True
    idmp_duration: int = DEFAULT_IDMP_DURATION
    idmp_maxsize: int = DEFAULT_IDMP_MAXSIZE

    def pack(self) -> bytes:
        limits = _CONFIG.pack(self.node_max_bytes, self.node_max_entries)
        if self.rdb_compression and (self.idmp_duration, self.idmp_maxsize) == _IDMP_DEFAULTS:
            return limits
        flags = 0 if self.rdb_compression else _CONFIG_NO_COMPRESSION
        return limits + _CONFIG_MORE.pack(flags, self.idmp_duration, self.idmp_maxsize)

    @classmethod
    def unpack(cls, b: bytes) -> StoreConfig:
        max_bytes, max_entries = _CONFIG.unpack_from(b)
        if len(b) == _CONFIG.size:
            return cls(int(max_bytes), int(max_entries))
        flags, duration, maxsize = _CONFIG_MORE.unpack(b[_CONFIG.size :])
        if flags & ~_CONFIG_NO_COMPRESSION:
            raise ValueError("unknown store settings")
        compression = not flags & _CONFIG_NO_COMPRESSION
        return cls(int(max_bytes), int(max_entries), compression, int(duration), int(maxsize))


# ----------------------------------------------------------------------------- keys


def key_hash(name: bytes) -> int:
    """The 64-bit hash that orders the keyspace (and is SCAN's cursor)."""
    return crc64(name)


def key_db_key(name: bytes, h: int | None = None) -> bytes:
    """The ``keys`` sub-db key of ``name``."""
    if h is None:
        h = crc64(name)
    if len(name) <= MAX_INLINE_NAME:
        return _U64.pack(h) + name
    return _U64.pack(h) + _sha256(name)


@dataclass(frozen=True)
class KeyRecord:
    """What the keyspace knows of a key: its type and the handle of its data."""

    type: int
    handle: int


def pack_key_record(name: bytes, rec: KeyRecord) -> bytes:
    if len(name) <= MAX_INLINE_NAME:
        return _KEYREC.pack(rec.type, 0, rec.handle)
    return _KEYREC.pack(rec.type, KEY_FLAG_LONG, rec.handle) + name


def unpack_key_record(value: bytes) -> KeyRecord:
    type_, _flags, handle = _KEYREC.unpack_from(value)
    return KeyRecord(type_, handle)


def name_from_key_entry(db_key: bytes, value: bytes) -> bytes:
    """Recover the key name from a ``keys`` sub-db entry."""
    if value[1] & KEY_FLAG_LONG:
        return bytes(value[_KEYREC.size :])
    return bytes(db_key[8:])


def long_name_matches(value: bytes, name: bytes) -> bool:
    """For a hashed long name, confirm the stored full name (a SHA-256 collision is refused)."""
    return not (value[1] & KEY_FLAG_LONG) or bytes(value[_KEYREC.size :]) == name


# ----------------------------------------------------------------------------- streams


class StreamMeta:
    """Stream-level state, named after Redis's ``stream`` struct.

    Mutable: a write transaction caches it and writes it back once at commit.  ``node_bytes``
    (rstore's own) is the sum of the sizes of the stream's node listpacks, kept by the storage
    layer (:class:`~rstore.storage.records.txn.Txn`) as it writes nodes; ``None`` when not
    counted yet (a record written before format 4: counted when first asked for).
    """

    __slots__ = (
        "entries_added",
        "first_id",
        "group_count",
        "last_id",
        "length",
        "max_deleted_entry_id",
        "node_bytes",
        "node_count",
        "tail_id",
    )

    def __init__(
        self,
        length: int = 0,
        last_id: ID = (0, 0),
        first_id: ID = (0, 0),
        max_deleted_entry_id: ID = (0, 0),
        entries_added: int = 0,
        node_count: int = 0,
        tail_id: ID = (0, 0),
        group_count: int = 0,
        node_bytes: int | None = 0,
    ) -> None:
        self.length = length  # live entries
        self.last_id = last_id  # largest ID ever added (or set by XSETID)
        self.first_id = first_id  # first live entry, 0-0 when empty
        self.max_deleted_entry_id = max_deleted_entry_id  # largest ID removed by XDEL
        self.entries_added = entries_added  # all-time count of XADDs
        self.node_count = node_count  # nodes ("radix-tree-keys")
        self.tail_id = tail_id  # master ID of the last node (valid when node_count > 0)
        self.group_count = group_count  # consumer groups
        self.node_bytes = node_bytes  # listpack bytes of all nodes (None: not counted)

    def pack(self) -> bytes:
        fields = (
            self.length,
            self.last_id[0],
            self.last_id[1],
            self.first_id[0],
            self.first_id[1],
            self.max_deleted_entry_id[0],
            self.max_deleted_entry_id[1],
            self.entries_added,
            self.node_count,
            self.tail_id[0],
            self.tail_id[1],
            self.group_count,
        )
        if self.node_bytes is None:
            return _META_UNCOUNTED.pack(*fields)
        return _META.pack(*fields, self.node_bytes)

    def state(self) -> StreamState:
        """The same facts as a plain value (:mod:`rstore.model`)."""
        return StreamState(
            self.length, self.last_id, self.first_id, self.max_deleted_entry_id,
            self.entries_added, self.group_count,
        )  # fmt: skip

    @classmethod
    def unpack(cls, b: bytes) -> StreamMeta:
        v = _META_UNCOUNTED.unpack(b) if len(b) == _META_UNCOUNTED.size else _META.unpack(b)
        node_bytes = v[12] if len(v) > 12 else None
        return cls(v[0], (v[1], v[2]), (v[3], v[4]), (v[5], v[6]), v[7], v[8], (v[9], v[10]), v[11],
                   node_bytes)  # fmt: skip

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"StreamMeta({fields})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamMeta) and self.pack() == other.pack()

    __hash__ = None  # type: ignore[assignment]


#: The sizes of a stream record: counted (format 4), and not.
STREAM_META_SIZES = (_META.size, _META_UNCOUNTED.size)


def node_key(handle: int, master_id: ID) -> bytes:
    """``nodes`` sub-db key: handle, then the master ID as 128-bit big-endian (ID order)."""
    return struct.pack(">QQQ", handle, master_id[0], master_id[1])


#: The size of a ``nodes`` key: handle, master ms, master seq.
NODE_KEY_SIZE = 24


def node_key_id(key: bytes) -> ID:
    """The master ID part of a ``nodes`` key."""
    _, ms, seq = struct.unpack(">QQQ", key)
    return (ms, seq)


# ----------------------------------------------------------------------------- groups

# Group and consumer names are stored in keys (so LMDB returns them in Redis's bytewise order);
# names longer than this keep a prefix plus their SHA-256, with the full name in the value.
MAX_INLINE_MEMBER = 400
_MEMBER_PREFIX = MAX_INLINE_MEMBER - 32

_GROUP = struct.Struct(">QQqQQQ")
_CONSUMER = struct.Struct(">qqQ")
_NACK = struct.Struct(">qQ")
#: Size of a ``pel`` value before the owner's name.
NACK_HEADER_SIZE = _NACK.size
_U16 = struct.Struct(">H")


@functools.lru_cache(maxsize=4096)
def member_part(name: bytes) -> bytes:
    """The key part naming a group or consumer (the name itself unless it is very long)."""
    if len(name) <= MAX_INLINE_MEMBER:
        return name
    return name[:_MEMBER_PREFIX] + _sha256(name)


def group_key(stream_handle: int, name: bytes) -> bytes:
    """``groups`` key: stream handle + group name."""
    return _U64.pack(stream_handle) + member_part(name)


def consumer_key(group_handle: int, name: bytes) -> bytes:
    """``consumers`` key: group handle + consumer name."""
    return _U64.pack(group_handle) + member_part(name)


def pel_key(group_handle: int, entry_id: ID) -> bytes:
    """``pel`` key: group handle + entry ID (16 bytes, big-endian)."""
    return struct.pack(">QQQ", group_handle, entry_id[0], entry_id[1])


@functools.lru_cache(maxsize=4096)
def consumer_pel_prefix(group_handle: int, consumer: bytes) -> bytes:
    """``consumer_pel`` key prefix of one consumer: group handle + u16 length + name part."""
    part = member_part(consumer)
    return _U64.pack(group_handle) + _U16.pack(len(part)) + part


def id_from_key_tail(key: bytes) -> ID:
    """The 16-byte big-endian entry ID at the end of a ``pel``/``consumer_pel`` key."""
    ms, seq = struct.unpack_from(">QQ", key, len(key) - 16)
    return (ms, seq)


class GroupMeta:
    """A consumer group (Redis ``streamCG``) without its PEL and consumers."""

    __slots__ = ("consumer_count", "entries_read", "handle", "last_id", "name", "pel_count")

    def __init__(
        self,
        name: bytes,
        handle: int,
        last_id: ID = (0, 0),
        entries_read: int = INVALID_ENTRIES_READ,
        pel_count: int = 0,
        consumer_count: int = 0,
    ) -> None:
        self.name = name  # the group name (not packed when short: it is in the key)
        self.handle = handle  # prefixes the group's consumers, pel and consumer_pel keys
        self.last_id = last_id  # last delivered ID
        self.entries_read = entries_read  # logical read counter, -1 = unknown
        self.pel_count = pel_count  # pending entries of the group
        self.consumer_count = consumer_count

    def pack(self) -> bytes:
        rec = _GROUP.pack(
            self.last_id[0],
            self.last_id[1],
            self.entries_read,
            self.handle,
            self.pel_count,
            self.consumer_count,
        )
        return rec + self.name if len(self.name) > MAX_INLINE_MEMBER else rec

    def state(self) -> GroupState:
        """The same facts as a plain value (:mod:`rstore.model`)."""
        return GroupState(
            self.name, self.last_id, self.entries_read, self.pel_count, self.consumer_count
        )

    @classmethod
    def unpack(cls, key: bytes, value: bytes) -> GroupMeta:
        ms, seq, entries_read, handle, pel_count, consumer_count = _GROUP.unpack_from(value)
        name = bytes(value[_GROUP.size :]) if len(value) > _GROUP.size else bytes(key[8:])
        return cls(name, handle, (ms, seq), entries_read, pel_count, consumer_count)


class ConsumerMeta:
    """A consumer of a group (Redis ``streamConsumer``) without its PEL."""

    __slots__ = ("active_time", "name", "pel_count", "seen_time")

    def __init__(self, name: bytes, seen_time: int, active_time: int = -1, pel_count: int = 0):
        self.name = name
        self.seen_time = seen_time  # last attempted interaction, ms
        self.active_time = active_time  # last successful read or claim, ms; -1 = never
        self.pel_count = pel_count  # entries this consumer owns in the group PEL

    def pack(self) -> bytes:
        rec = _CONSUMER.pack(self.seen_time, self.active_time, self.pel_count)
        return rec + self.name if len(self.name) > MAX_INLINE_MEMBER else rec

    def state(self) -> ConsumerState:
        """The same facts as a plain value (:mod:`rstore.model`)."""
        return ConsumerState(self.name, self.seen_time, self.active_time, self.pel_count)

    @classmethod
    def unpack(cls, key: bytes, value: bytes) -> ConsumerMeta:
        seen, active, pel_count = _CONSUMER.unpack_from(value)
        name = bytes(value[_CONSUMER.size :]) if len(value) > _CONSUMER.size else bytes(key[8:])
        return cls(name, seen, active, pel_count)


#: A ``pel`` record that XNACK released (Redis 8.8) has no owner and is in no consumer's list:
#: its delivery time is below zero -- this base plus its place among the group's released
#: entries (released earlier: smaller) -- and the name after it is the consumer it was released
#: from (empty when none), which RDB files before version 14 name as its owner.  A delivery
#: time below zero can also come from a file (Redis keeps any 64-bit time), so what marks an
#: entry released is its record in the released index: a ``consumer_pel`` key with the length
#: 0xFFFF, which no consumer's name part has (at most :data:`MAX_INLINE_MEMBER` bytes).
RELEASED_BASE = -(1 << 62)
#: the length field of the released index's keys, where a consumer's name length goes
RELEASED_PART = b"\xff\xff"


def released_key(group_handle: int, entry_id: ID) -> bytes:
    """The ``consumer_pel`` key saying that ``entry_id`` of the group was released."""
    return _U64.pack(group_handle) + RELEASED_PART + ID_PACK(*entry_id)


def released_prefix(group_handle: int) -> bytes:
    """The ``consumer_pel`` key prefix of the group's released entries."""
    return _U64.pack(group_handle) + RELEASED_PART


def pack_nack(delivery_time_ms: int, delivery_count: int, consumer: bytes) -> bytes:
    """``pel`` value: delivery time (ms), delivery count, owning consumer's name."""
    return _NACK.pack(delivery_time_ms, delivery_count) + consumer


def unpack_nack(value: bytes) -> tuple[int, int, bytes]:
    delivery_time, delivery_count = _NACK.unpack_from(value)
    return delivery_time, delivery_count, bytes(value[_NACK.size :])
