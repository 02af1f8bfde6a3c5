"""Writing RDB files and stream values.

:func:`encode_stream` turns a :class:`~rstore.model.StreamSnapshot` into the bytes of an RDB
stream value, as type 27 (RDB 14, Redis 8.8: released entries), 26 (RDB 13, Redis 8.6:
idempotency), 21 (RDB 11 and 12, Redis 7.2+ / Valkey), 19 (RDB 10, Redis 7.0) or 15
(RDB 9, Redis 5.0-6.2): nodes are copied verbatim -- they are Redis listpacks already --
LZF-compressed when compression is on, like ``rdbcompression yes``.  :class:`RDBWriter` frames
values into a file with the header, AUX fields, database selectors and the CRC64 trailer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, TypeVar

from rstore.codec import lzf
from rstore.codec.crc64 import crc64
from rstore.codec.sealed_records import SealedRecords
from rstore.codec.speedups import c_pack, c_pack_sealed
from rstore.errors import InconsistentSnapshotError
from rstore.model import ID, StreamIdempotency, StreamSnapshot
from rstore.rdb.encoding import (
    encode_id,
    encode_length,
    encode_ms,
    encode_raw_id,
    encode_string,
)
from rstore.version import __version__

__all__ = ["STREAM_TYPE_FOR_VERSION", "RDBWriter", "encode_stream"]

STREAM_TYPE_FOR_VERSION = {9: 15, 10: 19, 11: 21, 12: 21, 13: 26, 14: 27}
#: What a stream that never used idempotent production holds (Redis's default settings).
NO_IDEMPOTENCY = StreamIdempotency(100, 100, (), 0, 0)
_NODES, _PENDING, _IDS = 0, 1, 2  # what the C extension's pack() packs
T = TypeVar("T")


def _exactly(items: Iterable[T], declared: int, what: str) -> Iterator[T]:
    """Yield ``items`` and fail unless there are exactly ``declared`` of them."""
    n = 0
    for item in items:
        n += 1
        if n > declared:
            break
        yield item
    if n != declared:
        raise _inconsistent(what, declared, n)


def _inconsistent(what: str, declared: int, n: int) -> InconsistentSnapshotError:
    return InconsistentSnapshotError(
        f"the snapshot is inconsistent: {what} counts {declared} but holds {n}"
    )


def _packed(
    kind: int, items: Iterable[object], declared: int, what: str, compress: bool = False
) -> Iterator[bytes]:
    """What the loops below write item by item, written by the C extension about 1 MiB at a
    time (the same bytes; ``kind`` as ``pack`` takes it), checking the count as :func:`_exactly`
    does."""
    assert c_pack is not None
    if isinstance(items, SealedRecords) and c_pack_sealed is not None:
        yield from _packed_sealed(items, declared, what, compress)
        return
    it = iter(items)
    compressor = lzf.compress if compress else None
    yield from _counted(lambda room: c_pack(kind, it, room, compressor), declared, what)


def _counted(
    pack: Callable[[int], tuple[bytes, int, bool]], declared: int, what: str
) -> Iterator[bytes]:
    """The chunks ``pack(room)`` returns (``(chunk, items packed, exhausted)``, at most
    ``room`` items each), checking that exactly ``declared`` items come."""
    n = 0
    while True:
        chunk, got, exhausted = pack(declared + 1 - n)
        n += got
        if n > declared:  # one item more than declared: stop there
            break
        if chunk:
            yield chunk
        if exhausted:
            break
    if n != declared:
        raise _inconsistent(what, declared, n)


def _packed_sealed(
    records: SealedRecords[object], declared: int, what: str, compress: bool
) -> Iterator[bytes]:
    """:func:`_packed` of records straight from a store (:mod:`rstore.codec.sealed_records`):
    the C packer verifies each record's seal and compresses nodes with its own port of
    :func:`rstore.codec.lzf.py_compress` (the same bytes as ``lzf.compress``); a record it
    stops at raises the store's error."""
    assert c_pack_sealed is not None
    it, prefix = records.raw(), records.prefix

    def pack(room: int) -> tuple[bytes, int, bool]:
        chunk, got, exhausted, problem = c_pack_sealed(records.kind, it, prefix, room, compress)
        if problem is not None:
            raise records.problem(problem)
        return chunk, got, exhausted

    yield from _counted(pack, declared, what)


def encode_stream(snap: StreamSnapshot, rdb_type: int, *, compress: bool = True) -> Iterator[bytes]:
    """The RDB value of a stream, in chunks."""
    v2 = rdb_type >= 19
    v3 = rdb_type >= 21
    v5 = rdb_type >= 27
    yield encode_length(snap.node_count)
    if c_pack is not None:
        yield from _packed(_NODES, snap.nodes, snap.node_count, "node count", compress)
    else:
        for node in _exactly(snap.nodes, snap.node_count, "node count"):
            # the 16-byte key is never compressed
            yield (
                b"\x10"
                + encode_raw_id(node.master_id)
                + encode_string(node.listpack, compress=compress)
            )
    st = snap.state
    head = [encode_length(st.length), encode_id(st.last_id)]
    if v2:
        head += [
            encode_id(st.first_id or (0, 0)),
            encode_id(st.max_deleted_entry_id or (0, 0)),
            encode_length(st.entries_added if st.entries_added is not None else st.length),
        ]
    head.append(encode_length(st.group_count))
    yield b"".join(head)
    for group in _exactly(snap.groups, st.group_count, "group count"):
        gs = group.state
        parts = [encode_string(gs.name, compress=compress), encode_id(gs.last_id)]
        if v2:
            parts.append(encode_length(gs.entries_read if gs.entries_read is not None else -1))
        parts.append(encode_length(gs.pel_count))
        yield b"".join(parts)
        if c_pack is not None:
            yield from _packed(_PENDING, group.pending, gs.pel_count, "group PEL")
        else:
            for p in _exactly(group.pending, gs.pel_count, "group PEL"):
                yield (
                    encode_raw_id(p.id)
                    + encode_ms(p.delivery_time_ms)
                    + encode_length(p.delivery_count)
                )
        yield encode_length(gs.consumer_count)
        for consumer in _exactly(group.consumers, gs.consumer_count, "consumer count"):
            cs = consumer.state
            parts = [encode_string(cs.name, compress=compress), encode_ms(cs.seen_time_ms)]
            if v3:
                active = cs.active_time_ms
                parts.append(encode_ms(active if active is not None else cs.seen_time_ms))
            parts.append(encode_length(cs.pel_count))
            yield b"".join(parts)
            if c_pack is not None:
                yield from _packed(_IDS, consumer.ids, cs.pel_count, "consumer PEL")
            else:
                ids = _exactly(consumer.ids, cs.pel_count, "consumer PEL")
                for chunk in _batched(ids):
                    yield b"".join(encode_raw_id(i) for i in chunk)
        if v5:
            yield _nack_zone(group.nacked)
    if rdb_type >= 26:
        yield _idempotency(snap.idempotency or NO_IDEMPOTENCY, compress)


def _nack_zone(ids: Iterable[ID]) -> bytes:
    """A group's released entries (type 27), in release order."""
    listed = list(ids)
    return encode_length(len(listed)) + b"".join(encode_raw_id(i) for i in listed)


def _idempotency(state: StreamIdempotency, compress: bool) -> bytes:
    """The idempotency block (types 26 and 27): settings, producers by pid with their iids
    oldest first, then the iids ever added and the duplicates answered."""
    parts = [encode_length(state.duration), encode_length(state.maxsize),
             encode_length(len(state.producers))]  # fmt: skip
    for producer in state.producers:
        parts += [encode_string(producer.pid, compress=compress),
                  encode_length(len(producer.entries))]  # fmt: skip
        for iid, entry_id in producer.entries:
            parts += [encode_string(iid, compress=compress), encode_id(entry_id)]
    parts += [encode_length(state.added), encode_length(state.duplicates)]
    return b"".join(parts)


def _batched(ids: Iterable[tuple[int, int]], size: int = 1024) -> Iterator[list[tuple[int, int]]]:
    batch: list[tuple[int, int]] = []
    for i in ids:
        batch.append(i)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


_FLUSH_BYTES = 1 << 20


class RDBWriter:
    """Writes one RDB file to ``f``, keeping the running CRC64."""

    def __init__(self, f: BinaryIO, *, version: int = 11, compress: bool = True) -> None:
        if version not in STREAM_TYPE_FOR_VERSION:
            raise ValueError(f"rstore writes RDB versions 9 to 14, not {version}")
        self._f = f
        self.version = version
        self.stream_type = STREAM_TYPE_FOR_VERSION[version]
        self.compress = compress
        self._crc = 0
        self.bytes_written = 0
        self._pending: list[bytes] = []  # chunks not yet checksummed and written
        self._pending_bytes = 0

    def _write(self, data: bytes) -> None:
        # Chunks are small (a node is at most a few KB): gather about 1 MiB, then checksum and
        # write it in one call each.
        self._pending.append(data)
        self._pending_bytes += len(data)
        self.bytes_written += len(data)
        if self._pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            blob = b"".join(self._pending)
            self._crc = crc64(blob, self._crc)
            self._f.write(blob)
            self._pending.clear()
            self._pending_bytes = 0

    def header(self, *, used_memory: int = 0) -> None:
        """Magic, version and the AUX fields a server writes (rstore names itself)."""
        self._write(b"REDIS%04d" % self.version)
        for key, value in (
            (b"rstore-ver", __version__.encode()),
            (b"redis-bits", b"64"),
            (b"ctime", b"%d" % int(time.time())),
            (b"used-mem", b"%d" % used_memory),
            (b"aof-base", b"0"),
        ):
            self._write(b"\xfa" + encode_string(key) + encode_string(value))

    def select_db(self, db: int, keys: int, expires: int = 0) -> None:
        self._write(
            b"\xfe" + encode_length(db) + b"\xfb" + encode_length(keys) + encode_length(expires)
        )

    def stream(self, key: bytes, snap: StreamSnapshot) -> None:
        self._write(bytes((self.stream_type,)) + encode_string(key, compress=self.compress))
        for chunk in encode_stream(snap, self.stream_type, compress=self.compress):
            self._write(chunk)

    def end(self) -> None:
        """The EOF opcode and the checksum of everything before it."""
        self._write(b"\xff")
        self._flush()
        trailer = self._crc.to_bytes(8, "little")
        self._f.write(trailer)
        self.bytes_written += 8
