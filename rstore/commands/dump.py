"""DUMP and RESTORE: a key's value as a Redis-compatible payload, and back."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.registry import Context, command
from rstore.errors import CorruptDataError, UnsupportedRDBError
from rstore.rdb.payload import DUMP_VERSION, PayloadError, encode_payload, read_payload
from rstore.storage.records.txn import Txn
from rstore.streams.dump import restore_stream, snapshot_stream
from rstore.streams.keyspace import lookup_stream


def dump_payload(
    txn: Txn, key: bytes, now_ms: int, rdb_version: int = DUMP_VERSION
) -> bytes | None:
    """The DUMP payload of ``key`` (``None`` when it does not exist) in ``rdb_version``: 11,
    what DUMP returns, or others for other servers (``Store.dump``'s extension).  Strings are
    LZF-compressed when the store's ``rdbcompression`` is on, as the servers do."""
    stream = lookup_stream(txn, key)
    if stream is None:
        return None
    compress = txn.config().rdb_compression
    snap = snapshot_stream(
        txn,
        stream,
        nack_zone=rdb_version >= 14,
        idempotency_at=now_ms if rdb_version >= 13 else None,
    )
    return encode_payload(snap, compress=compress, version=rdb_version)


@command("dump", 2, summary="Serialize a key's value (RDB encoding, as Redis's DUMP)")
def dump(ctx: Context, argv: list[bytes]) -> Any:
    return dump_payload(ctx.txn, argv[1], ctx.now_ms)


@command("restore", -4, write=True, summary="Create a key from a DUMP payload")
def restore(ctx: Context, argv: list[bytes]) -> Any:
    replace = False
    idle = freq = -1
    j = 4
    argc = len(argv)
    while j < argc:
        more = argc - 1 - j
        kw = keyword(argv[j])
        if kw == b"replace":
            replace = True
        elif kw == b"absttl":
            pass
        elif kw == b"idletime" and more and freq == -1:
            j += 1
            idle = parse_int(argv[j])
            if idle < 0:
                raise messages.error(messages.RESTORE_BAD_IDLETIME)
        elif kw == b"freq" and more and idle == -1:
            j += 1
            freq = parse_int(argv[j])
            if not 0 <= freq <= 255:
                raise messages.error(messages.RESTORE_BAD_FREQ)
        else:
            raise messages.error(messages.SYNTAX)
        j += 1
    key = argv[1]
    existing = lookup_stream(ctx.txn, key)
    if existing is not None and not replace:
        raise messages.error(messages.BUSYKEY)
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise messages.error(messages.RESTORE_BAD_TTL)
    try:
        _, type_name, records = read_payload(argv[3])
    except PayloadError:
        raise messages.error(messages.BAD_PAYLOAD) from None
    except (CorruptDataError, UnsupportedRDBError):
        raise messages.error(messages.BAD_FORMAT) from None
    if records is None:
        raise messages.error(messages.RESTORE_NOT_A_STREAM, type_name=type_name)
    if ttl:
        raise messages.error(messages.RESTORE_TTL)
    try:
        restore_stream(ctx.txn, key, records, replace=replace)
    except (CorruptDataError, UnsupportedRDBError):
        raise messages.error(messages.BAD_FORMAT) from None
    ctx.signal(key)
    return "OK"
