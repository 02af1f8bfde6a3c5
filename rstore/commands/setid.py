"""XSETID: argv parsing in Redis's order; the semantics are in :mod:`rstore.streams.setid`."""

from __future__ import annotations

from typing import Any

from rstore import ids, messages
from rstore.commands.argv import is_kw, parse_int
from rstore.commands.registry import Context, command
from rstore.streams import setid

__all__: list[str] = []


@command("xsetid", -3, write=True, summary="Set a stream's last ID and counters")
def xsetid(ctx: Context, argv: list[bytes]) -> Any:
    last_id = ids.parse_id(argv[2], strict=True)
    entries_added: int | None = None
    max_deleted: ids.ID | None = None
    i = 3
    argc = len(argv)
    while i < argc:
        more = argc - 1 - i
        if is_kw(argv[i], b"entriesadded") and more:
            entries_added = parse_int(argv[i + 1])
            if entries_added < 0:
                raise messages.error(messages.XSETID_ENTRIES_ADDED_NEGATIVE)
        elif is_kw(argv[i], b"maxdeletedid") and more:
            max_deleted = ids.parse_id(argv[i + 1], strict=True)
            if last_id < max_deleted:
                raise messages.error(messages.XSETID_SMALLER_THAN_MAXDEL_ARG)
        else:
            raise messages.error(messages.SYNTAX)
        i += 2
    setid.set_id(ctx.txn, argv[1], last_id, entries_added, max_deleted)
    return "OK"
