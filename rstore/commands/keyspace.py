"""The keyspace commands: DEL, UNLINK, RENAME, RENAMENX, EXISTS, TYPE, KEYS, SCAN, DBSIZE,
FLUSHALL; the semantics are in :mod:`rstore.streams.keyspace`."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.registry import Context, command
from rstore.numbers import string2ull
from rstore.storage.records.layout import TYPE_NAMES
from rstore.streams import keyspace

_KNOWN_TYPES = {"string", "list", "set", "zset", "hash", "stream"} | set(TYPE_NAMES.values())


@command("del", -2, write=True, summary="Delete keys")
def del_(ctx: Context, argv: list[bytes]) -> Any:
    for key in argv[1:]:
        ctx.signal(key)  # blocked XREADGROUP readers of a deleted key get NOGROUP
    return keyspace.delete_keys(ctx.txn, argv[1:])


@command("unlink", -2, write=True, summary="Delete keys (same as DEL here)")
def unlink(ctx: Context, argv: list[bytes]) -> Any:
    return del_(ctx, argv)


@command("rename", 3, write=True, summary="Rename a key (replacing one of the new name)")
def rename(ctx: Context, argv: list[bytes]) -> Any:
    keyspace.rename_key(ctx.txn, argv[1], argv[2])
    ctx.signal(argv[1])  # readers blocked on either name look again (NOGROUP, or new data)
    ctx.signal(argv[2])
    return "OK"


@command("renamenx", 3, write=True, summary="Rename a key if the new name is free")
def renamenx(ctx: Context, argv: list[bytes]) -> Any:
    renamed = keyspace.rename_key(ctx.txn, argv[1], argv[2], only_new=True)
    if renamed:
        ctx.signal(argv[1])
        ctx.signal(argv[2])
    return int(renamed)


@command("exists", -2, summary="Count how many of the keys exist")
def exists(ctx: Context, argv: list[bytes]) -> Any:
    return keyspace.exists(ctx.txn, argv[1:])


@command("type", 2, summary="Type of a key")
def type_(ctx: Context, argv: list[bytes]) -> Any:
    return keyspace.key_type(ctx.txn, argv[1])


@command("keys", 2, summary="Keys matching a glob pattern")
def keys(ctx: Context, argv: list[bytes]) -> Any:
    return keyspace.keys(ctx.txn, argv[1])


@command("scan", -2, summary="Iterate the keyspace with a cursor")
def scan(ctx: Context, argv: list[bytes]) -> Any:
    cursor = string2ull(argv[1])
    if cursor is None:
        raise messages.error(messages.INVALID_CURSOR)
    count = 10
    pattern: bytes | None = None
    type_name: str | None = None
    i = 2
    argc = len(argv)
    while i < argc:
        left = argc - i
        kw = keyword(argv[i])
        if kw == b"count" and left >= 2:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise messages.error(messages.SYNTAX)
        elif kw == b"match" and left >= 2:
            pattern = argv[i + 1]
        elif kw == b"type" and left >= 2:
            type_name = argv[i + 1].decode("utf-8", "surrogateescape")
            if type_name.lower() not in _KNOWN_TYPES:
                raise messages.error(messages.SCAN_UNKNOWN_TYPE, name=messages.sanitize(type_name))
        elif kw == b"novalues":
            raise messages.error(messages.SCAN_NOVALUES)
        else:
            raise messages.error(messages.SYNTAX)
        i += 2
    next_cursor, found = keyspace.scan(
        ctx.txn, cursor, count, pattern, None if type_name is None else type_name.lower()
    )
    return [b"%d" % next_cursor, found]


@command("dbsize", 1, summary="Number of keys")
def dbsize(ctx: Context, argv: list[bytes]) -> Any:
    return keyspace.dbsize(ctx.txn)


@command("flushall", -1, write=True, summary="Delete every key")
def flushall(ctx: Context, argv: list[bytes]) -> Any:
    if len(argv) > 2 or (len(argv) == 2 and keyword(argv[1]) not in (b"sync", b"async")):
        raise messages.error(messages.SYNTAX)
    keyspace.flushall(ctx.txn)
    ctx.signal_all()
    return "OK"
