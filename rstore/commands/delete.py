"""XDEL: argv parsing; the semantics are in :mod:`rstore.streams.delete`."""

from __future__ import annotations

from typing import Any

from rstore.commands.argv import parse_ids
from rstore.commands.registry import Context, command
from rstore.streams import delete
from rstore.streams.keyspace import lookup_stream

__all__: list[str] = []


@command("xdel", -3, write=True, summary="Delete entries from a stream")
def xdel(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        return 0
    id_list = parse_ids(argv[2:])
    return delete.delete_entries(ctx.txn, stream, id_list)
