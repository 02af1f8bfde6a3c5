"""XINFO: HELP and STREAM [FULL [COUNT n]]."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.read import range_resp_reply
from rstore.commands.registry import Context, container, subcommand, subcommand_syntax_error
from rstore.commands.reply import RespReply, entries_reply, entry_reply, pending_rows_resp
from rstore.ids import MAX_ID, MIN_ID, format_id
from rstore.model import GroupInfo, Retention
from rstore.numbers import as_signed64
from rstore.streams import groups
from rstore.streams.info import consumer_infos, full_pending, group_infos, stream_info
from rstore.streams.keyspace import StreamRef, lookup_stream

container("xinfo", summary="Inspect streams")


@subcommand("xinfo", "help", 2)
def xinfo_help(ctx: Context, argv: list[bytes]) -> Any:
    return list(messages.XINFO_HELP)


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
    # a network front takes the entries and pending entries as RESP, written as they are read
    info = stream_info(ctx.txn, argv[2], stream, ctx.now_ms, full=full, count=count, lazy=ctx.wire)
    state = info.state
    idmp = info.idempotency
    assert idmp is not None
    reply: list[Any] = [
        b"length", state.length,
        b"radix-tree-keys", info.nodes,
        b"radix-tree-nodes", info.radix_tree_nodes,
        b"last-generated-id", format_id(state.last_id),
        b"max-deleted-entry-id", format_id(state.max_deleted_entry_id or (0, 0)),
        b"entries-added", state.entries_added,
        b"recorded-first-entry-id", format_id(state.first_id or (0, 0)),
        b"idmp-duration", idmp.duration,
        b"idmp-maxsize", idmp.maxsize,
        b"pids-tracked", idmp.producers,
        b"iids-tracked", idmp.tracked,
        b"iids-added", idmp.added,
        b"iids-duplicates", idmp.duplicates,
    ]  # fmt: skip
    if full and ctx.wire:
        reply += [
            b"entries", range_resp_reply(ctx, stream, MIN_ID, MAX_ID, count),
            b"groups", [_full_group(g, _pending_resp(ctx, stream, g, count)) for g in info.groups],
        ]  # fmt: skip
    elif full:
        assert info.entries is not None
        reply += [
            b"entries", entries_reply(list(info.entries)),
            b"groups", [_full_group(g) for g in info.groups],
        ]  # fmt: skip
    else:
        reply += [
            b"groups", state.group_count,
            b"first-entry", None if info.first_entry is None else entry_reply(info.first_entry),
            b"last-entry", None if info.last_entry is None else entry_reply(info.last_entry),
        ]  # fmt: skip
    if info.retention is not None:
        reply += _retention_fields(info.retention)
        if info.node_bytes is not None:
            reply += [b"retention-node-bytes", info.node_bytes]
    return reply


def _retention_fields(policy: Retention) -> list[Any]:
    """rstore's retention policy of the stream, after Redis's fields (only when one applies):
    the pattern that chose it, each limit that is set, the reference policy."""
    fields: list[Any] = [b"retention-pattern", policy.pattern]
    if policy.max_age_ms is not None:
        fields += [b"retention-max-age-ms", policy.max_age_ms]
    if policy.max_entries is not None:
        fields += [b"retention-max-entries", policy.max_entries]
    if policy.max_bytes is not None:
        fields += [b"retention-max-bytes", policy.max_bytes]
    return [*fields, b"retention-ref", policy.ref.encode()]


def _pending_resp(
    ctx: Context, stream: StreamRef, g: GroupInfo, count: int
) -> tuple[RespReply, dict[bytes, RespReply]]:
    """XINFO STREAM FULL's pending entries of a group and of each of its consumers, as RESP
    written while they are read (the same bytes in RESP2 and RESP3)."""
    name = g.state.name
    group = pending_rows_resp(
        (format_id(p.id), p.consumer or b"", p.delivery_time_ms, as_signed64(p.delivery_count))
        for p in full_pending(ctx.txn, stream, name, count)
    )
    own = {}
    rows = bytearray()
    for c in g.consumers:
        rows.clear()
        n = 0
        for p in full_pending(ctx.txn, stream, name, count, c.state.name):
            rows += b"*3\r\n%s:%d\r\n:%d\r\n" % (
                _bulk(format_id(p.id)), p.delivery_time_ms, as_signed64(p.delivery_count)
            )  # fmt: skip
            n += 1
        own[c.state.name] = RespReply(b"*%d\r\n%s" % (n, rows))
    return group, own


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


def _full_group(
    g: GroupInfo, written: tuple[RespReply, dict[bytes, RespReply]] | None = None
) -> list[Any]:
    """A group of XINFO STREAM FULL; ``written``: its pending entries and its consumers', as
    RESP already (:func:`_pending_resp`)."""
    consumers = [
        [
            b"name", c.state.name,
            b"seen-time", c.state.seen_time_ms,
            b"active-time", c.state.active_time_ms,
            b"pel-count", c.state.pel_count,
            b"pending",
            written[1][c.state.name] if written is not None else
            [[format_id(p.id), p.delivery_time_ms, as_signed64(p.delivery_count)]
             for p in c.pending],
        ]
        for c in g.consumers
    ]  # fmt: skip
    return [
        b"name", g.state.name,
        b"last-delivered-id", format_id(g.state.last_id),
        b"entries-read", g.entries_read,
        b"lag", g.lag,
        b"pel-count", g.state.pel_count,
        b"nacked-count", g.released or 0,
        b"pending",
        written[0] if written is not None else
        [[format_id(p.id), p.consumer, p.delivery_time_ms, as_signed64(p.delivery_count)]
         for p in g.pending],
        b"consumers", consumers,
    ]  # fmt: skip


@subcommand("xinfo", "groups", 3)
def xinfo_groups(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_for_xinfo(ctx, argv[2])
    return [
        [
            b"name", g.state.name,
            b"consumers", g.state.consumer_count,
            b"pending", g.state.pel_count,
            b"last-delivered-id", format_id(g.state.last_id),
            b"entries-read", g.entries_read,
            b"lag", g.lag,
        ]
        for g in group_infos(ctx.txn, stream)
    ]  # fmt: skip


@subcommand("xinfo", "consumers", 4)
def xinfo_consumers(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_for_xinfo(ctx, argv[2])
    group = groups.find_group(ctx.txn, stream, argv[3])
    if group is None:
        raise messages.error(
            messages.NOGROUP_FOR_KEY,
            group=messages.sanitize(argv[3]),
            key=messages.sanitize(argv[2]),
        )
    now = ctx.now_ms
    return [
        [
            b"name", c.state.name,
            b"pending", c.state.pel_count,
            b"idle", max(now - c.state.seen_time_ms, 0),
            b"inactive", _inactive(c.state.active_time_ms, now),
        ]
        for c in consumer_infos(ctx.txn, group)
    ]  # fmt: skip


def _inactive(active_time_ms: int | None, now_ms: int) -> int:
    """XINFO CONSUMERS's ``inactive``: ms since the last successful read or claim, -1 never."""
    return -1 if active_time_ms is None or active_time_ms == -1 else now_ms - active_time_ms
