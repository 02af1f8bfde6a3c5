"""XCFGSET (Redis 8.6), a stream's idempotency settings, and XIDMPRECORD (Redis 8.8), which
records an idempotent ID for an entry (what Redis's AOF rewrite writes); the semantics are in
:mod:`rstore.streams.idempotency`."""

from __future__ import annotations

from typing import Any

from rstore import ids, messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.registry import Context, command
from rstore.streams import idempotency
from rstore.streams.keyspace import lookup_stream
from rstore.streams.lookup import EntryLookup

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


@command("xidmprecord", 5, write=True, summary="Record an idempotent ID of an entry (Redis 8.8)")
def xidmprecord(ctx: Context, argv: list[bytes]) -> Any:
    entry_id = ids.parse_id(argv[4], strict=True)
    pid, iid = argv[2], argv[3]
    if not pid:
        raise messages.error(messages.XIDMPRECORD_NO_PID)
    if not iid:
        raise messages.error(messages.XIDMPRECORD_NO_IID)
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        raise messages.error(messages.NO_SUCH_KEY)
    if EntryLookup(ctx.txn, stream).get(entry_id) is None:
        raise messages.error(messages.XIDMPRECORD_NO_ENTRY)
    known = idempotency.recorded_entry(ctx.txn, stream.handle, pid, iid, ctx.now_ms)
    if known is None:
        idempotency.record(ctx.txn, stream.handle, pid, iid, entry_id)
    elif known != entry_id:
        raise messages.error(messages.XIDMPRECORD_OTHER_ID)
    return "OK"
