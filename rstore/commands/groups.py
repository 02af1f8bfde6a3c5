"""XGROUP: CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP.

Every subcommand but HELP is processed in the same order (Redis ``xgroupCommand``): option scan
from argv[5] (MKSTREAM only for CREATE, ENTRIESREAD for CREATE and SETID), key lookup, the
"key must exist" rule, the "group must exist" rule for SETID/CREATECONSUMER/DELCONSUMER, then
the subcommand with its exact argument count.
"""

from __future__ import annotations

from typing import Any

from rstore import ids, messages
from rstore.commands.argv import cstr, keyword, parse_int
from rstore.commands.registry import Context, container, subcommand, subcommand_syntax_error
from rstore.model import INVALID_ENTRIES_READ
from rstore.streams import groups
from rstore.streams.keyspace import create_stream, lookup_stream

container("xgroup", summary="Manage consumer groups")


@subcommand("xgroup", "help", 2)
def xgroup_help(ctx: Context, argv: list[bytes]) -> Any:
    return list(messages.XGROUP_HELP)


def _common(ctx: Context, argv: list[bytes], sub: bytes) -> tuple[Any, Any, bool, int]:
    """Options, key and group checks shared by the subcommands: ``(stream, group, mkstream,
    entries_read)``."""
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    i = 5
    while i < len(argv):
        kw = keyword(argv[i])
        if sub == b"create" and kw == b"mkstream":
            mkstream = True
            i += 1
        elif sub in (b"create", b"setid") and kw == b"entriesread" and i + 1 < len(argv):
            entries_read = parse_int(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise messages.error(messages.XGROUP_ENTRIESREAD)
            i += 2
        else:
            raise subcommand_syntax_error(argv)
    stream = lookup_stream(ctx.txn, argv[2])
    if stream is None and not mkstream:
        raise messages.error(messages.XGROUP_NO_KEY)
    group = None if stream is None else groups.find_group(ctx.txn, stream, argv[3])
    if group is None and sub in (b"setid", b"createconsumer", b"delconsumer"):
        raise messages.error(
            messages.NOGROUP_FOR_KEY,
            group=messages.sanitize(argv[3]),
            key=messages.sanitize(argv[2]),
        )
    return stream, group, mkstream, entries_read


@subcommand("xgroup", "create", -5, write=True)
def xgroup_create(ctx: Context, argv: list[bytes]) -> Any:
    stream, group, _, entries_read = _common(ctx, argv, b"create")
    if not 5 <= len(argv) <= 8:
        raise subcommand_syntax_error(argv)
    if cstr(argv[4]) == b"$":
        last_id = stream.meta.last_id if stream is not None else (0, 0)
    else:
        last_id = ids.parse_id(argv[4], strict=True)
    if stream is None:
        stream = create_stream(ctx.txn, argv[2])
    if group is not None or not groups.create_group(
        ctx.txn, stream, argv[3], last_id, entries_read
    ):
        raise messages.error(messages.BUSYGROUP)
    return "OK"


@subcommand("xgroup", "setid", -5, write=True)
def xgroup_setid(ctx: Context, argv: list[bytes]) -> Any:
    stream, group, _, entries_read = _common(ctx, argv, b"setid")
    if len(argv) not in (5, 7):
        raise subcommand_syntax_error(argv)
    if cstr(argv[4]) == b"$":
        last_id = stream.meta.last_id
    else:
        last_id = ids.parse_id(argv[4], strict=False)
    groups.set_group_id(ctx.txn, stream, group, last_id, entries_read)
    return "OK"


@subcommand("xgroup", "destroy", 4, write=True)
def xgroup_destroy(ctx: Context, argv: list[bytes]) -> Any:
    stream, group, _, _ = _common(ctx, argv, b"destroy")
    if group is None:
        return 0
    groups.destroy_group(ctx.txn, stream, group)
    ctx.signal(argv[2])  # blocked XREADGROUP readers of this group get NOGROUP
    return 1


@subcommand("xgroup", "createconsumer", 5, write=True)
def xgroup_createconsumer(ctx: Context, argv: list[bytes]) -> Any:
    stream, group, _, _ = _common(ctx, argv, b"createconsumer")
    created = groups.create_consumer(ctx.txn, stream, group, argv[4], ctx.now_ms)
    return 0 if created is None else 1


@subcommand("xgroup", "delconsumer", 5, write=True)
def xgroup_delconsumer(ctx: Context, argv: list[bytes]) -> Any:
    stream, group, _, _ = _common(ctx, argv, b"delconsumer")
    return groups.delete_consumer(ctx.txn, stream, group, argv[4])
