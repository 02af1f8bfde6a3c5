"""Keyspace and server basics: DEL, EXISTS, TYPE, KEYS, SCAN, DBSIZE, FLUSHALL, PING, CONFIG."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rstore import glob, messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.registry import Context, command, container, subcommand
from rstore.numbers import INT64_MAX, string2ll, string2ull
from rstore.storage.layout import TYPE_NAMES
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
                raise messages.error(f"ERR unknown type name '{messages.sanitize(type_name)}'")
        elif kw == b"novalues":
            raise messages.error("ERR NOVALUES option can only be used in HSCAN")
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


@command("ping", -1, summary="PONG, or echo the message")
def ping(ctx: Context, argv: list[bytes]) -> Any:
    if len(argv) > 2:
        raise messages.error(messages.WRONG_ARITY, name="ping")
    return "PONG" if len(argv) == 1 else argv[1]


@command("echo", 2, summary="Echo the message")
def echo(ctx: Context, argv: list[bytes]) -> Any:
    return argv[1]


# --------------------------------------------------------------------------- CONFIG

container("config", summary="Get and set the store's stream node limits")

CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "HELP",
    "    Print this help.",
]

_PARAMS = {
    b"stream-node-max-entries": "node_max_entries",
    b"stream-node-max-bytes": "node_max_bytes",
}
_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2,
          b"g": 1000**3, b"gb": 1024**3}  # fmt: skip


@subcommand("config", "help", 2)
def config_help(ctx: Context, argv: list[bytes]) -> Any:
    return list(CONFIG_HELP)


@subcommand("config", "get", -3)
def config_get(ctx: Context, argv: list[bytes]) -> Any:
    config = ctx.txn.config()
    reply: list[bytes] = []
    seen: set[bytes] = set()
    for pattern in argv[2:]:
        lowered = keyword(pattern)
        exact = not any(c in lowered for c in b"*?[")
        for name, attr in _PARAMS.items():
            if name in seen or not (lowered == name if exact else glob.match(lowered, name)):
                continue
            seen.add(name)
            reply += [pattern if exact else name, b"%d" % getattr(config, attr)]
    return reply


def _memory_value(raw: bytes) -> int | None:
    """Redis's memory values: an unsigned integer with an optional unit (k, kb, m, mb, g, gb)."""
    text = raw.lower()
    digits = text.rstrip(b"kmgb")
    unit = text[len(digits) :]
    if unit not in _UNITS or not digits.isdigit():
        return None
    return int(digits) * _UNITS[unit]


def _config_value(name: bytes, typed: bytes, raw: bytes) -> int:
    def failed(reason: str) -> Exception:
        return messages.error(
            messages.CONFIG_SET_FAILED, name=messages.sanitize(typed), reason=reason
        )

    if name == b"stream-node-max-bytes":
        value = _memory_value(raw)
        if value is None:
            raise failed("argument must be a memory value")
    else:
        value = string2ll(raw)
        if value is None:
            raise failed("argument couldn't be parsed into an integer")
    if not 0 <= value <= INT64_MAX:
        raise failed(f"argument must be between 0 and {INT64_MAX} inclusive")
    return value


@subcommand("config", "set", -4, write=True)
def config_set(ctx: Context, argv: list[bytes]) -> Any:
    pairs = argv[2:]
    if len(pairs) % 2:
        raise messages.error(messages.SYNTAX)
    changes: dict[str, int] = {}
    names = [keyword(n) for n in pairs[0::2]]
    for name_arg, name in zip(pairs[0::2], names):
        if name not in _PARAMS:
            raise messages.error(messages.CONFIG_UNKNOWN_OPTION, name=messages.sanitize(name_arg))
    for name, typed, value_arg in zip(names, pairs[0::2], pairs[1::2]):
        attr = _PARAMS[name]
        if attr in changes:
            raise messages.error(
                messages.CONFIG_SET_FAILED,
                name=messages.sanitize(typed),
                reason="duplicate parameter",
            )
        changes[attr] = _config_value(name, typed, value_arg)
    ctx.txn.set_config(replace(ctx.txn.config(), **changes))
    return "OK"
