"""DUMP / RESTORE payloads: one value in RDB encoding, framed for transport.

::

    <type byte> <value, exactly as in an RDB file> <RDB version: u16 LE> <CRC64: u64 LE>

The CRC64 covers everything before it.  A payload is accepted when it is at least 10 bytes,
its version is at most :data:`RESTORE_VERSION` and its CRC matches (an all-zero CRC is *not*
special here).  Bytes left between the value and the footer are ignored, as Redis does.

DUMP writes version :data:`DUMP_VERSION`, 11: what Valkey 8.0 writes, and the newest version
every server since Redis 7.2 and Valkey 7.2 restores.  RESTORE takes versions up to 14: 12,
what Redis 7.4 to 8.4 write (a stream encoded as in 11), 13 (Redis 8.6: a stream's
idempotency after its groups) and 14 (Redis 8.8: each group's released entries too); Valkey
8.0 refuses them all.
"""

from __future__ import annotations

from collections.abc import Iterator

from rstore.codec.crc64 import crc64
from rstore.errors import CorruptRDBError, RStoreError
from rstore.model import StreamSnapshot
from rstore.rdb.decoding import Source
from rstore.rdb.values import FIRST_VERSION, STREAM_TYPES, TYPE_NAMES, StreamRecord, read_stream
from rstore.rdb.writer import STREAM_TYPE_FOR_VERSION, encode_stream

__all__ = ["DUMP_VERSION", "RESTORE_VERSION", "PayloadError", "encode_payload", "read_payload"]

DUMP_VERSION = 11  # what Valkey 8.0 writes and the newest it accepts
RESTORE_VERSION = 14  # what Redis 8.8 writes and the newest it accepts


class PayloadError(RStoreError):
    """The payload's version or checksum is wrong (RESTORE's first check)."""


def encode_payload(
    snap: StreamSnapshot, *, compress: bool = True, version: int = DUMP_VERSION
) -> bytes:
    """A payload in RDB ``version`` (14 for Redis 8.8, 13 for 8.6, 12 for Redis 7.4 to 8.4, 11
    for Valkey / Redis 7.2+, 10 for Redis 7.0, 9 for 5-6.2)."""
    if version not in STREAM_TYPE_FOR_VERSION or version > RESTORE_VERSION:
        raise ValueError(f"DUMP payloads can be RDB versions 9 to {RESTORE_VERSION}, not {version}")
    rdb_type = STREAM_TYPE_FOR_VERSION[version]
    body = bytes((rdb_type,)) + b"".join(encode_stream(snap, rdb_type, compress=compress))
    body += version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def verify(payload: bytes) -> None:
    if len(payload) < 10:
        raise PayloadError("payload shorter than its footer")
    version = int.from_bytes(payload[-10:-8], "little")
    if version > RESTORE_VERSION:
        raise PayloadError(f"payload version {version} is newer than {RESTORE_VERSION}")
    if crc64(payload[:-8]) != int.from_bytes(payload[-8:], "little"):
        raise PayloadError("payload checksum mismatch")


def read_payload(payload: bytes) -> tuple[int, str, Iterator[StreamRecord] | None]:
    """Verify a payload; ``(RDB type, type name, stream records or None for other types)``.

    Raises :class:`PayloadError` for the footer, and CorruptRDBError / UnsupportedRDBError
    (while iterating) for a value that does not parse.  The records come in runs where the C
    reader reads them (for :func:`rstore.streams.dump.import_stream`).
    """
    verify(payload)
    src = Source.from_bytes(payload[:-10])
    rdb_type = src.byte()
    if rdb_type not in TYPE_NAMES:  # not a value type at all: Valkey's "Bad data format"
        raise CorruptRDBError(f"unknown value type {rdb_type}", 0)
    version = int.from_bytes(payload[-10:-8], "little")
    if version < FIRST_VERSION.get(rdb_type, 0):
        raise CorruptRDBError(f"value type {rdb_type} in a version {version} payload", 0)
    name = TYPE_NAMES[rdb_type]
    if rdb_type not in STREAM_TYPES:
        return rdb_type, name, None
    return rdb_type, name, read_stream(src, rdb_type, deep=True, runs=True)
