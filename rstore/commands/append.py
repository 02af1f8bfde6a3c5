"""XADD: its argv parsed in Redis's order (the trimming options by :mod:`rstore.commands.trim`);
the semantics are in :mod:`rstore.streams.append`."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.registry import Context, command
from rstore.commands.trim import parse_add_or_trim
from rstore.streams import append

__all__: list[str] = []


@command("xadd", -5, write=True, summary="Append an entry to a stream")
def xadd(ctx: Context, argv: list[bytes]) -> Any:
    if argv[2] == b"*":  # fast path: no options
        field_pos = 3
        explicit = None
        nomkstream = False
        trim_spec = None
    else:
        parsed = parse_add_or_trim(argv, True)
        field_pos = parsed.id_pos + 1
        explicit = parsed.explicit_id
        nomkstream = parsed.nomkstream
        trim_spec = parsed.trim
    nfv = len(argv) - field_pos
    if nfv < 2 or nfv % 2:
        raise messages.error(messages.WRONG_ARITY, name="xadd")
    new_id = append.add(
        ctx.txn,
        argv[1],
        argv[field_pos:],
        explicit_id=explicit,
        nomkstream=nomkstream,
        trim_spec=trim_spec,
        now_ms=ctx.now_ms,
    )
    if new_id is None:
        return None
    ctx.signal(argv[1])
    return b"%d-%d" % new_id
