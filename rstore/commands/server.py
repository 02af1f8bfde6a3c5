"""Server commands: PING, ECHO, and CONFIG for the store's settings (the stream node limits,
``rdbcompression`` and the defaults of new streams' idempotency settings, kept in the store, so
every process sees the same)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rstore import glob, messages
from rstore.commands.argv import keyword
from rstore.commands.registry import Context, command, container, subcommand
from rstore.numbers import INT64_MAX, string2ll
from rstore.streams.idempotency import MAX_DURATION, MAX_MAXSIZE


@command("ping", -1, summary="PONG, or echo the message")
def ping(ctx: Context, argv: list[bytes]) -> Any:
    if len(argv) > 2:
        raise messages.error(messages.WRONG_ARITY, name="ping")
    return "PONG" if len(argv) == 1 else argv[1]


@command("echo", 2, summary="Echo the message")
def echo(ctx: Context, argv: list[bytes]) -> Any:
    return argv[1]


# --------------------------------------------------------------------------- CONFIG

container("config", summary="Get and set the store's settings (node limits, rdbcompression)")


_PARAMS = {
    b"stream-node-max-entries": "node_max_entries",
    b"stream-node-max-bytes": "node_max_bytes",
    b"rdbcompression": "rdb_compression",
    b"stream-idmp-duration": "idmp_duration",
    b"stream-idmp-maxsize": "idmp_maxsize",
}
#: the bounds of the bounded integer settings
_BOUNDS = {b"stream-idmp-duration": (1, MAX_DURATION), b"stream-idmp-maxsize": (1, MAX_MAXSIZE)}
_BOOLEANS = {b"yes": True, b"no": False}
_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2,
          b"g": 1000**3, b"gb": 1024**3}  # fmt: skip


@subcommand("config", "help", 2)
def config_help(ctx: Context, argv: list[bytes]) -> Any:
    return list(messages.CONFIG_HELP)


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
            reply += [pattern if exact else name, _shown(getattr(config, attr))]
    return reply


def _shown(value: int | bool) -> bytes:
    """A setting as CONFIG GET answers it: a boolean as ``yes`` / ``no``."""
    if isinstance(value, bool):
        return b"yes" if value else b"no"
    return b"%d" % value


def _memory_value(raw: bytes) -> int | None:
    """Redis's memory values: an unsigned integer with an optional unit (k, kb, m, mb, g, gb)."""
    text = raw.lower()
    digits = text.rstrip(b"kmgb")
    unit = text[len(digits) :]
    if unit not in _UNITS or not digits.isdigit():
        return None
    return int(digits) * _UNITS[unit]


def _config_value(name: bytes, typed: bytes, raw: bytes) -> int | bool:
    def failed(reason: str) -> Exception:
        return messages.error(
            messages.CONFIG_SET_FAILED, name=messages.sanitize(typed), reason=reason
        )

    if name == b"rdbcompression":
        flag = _BOOLEANS.get(raw.lower())
        if flag is None:
            raise failed("argument must be 'yes' or 'no'")
        return flag
    if name == b"stream-node-max-bytes":
        value = _memory_value(raw)
        if value is None:
            raise failed("argument must be a memory value")
    else:
        value = string2ll(raw)
        if value is None:
            raise failed("argument couldn't be parsed into an integer")
    low, high = _BOUNDS.get(name, (0, INT64_MAX))
    if not low <= value <= high:
        raise failed(f"argument must be between {low} and {high} inclusive")
    return value


@subcommand("config", "set", -4, write=True)
def config_set(ctx: Context, argv: list[bytes]) -> Any:
    pairs = argv[2:]
    if len(pairs) % 2:
        raise messages.error(messages.SYNTAX)
    changes: dict[str, Any] = {}  # StoreConfig field -> value
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
