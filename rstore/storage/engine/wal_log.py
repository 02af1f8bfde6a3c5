"""The write-ahead log's file format: records, the header, and which records recovery redoes.

Pure bytes and ``os`` calls on a descriptor: nothing here knows LMDB.  The design, and why
each field is there, is in docs/durability.md ("One flush per commit: the write-ahead log").

* **Records** start at :data:`RECORDS_START`, one per committed write transaction, one after
  the other.  A record's position (:class:`Position`: generation, offset, sequence number and
  the checksum of the record before it) comes from the LMDB state its writer committed on, so
  a record whose commit failed is overwritten by the next writer.
* Layout of a record (little-endian)::

      0  magic  b"RSWR"
      4  committed byte (1 once LMDB committed it), 3 zero bytes -- outside the CRC
      8  generation u64 | 16 sequence number u64 | 24 LMDB txnid u64
     32  CRC of the previous record u32 | 36 length of the operations u32
     40  operations | then a CRC-32 u32 of the magic, the operations and bytes 8-40

* An operation is ``kind u8, len(db) u8, db, len(key) u32, key`` and, for a put, ``len(value)
  u32, value``; ``db`` is the sub-database's name.
* **Redoable records** (:func:`redoable`): from a checkpoint's position, each record that is
  valid where it is expected and either marked committed or followed by a valid record.
* **The header**: two 512-byte slots at offsets 0 and 512, each with a sequence number and a
  CRC; the valid one with the higher number is current, and a new header is written over the
  other one, so a write torn by a crash leaves the previous header in place.
"""

from __future__ import annotations

import os
import struct
import time
import uuid
import zlib
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = [
    "BARRIER_BODY",
    "DELETE",
    "HEADER_SLOT",
    "PUT",
    "RECORDS_START",
    "Header",
    "Op",
    "Position",
    "Record",
    "RecordWriter",
    "after",
    "boot_id",
    "chain",
    "decode_ops",
    "encode_record",
    "grow",
    "mark_committed",
    "op_prefix",
    "read_header",
    "redoable",
    "write_header",
    "write_record",
]

PUT = 1
DELETE = 2
_KINDS = (PUT, DELETE)
#: The whole body of a *barrier*: the record of a bulk transaction committed without its
#: changes, made durable by a checkpoint instead (docs/durability.md).  Never redone, and
#: recovery stops there: a record after it exists only once a checkpoint covers it.
BARRIER_BODY = b"\x03"

_MAGIC = b"RSWR"
_HEAD = struct.Struct("<4sB3xQQQII")  # magic, committed, generation, lsn, txnid, prev CRC, length
_CRC = struct.Struct("<I")
_U32 = struct.Struct("<I")
COMMITTED_OFFSET = 4  # the committed byte, relative to the record's start
_MAX_BODY = 0xFFFF_FFFF
_MAGIC_CRC = zlib.crc32(_MAGIC)  # the CRC of a record starts with its magic
_GROWTH_MAX = 4 << 20  # the file grows by doubling, at most this much at a time
_ZERO_CHUNK = bytes(64 << 10)

HEADER_SLOT = 512
RECORDS_START = 4096
_HEADER_MAGIC = b"RSWH"
_HEADER_VERSION = 1
# magic, version, seq, checkpoint txnid, generation, offset, lsn, last CRC, boot id, written at
# (ns since the epoch), meta length
_HEADER = struct.Struct("<4sIQQQQQI16sQH")
_MAX_META = HEADER_SLOT - _HEADER.size - _CRC.size


class Op(NamedTuple):
    """One change of a write transaction: ``value`` is ``None`` for a delete."""

    db: bytes
    key: bytes
    value: bytes | None


class Position(NamedTuple):
    """Where the next record goes, and what it must carry to be accepted there."""

    generation: int
    offset: int
    lsn: int
    last_crc: int


class Record(NamedTuple):
    """A record read back: its position, its LMDB transaction id and its operations."""

    position: Position
    txnid: int
    ops: list[Op]
    committed: bool
    size: int
    crc: int
    barrier: bool = False  # a bulk transaction's record: its changes are not in the log


class Header(NamedTuple):
    """The log's header: the checkpoint recovery starts from."""

    seq: int
    checkpoint_txnid: int
    position: Position  # the log position right after the checkpoint's transaction
    boot_id: bytes  # 16 bytes
    meta: bytes  # the checkpoint's LMDB meta page (its first bytes)
    written_ns: int  # when (time.time_ns()): how old the checkpoint is


# ---------------------------------------------------------------------------- records


def _encode_ops(ops: Sequence[Op]) -> bytes:
    parts: list[bytes] = []
    for db, key, value in ops:
        if not 0 < len(db) < 256:
            raise ValueError(f"sub-database name of {len(db)} bytes")
        kind = DELETE if value is None else PUT
        parts += (bytes((kind, len(db))), db, _U32.pack(len(key)), key)
        if value is not None:
            parts += (_U32.pack(len(value)), value)
    return b"".join(parts)


def _decode_ops(body: bytes) -> list[Op] | None:
    ops: list[Op] = []
    i, n = 0, len(body)
    try:
        while i < n:
            kind, dblen = body[i], body[i + 1]
            if kind not in _KINDS or dblen == 0:
                return None
            i += 2
            db = body[i : i + dblen]
            i += dblen
            (klen,) = _U32.unpack_from(body, i)
            key = body[i + 4 : i + 4 + klen]
            i += 4 + klen
            value = None
            if kind == PUT:
                (vlen,) = _U32.unpack_from(body, i)
                value = body[i + 4 : i + 4 + vlen]
                i += 4 + vlen
            if i > n:
                return None
            ops.append(Op(db, key, value))
    except (IndexError, struct.error):
        return None
    return ops


def _frame(
    position: Position, txnid: int, body: bytes, trailer: bytes = b""
) -> tuple[bytes, Position]:
    """The record of the encoded operations ``body`` at ``position`` (not marked committed),
    followed by ``trailer``; and the position after the record."""
    if len(body) > _MAX_BODY:
        raise ValueError(f"a write transaction of {len(body)} bytes is too large for one record")
    gen, offset, lsn, prev = position
    head = _HEAD.pack(_MAGIC, 0, gen, lsn, txnid, prev, len(body))
    crc = zlib.crc32(head[8:], zlib.crc32(body, _MAGIC_CRC))
    end = offset + _HEAD.size + len(body) + _CRC.size
    return b"".join((head, body, _CRC.pack(crc), trailer)), Position(gen, end, lsn + 1, crc)


def encode_record(position: Position, txnid: int, ops: Sequence[Op]) -> tuple[bytes, Position]:
    """The record of ``ops`` at ``position`` (not marked committed), and the position after it."""
    return _frame(position, txnid, _encode_ops(ops))


def write_record(
    fd: int, position: Position, txnid: int, body: bytes, trailer: bytes, allocated: int
) -> tuple[Position, int]:
    """Write the record of the encoded operations ``body`` at ``position``, then ``trailer``,
    in one ``pwrite``; ``(the position after the record, the size the file is known to
    have)``: a file known to reach ``allocated`` bytes is grown (:func:`grow`) only when the
    record goes past that.  The bytes are those :class:`RecordWriter` writes in pieces."""
    record, after = _frame(position, txnid, body, trailer)
    at = position.offset
    end = at + len(record)
    if end > allocated:
        allocated = grow(fd, end)
    written = os.pwrite(fd, record, at)
    if written != len(record):  # a short write (rare): the rest, piece by piece
        _write_all(fd, memoryview(record)[written:], at + written)
    return after, allocated


class RecordWriter:
    """A record written in pieces, for a transaction too large to hold in memory: its
    operations as they come (:meth:`add`), then its head and CRC (:meth:`finish`).  The CRC
    covers the magic, the operations and then the head, so it can be computed as the
    operations pass.  The file is grown (:func:`grow`) before a write that goes past
    ``allocated``, the size it is known to have (read back from :attr:`allocated` after).  A
    record whose operations all come to :meth:`finish` is written in one piece
    (:func:`write_record`)."""

    def __init__(self, fd: int, position: Position, txnid: int, allocated: int) -> None:
        self._fd = fd
        self.position = position
        self.txnid = txnid
        self.allocated = allocated
        self._length = 0
        self._crc = _MAGIC_CRC

    def _reserve(self, end: int) -> None:
        if end > self.allocated:
            self.allocated = grow(self._fd, end)

    def add(self, ops: Sequence[Op]) -> None:
        self.add_encoded(_encode_ops(ops))

    def add_encoded(self, body: bytes) -> None:
        """Operations already encoded (:func:`encode_put`, :func:`encode_delete`)."""
        if not body:
            return
        if self._length + len(body) > _MAX_BODY:
            raise ValueError("a write transaction of more than 4 GiB is too large for one record")
        at = self.position.offset + _HEAD.size + self._length
        self._reserve(at + len(body))
        _write_all(self._fd, body, at)
        self._crc = zlib.crc32(body, self._crc)
        self._length += len(body)

    def finish(self, body: bytes, trailer: bytes = b"") -> Position:
        """Write the last operations (encoded), the head and the CRC (then ``trailer``); the
        position after the record."""
        if self._length == 0:  # nothing spilled: the whole record in one write
            after, self.allocated = write_record(
                self._fd, self.position, self.txnid, body, trailer, self.allocated
            )
            return after
        self.add_encoded(body)
        gen, offset, lsn, prev = self.position
        head = _HEAD.pack(_MAGIC, 0, gen, lsn, self.txnid, prev, self._length)
        crc = zlib.crc32(head[8:], self._crc)
        end = offset + _HEAD.size + self._length
        self._reserve(end + _CRC.size + len(trailer))
        _write_all(self._fd, _CRC.pack(crc) + trailer, end)
        _write_all(self._fd, head, offset)
        return Position(gen, end + _CRC.size, lsn + 1, crc)


def op_prefix(kind: int, db: bytes) -> bytes:
    """The bytes an operation of ``kind`` on the sub-database ``db`` starts with."""
    if not 0 < len(db) < 256:
        raise ValueError(f"sub-database name of {len(db)} bytes")
    return bytes((kind, len(db))) + db


def decode_ops(body: bytes) -> list[Op]:
    """The operations encoded in ``body`` (tests, and the capture's :attr:`ops`)."""
    ops = _decode_ops(body)
    if ops is None:
        raise ValueError("malformed operations")
    return ops


def _write_all(fd: int, data: bytes | memoryview, at: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, at)
        if written <= 0:
            raise OSError("short write to the write-ahead log")
        view, at = view[written:], at + written


def grow(fd: int, end: int) -> int:
    """Make the log file reach ``end`` with written zeros, ahead of need (doubling, at most
    :data:`_GROWTH_MAX` at a time), flushed; its size.  A flush of a write inside the file is
    one device flush, while a write that extends the file (or fills space reserved by
    ``fallocate``) also commits file-system metadata."""
    size = os.fstat(fd).st_size  # another process may have grown it
    if end <= size:
        return size
    at, size = size, max(end, min(2 * size, size + _GROWTH_MAX))
    while at < size:
        at += os.pwrite(fd, _ZERO_CHUNK[: size - at], at)
    os.fdatasync(fd)
    return size


def mark_committed(fd: int, position: Position) -> None:
    """Set the committed byte of the record written at ``position``."""
    if os.pwrite(fd, b"\x01", position.offset + COMMITTED_OFFSET) != 1:
        raise OSError("short write of the committed byte")


def _read_at(fd: int, expected: Position, end: int) -> Record | None:
    """The record at ``expected`` if a valid one is there, else ``None``."""
    head = os.pread(fd, _HEAD.size, expected.offset)
    if len(head) < _HEAD.size:
        return None
    magic, committed, gen, lsn, txnid, prev, length = _HEAD.unpack(head)
    if (magic, gen, lsn, prev) != (_MAGIC, expected.generation, expected.lsn, expected.last_crc):
        return None
    size = _HEAD.size + length + _CRC.size
    if expected.offset + size > end:
        return None
    rest = os.pread(fd, length + _CRC.size, expected.offset + _HEAD.size)
    if len(rest) != length + _CRC.size:
        return None
    body = rest[:length]
    (crc,) = _CRC.unpack_from(rest, length)
    if crc != zlib.crc32(head[8:], zlib.crc32(body, _MAGIC_CRC)):
        return None
    if body == BARRIER_BODY:
        return Record(expected, txnid, [], committed == 1, size, crc, barrier=True)
    ops = _decode_ops(body)
    if ops is None:
        return None
    return Record(expected, txnid, ops, committed == 1, size, crc)


def after(record: Record) -> Position:
    """The position right after ``record``: where the next record must be."""
    gen, offset, lsn, _ = record.position
    return Position(gen, offset + record.size, lsn + 1, record.crc)


def chain(fd: int, start: Position) -> Iterator[Record]:
    """Every valid record from ``start`` on, marked committed or not, in order: the records
    as written, up to the first that is not valid where it is expected (a check's view;
    recovery redoes :func:`redoable` ones only)."""
    end = os.fstat(fd).st_size
    record = _read_at(fd, start, end)
    while record is not None:
        yield record
        record = _read_at(fd, after(record), end)


def redoable(fd: int, start: Position) -> Iterator[Record]:
    """The records recovery redoes, in order, from ``start`` (a checkpoint's position): those
    of :func:`chain` that are marked committed or followed by a valid record (whose writer read
    its position from a committed state).  The scan stops at the first record that is
    neither, and at a barrier (:data:`BARRIER_BODY`)."""
    records = chain(fd, start)
    record = next(records, None)
    while record is not None and not record.barrier:
        following = next(records, None)
        if not (record.committed or following is not None):
            return
        yield record
        record = following


# ---------------------------------------------------------------------------- header


def boot_id() -> bytes:
    """The running kernel's boot id (16 bytes), which the header carries: a header written
    before the running kernel booted calls for recovery.  ``RSTORE_TEST_BOOT_ID`` overrides it
    (tests)."""
    text = os.environ.get("RSTORE_TEST_BOOT_ID")
    if text is not None:
        return uuid.UUID(text).bytes
    if not _BOOT_ID:  # read once: it changes only with the kernel
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                text = f.read().strip()
        except OSError:
            text = "00000000-0000-0000-0000-000000000000"
        _BOOT_ID.append(uuid.UUID(text).bytes)
    return _BOOT_ID[0]


_BOOT_ID: list[bytes] = []


def _decode_header(slot: bytes) -> Header | None:
    if len(slot) != HEADER_SLOT:
        return None
    (crc,) = _CRC.unpack_from(slot, HEADER_SLOT - _CRC.size)
    if crc != zlib.crc32(slot[: HEADER_SLOT - _CRC.size]):
        return None
    magic, version, seq, txnid, gen, offset, lsn, last, boot, when, mlen = _HEADER.unpack_from(slot)
    if magic != _HEADER_MAGIC or version != _HEADER_VERSION or mlen > _MAX_META:
        return None
    meta = slot[_HEADER.size : _HEADER.size + mlen]
    return Header(seq, txnid, Position(gen, offset, lsn, last), boot, meta, when)


def read_header(fd: int) -> Header | None:
    """The current header (the valid slot with the higher sequence number), or ``None``."""
    found = [_decode_header(os.pread(fd, HEADER_SLOT, i * HEADER_SLOT)) for i in (0, 1)]
    valid = [h for h in found if h is not None]
    return max(valid, key=lambda h: h.seq) if valid else None


def write_header(
    fd: int,
    checkpoint_txnid: int,
    position: Position,
    boot_id: bytes,
    meta: bytes,
    current: Header | None = None,
) -> Header:
    """Write a new header over the slot that is not current (no flush); returns it.
    ``current``: the current header, if the caller has just read it."""
    if len(boot_id) != 16 or len(meta) > _MAX_META:
        raise ValueError("boot id of 16 bytes and a meta page prefix that fits a slot")
    if current is None:
        current = read_header(fd)
    seq = 1 if current is None else current.seq + 1
    gen, offset, lsn, last = position
    when = time.time_ns()
    fixed = _HEADER.pack(
        _HEADER_MAGIC, _HEADER_VERSION, seq, checkpoint_txnid, gen, offset, lsn, last,
        boot_id, when, len(meta),
    )  # fmt: skip
    body = (fixed + meta).ljust(HEADER_SLOT - _CRC.size, b"\0")
    slot = body + _CRC.pack(zlib.crc32(body))
    if os.pwrite(fd, slot, (seq % 2) * HEADER_SLOT) != HEADER_SLOT:
        raise OSError("short write of the log header")
    return Header(seq, checkpoint_txnid, position, boot_id, meta, when)
