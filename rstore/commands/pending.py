"""XACK, XNACK and XPENDING."""

from __future__ import annotations

import time
from typing import Any

from rstore import ids, messages
from rstore.commands.argv import keyword, parse_ids, parse_int
from rstore.commands.registry import Context, command
from rstore.commands.reply import NIL_ARRAY, pending_rows_resp
from rstore.model import PendingEntry
from rstore.numbers import UINT64_MAX, as_signed64
from rstore.storage.records.layout import GroupMeta
from rstore.streams import groups
from rstore.streams.keyspace import StreamRef, lookup_stream
from rstore.streams.nack import Mode, release
from rstore.streams.pending import ack, pending_range, pending_summary


def lookup_group(ctx: Context, key: bytes, name: bytes) -> tuple[StreamRef, GroupMeta]:
    """The stream and group for XPENDING/XCLAIM/XAUTOCLAIM, or their shared NOGROUP error."""
    stream = lookup_stream(ctx.txn, key)
    group = None if stream is None else groups.find_group(ctx.txn, stream, name)
    if stream is None or group is None:
        raise messages.error(
            messages.NOGROUP_PENDING, key=messages.sanitize(key), group=messages.sanitize(name)
        )
    return stream, group


def _public_summary(reply: Any) -> Any:
    """The summary of an empty PEL ends in a nil array."""
    if len(reply) == 4 and reply[3] is NIL_ARRAY:
        return [*reply[:3], None]
    return reply


@command("xack", -4, write=True, summary="Acknowledge pending entries")
def xack(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    group = None if stream is None else groups.find_group(ctx.txn, stream, argv[2])
    if stream is None or group is None:
        return 0
    id_list = parse_ids(argv[3:])
    return ack(ctx.txn, stream, group, id_list)


@command("xnack", -7, write=True, summary="Give pending entries back to their group (Redis 8.8)")
def xnack(ctx: Context, argv: list[bytes]) -> Any:
    mode = Mode.parse(keyword(argv[3]))
    if mode is None:
        raise messages.error(messages.XNACK_MODE)
    id_args: list[bytes] | None = None
    retry_count: int | None = None
    force = False
    i, argc = 4, len(argv)
    while i < argc:
        kw, more = keyword(argv[i]), argc - 1 - i
        if kw == b"ids" and more:
            numids = parse_int(argv[i + 1], messages.XNACK_NUMIDS)
            if numids <= 0:
                raise messages.error(messages.XNACK_NUMIDS)
            if numids > more - 1:
                raise messages.error(messages.XNACK_NUMIDS_MISMATCH)
            id_args = argv[i + 2 : i + 2 + numids]
            i += 2 + numids
        elif kw == b"retrycount" and more:
            retry_count = parse_int(argv[i + 1])
            if retry_count < 0:
                raise messages.error(messages.XNACK_RETRYCOUNT)
            i += 2
        elif kw == b"force":
            force = True
            i += 1
        else:
            raise messages.error(messages.XNACK_OPTION, token=messages.sanitize(argv[i]))
    if id_args is None:
        raise messages.error(messages.XNACK_NO_IDS)
    id_list = parse_ids(id_args)
    stream, group = lookup_group(ctx, argv[1], argv[2])
    return release(
        ctx.txn, stream, group, id_list, mode, retry_count=retry_count, force=force,
        now_us=time.time_ns() // 1000,
    )  # fmt: skip


@command("xpending", -3, public=_public_summary, summary="Inspect pending entries of a group")
def xpending(ctx: Context, argv: list[bytes]) -> Any:
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise messages.error(messages.SYNTAX)
    consumer = None
    min_idle = 0
    if argc >= 6:
        at = 3
        if keyword(argv[3]) == b"idle":
            min_idle = parse_int(argv[4])
            if argc < 8:
                raise messages.error(messages.SYNTAX)
            at += 2
        count = max(parse_int(argv[at + 2]), 0)
        start = ids.parse_interval_id(argv[at], missing_seq=0, is_end=False)
        end = ids.parse_interval_id(argv[at + 1], missing_seq=UINT64_MAX, is_end=True)
        if at + 3 < argc:
            consumer = argv[at + 3]
    _, group = lookup_group(ctx, argv[1], argv[2])
    if argc == 3:
        summary = pending_summary(ctx.txn, group)
        if summary.count == 0:
            return [0, None, None, NIL_ARRAY]
        assert summary.first is not None and summary.last is not None
        return [
            summary.count,
            ids.format_id(summary.first),
            ids.format_id(summary.last),
            [[name, b"%d" % n] for name, n in summary.consumers],
        ]
    if consumer is not None and groups.find_consumer(ctx.txn, group, consumer) is None:
        return []
    found = pending_range(
        ctx.txn, group, start, end, count,
        consumer=consumer, min_idle_ms=min_idle, now_ms=ctx.now_ms,
    )  # fmt: skip
    rows = (_row(p, ctx.now_ms) for p in found)
    if ctx.wire:  # a network front: the RESP bytes, with no Python list per entry
        return pending_rows_resp(rows)
    return [list(row) for row in rows]


def _row(p: PendingEntry, now_ms: int) -> tuple[bytes, bytes, int, int]:
    """An entry of XPENDING's extended reply: its ID, owner, idle time, deliveries."""
    idle = -1 if p.released else max(now_ms - p.delivery_time_ms, 0)
    assert p.consumer is not None  # a store's PEL names every owner (b"": released)
    return ids.format_id(p.id), p.consumer, idle, as_signed64(p.delivery_count)
