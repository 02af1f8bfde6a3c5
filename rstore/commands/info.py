"""XINFO: HELP and STREAM [FULL [COUNT n]]."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.registry import Context, container, subcommand, subcommand_syntax_error
from rstore.commands.reply import entries_reply, entry_reply
from rstore.ids import format_id
from rstore.numbers import as_signed64
from rstore.streams import groups
from rstore.streams.group_info import consumers_info, full_groups, groups_info
from rstore.streams.info import stream_info
from rstore.streams.keyspace import StreamRef, lookup_stream

container("xinfo", summary="Inspect streams")

XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Print this help.",
]


@subcommand("xinfo", "help", 2)
def xinfo_help(ctx: Context, argv: list[bytes]) -> Any:
    return list(XINFO_HELP)


def lookup_for_xinfo(ctx: Context, key: bytes) -> StreamRef:
    stream = lookup_stream(ctx.txn, key)
    if stream is None:
        raise messages.error(messages.NO_SUCH_KEY)
    return stream


@subcommand("xinfo", "stream", -3)
def xinfo_stream(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_for_xinfo(ctx, argv[2])
    opts = argv[3:]
    full = bool(opts)
    count = 10
    if len(opts) not in (0, 1, 3):
        raise subcommand_syntax_error(argv)
    if opts:
        if keyword(opts[0]) != b"full":
            raise subcommand_syntax_error(argv)
        if len(opts) == 3:
            if keyword(opts[1]) != b"count":
                raise subcommand_syntax_error(argv)
            count = parse_int(opts[2])
            if count < 0:
                count = 10
    info = stream_info(ctx.txn, stream, full=full, count=count)
    reply: list[Any] = [
        b"length", info.length,
        b"radix-tree-keys", info.radix_tree_keys,
        b"radix-tree-nodes", info.radix_tree_nodes,
        b"last-generated-id", format_id(info.last_generated_id),
        b"max-deleted-entry-id", format_id(info.max_deleted_entry_id),
        b"entries-added", info.entries_added,
        b"recorded-first-entry-id", format_id(info.recorded_first_entry_id),
    ]  # fmt: skip
    if full:
        assert info.entries is not None
        reply += [
            b"entries", entries_reply(info.entries),
            b"groups", _full_groups(ctx, stream, count),
        ]  # fmt: skip
    else:
        reply += [
            b"groups", info.groups,
            b"first-entry", None if info.first_entry is None else entry_reply(info.first_entry),
            b"last-entry", None if info.last_entry is None else entry_reply(info.last_entry),
        ]  # fmt: skip
    return reply


def _full_groups(ctx: Context, stream: StreamRef, count: int) -> list[Any]:
    out: list[Any] = []
    for g in full_groups(ctx.txn, stream, count):
        consumers = [
            [
                b"name", c.name,
                b"seen-time", c.seen_time,
                b"active-time", c.active_time,
                b"pel-count", c.pel_count,
                b"pending", [[format_id(eid), t, as_signed64(n)] for eid, t, n in c.pending],
            ]
            for c in g.consumers
        ]  # fmt: skip
        out.append(
            [
                b"name", g.name,
                b"last-delivered-id", format_id(g.last_delivered_id),
                b"entries-read", g.entries_read,
                b"lag", g.lag,
                b"pel-count", g.pel_count,
                b"pending",
                [[format_id(eid), who, t, as_signed64(n)] for eid, who, t, n in g.pending],
                b"consumers", consumers,
            ]
        )  # fmt: skip
    return out


@subcommand("xinfo", "groups", 3)
def xinfo_groups(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_for_xinfo(ctx, argv[2])
    return [
        [
            b"name", g.name,
            b"consumers", g.consumers,
            b"pending", g.pending,
            b"last-delivered-id", format_id(g.last_delivered_id),
            b"entries-read", g.entries_read,
            b"lag", g.lag,
        ]
        for g in groups_info(ctx.txn, stream)
    ]  # fmt: skip


@subcommand("xinfo", "consumers", 4)
def xinfo_consumers(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_for_xinfo(ctx, argv[2])
    group = groups.find_group(ctx.txn, stream, argv[3])
    if group is None:
        raise messages.error(
            "NOGROUP No such consumer group '{group}' for key name '{key}'",
            group=messages.sanitize(argv[3]),
            key=messages.sanitize(argv[2]),
        )
    now = ctx.now_ms
    return [
        [
            b"name", c.name,
            b"pending", c.pending,
            b"idle", max(now - c.seen_time, 0),
            b"inactive", -1 if c.active_time == -1 else now - c.active_time,
        ]
        for c in consumers_info(ctx.txn, group)
    ]  # fmt: skip
