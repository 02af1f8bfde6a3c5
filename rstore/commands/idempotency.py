"""XCFGSET (Redis 8.6): a stream's idempotency settings; the semantics are in
:mod:`rstore.streams.idempotency`."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.registry import Context, command
from rstore.streams import idempotency
from rstore.streams.keyspace import lookup_stream

__all__: list[str] = []

#: keyword -> (its name in errors, the largest value, the range error)
_SETTINGS = {
    b"idmp-duration": ("IDMP-DURATION", idempotency.MAX_DURATION, messages.IDMP_DURATION_RANGE),
    b"idmp-maxsize": ("IDMP-MAXSIZE", idempotency.MAX_MAXSIZE, messages.IDMP_MAXSIZE_RANGE),
}


@command("xcfgset", -2, write=True, summary="Set a stream's idempotency settings (Redis 8.6)")
def xcfgset(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        raise messages.error(messages.NO_SUCH_KEY)
    given: dict[bytes, int] = {}
    i = 2
    while i < len(argv):
        kw = keyword(argv[i])
        if kw not in _SETTINGS or i + 1 >= len(argv):
            raise messages.error(messages.SYNTAX)
        name, largest, out_of_range = _SETTINGS[kw]
        if kw in given:
            raise messages.error(messages.XCFGSET_TWICE, name=name)
        value = parse_int(argv[i + 1])
        if not 1 <= value <= largest:
            raise messages.error(out_of_range)
        given[kw] = value
        i += 2
    if not given:
        raise messages.error(messages.XCFGSET_NOTHING)
    idempotency.configure(
        ctx.txn, stream.handle, given.get(b"idmp-duration"), given.get(b"idmp-maxsize")
    )
    return "OK"
