"""XINFO: HELP and STREAM [FULL [COUNT n]]."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.args import keyword, parse_int
from rstore.commands.registry import Context, container, subcommand, subcommand_syntax_error
from rstore.commands.reply import entries_reply, entry_reply
from rstore.ids import format_id
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
        reply += [b"entries", entries_reply(info.entries), b"groups", []]
    else:
        reply += [
            b"groups", info.groups,
            b"first-entry", None if info.first_entry is None else entry_reply(info.first_entry),
            b"last-entry", None if info.last_entry is None else entry_reply(info.last_entry),
        ]  # fmt: skip
    return reply
