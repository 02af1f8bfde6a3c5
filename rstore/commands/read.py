"""XLEN, XRANGE, XREVRANGE and XREAD (the non-blocking part)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rstore import ids, messages
from rstore.codec import stream_node as sn
from rstore.commands.argv import cstr, keyword, parse_int
from rstore.commands.executor import Blocked, Deferred
from rstore.commands.registry import Context, command
from rstore.commands.reply import (
    NIL_ARRAY,
    DictEntries,
    RespReply,
    StreamedEntries,
    StreamedReads,
    entries_reply,
)
from rstore.model import ID, Entry
from rstore.numbers import INT64_MAX, UINT64_MAX
from rstore.storage.waiting.notify import KIND_READ
from rstore.streams.keyspace import StreamRef, lookup_stream
from rstore.streams.limits import ReplyLimits, entry_size
from rstore.streams.read import (
    STREAM_BYTES,
    CopiedRange,
    Nodes,
    copy_range,
    count_range,
    range_pages,
    range_resp,
    read_after,
    scan_nodes,
)

__all__ = [
    "STREAM_BYTES",
    "XReadArgs",
    "copied_by_key",
    "entries_by_key",
    "parse_xread",
    "serve_xread",
]


@command("xlen", 2, summary="Number of entries in a stream")
def xlen(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    return 0 if stream is None else stream.meta.length


def _range(ctx: Context, argv: list[bytes], reverse: bool) -> Any:
    start_arg, end_arg = (argv[3], argv[2]) if reverse else (argv[2], argv[3])
    start = ids.parse_interval_id(start_arg, missing_seq=0, is_end=False)
    end = ids.parse_interval_id(end_arg, missing_seq=UINT64_MAX, is_end=True)
    count = -1
    i = 4
    argc = len(argv)
    while i < argc:
        if keyword(argv[i]) == b"count" and i + 1 < argc:
            count = max(parse_int(argv[i + 1]), 0)
            i += 2
        else:
            raise messages.error(messages.SYNTAX)
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        return []
    if count == 0:
        return NIL_ARRAY
    # copy the nodes now, decode after the transaction ended (executor.Deferred)
    limit = max(count, 0)
    nodes = copy_range(ctx.txn, stream, start, end, limit, reverse=reverse)
    streamed = resp = None
    if _node_bytes(nodes) > STREAM_BYTES:

        def streamed() -> StreamedEntries:
            return _streamed(nodes, start, end, limit, reverse)

    else:

        def resp() -> RespReply:
            return _resp_reply(range_resp(nodes, start, end, limit, reverse=reverse))

    return Deferred(
        lambda: entries_reply(scan_nodes(nodes, start, end, limit, reverse=reverse)),
        lambda: DictEntries(scan_nodes(nodes, start, end, limit, reverse=reverse, dicts=True)),
        streamed,
        resp,
    )


def _node_bytes(nodes: Nodes) -> int:
    return sum(len(node) for _, node in nodes)


def _streamed(nodes: Nodes, start: ID, end: ID, limit: int, reverse: bool) -> StreamedEntries:
    """The entries of ``nodes`` in ``[start, end]`` (at most ``limit``), as they are written."""
    return StreamedEntries(
        count_range(nodes, start, end, limit, reverse=reverse),
        lambda: range_pages(nodes, start, end, limit, reverse=reverse),
        lambda: range_resp(nodes, start, end, limit, reverse=reverse),
    )


def range_resp_reply(
    ctx: Context, stream: StreamRef, start: ID, end: ID, limit: int, reverse: bool = False
) -> RespReply:
    """The stream's entries in ``[start, end]`` (at most ``limit``; 0: all) as RESP, written
    now from its nodes, with no Python object per entry (for a network front)."""
    nodes = copy_range(ctx.txn, stream, start, end, limit, reverse=reverse)
    return _resp_reply(range_resp(nodes, start, end, limit, reverse=reverse))


def _resp_reply(pages: Iterator[tuple[bytes, int]]) -> RespReply:
    """An entries reply of :func:`range_resp`'s pages, whole."""
    body = []
    count = 0
    for chunk, entries in pages:
        body.append(chunk)
        count += entries
    return RespReply(b"*%d\r\n%s" % (count, b"".join(body)))


@command("xrange", -4, summary="Entries in an ID range, ascending")
def xrange(ctx: Context, argv: list[bytes]) -> Any:
    return _range(ctx, argv, False)


@command("xrevrange", -4, summary="Entries in an ID range, descending")
def xrevrange(ctx: Context, argv: list[bytes]) -> Any:
    return _range(ctx, argv, True)


@dataclass
class XReadArgs:
    """Parsed XREAD / XREADGROUP arguments (before per-key validation)."""

    block_ms: int | None  # None: no BLOCK
    count: int  # 0 = no limit
    keys: list[bytes]
    id_args: list[bytes]
    group: bytes | None = None
    consumer: bytes | None = None
    noack: bool = False
    claim_ms: int | None = None  # CLAIM min-idle-time (Redis 8.4)
    limits: ReplyLimits = field(default_factory=ReplyLimits)  # MAXCOUNT / MAXSIZE (8.10)


def _positive(arg: bytes, message: str) -> int:
    value = parse_int(arg)
    if value <= 0:
        raise messages.error(message)
    return value


def _claim(arg: bytes, group_cmd: bool) -> int:
    if not group_cmd:
        raise messages.error(messages.XREAD_CLAIM_OPTION)
    value = parse_int(arg, messages.CLAIM_NOT_INTEGER)
    if value < 0:
        raise messages.error(messages.CLAIM_NEGATIVE)
    return value


def parse_xread(argv: list[bytes], group_cmd: bool, now_ms: int) -> XReadArgs:
    """The option loop XREAD and XREADGROUP share (Redis ``xreadCommand``)."""
    block_ms: int | None = None
    count = 0
    group = consumer = None
    noack = False
    claim_ms: int | None = None
    limits = ReplyLimits()
    streams_at = 0
    argc = len(argv)
    i = 1
    while i < argc:
        more = argc - 1 - i
        kw = keyword(argv[i])
        if kw == b"maxcount" and more:
            i += 1
            limits.max_count = _positive(argv[i], messages.MAXCOUNT_NOT_POSITIVE)
        elif kw == b"maxsize" and more:
            i += 1
            limits.max_size = _positive(argv[i], messages.MAXSIZE_NOT_POSITIVE)
        elif kw == b"claim" and more:
            i += 1
            claim_ms = _claim(argv[i], group_cmd)
        elif kw == b"block" and more:
            i += 1
            block_ms = parse_int(argv[i], messages.TIMEOUT_NOT_INTEGER)
            if block_ms < 0:
                raise messages.error(messages.TIMEOUT_NEGATIVE)
            if block_ms > INT64_MAX - now_ms:  # the deadline would overflow
                raise messages.error(messages.XREAD_TIMEOUT_RANGE)
        elif kw == b"count" and more:
            i += 1
            count = max(parse_int(argv[i]), 0)
        elif kw == b"streams" and more:
            streams_at = i + 1
            if (argc - streams_at) % 2:
                raise messages.error(
                    messages.XREAD_UNBALANCED,
                    cmd="xreadgroup" if group_cmd else "xread",
                    tok=">" if group_cmd else "$",
                )
            break
        elif kw == b"group" and more >= 2:
            if not group_cmd:
                raise messages.error(messages.XREAD_GROUP_OPTION)
            group, consumer = argv[i + 1], argv[i + 2]
            i += 2
        elif kw == b"noack":
            if not group_cmd:
                raise messages.error(messages.XREAD_NOACK_OPTION)
            noack = True
        else:
            raise messages.error(messages.SYNTAX)
        i += 1
    if streams_at == 0:
        raise messages.error(messages.SYNTAX)
    if group_cmd and group is None:
        raise messages.error(messages.XREADGROUP_NO_GROUP)
    if limits.max_count and count and limits.max_count < count:
        raise messages.error(messages.MAXCOUNT_BELOW_COUNT)
    n = (argc - streams_at) // 2
    keys, id_args = argv[streams_at : streams_at + n], argv[streams_at + n :]
    return XReadArgs(block_ms, count, keys, id_args, group, consumer, noack, claim_ms, limits)


def resolve_xread_ids(ctx: Context, args: XReadArgs) -> list[ids.ID]:
    """Validate each key and turn each ID argument into the ID to read after (XREAD)."""
    out: list[ids.ID] = []
    for key, arg in zip(args.keys, args.id_args):
        stream = lookup_stream(ctx.txn, key)
        token = cstr(arg)
        if token == b"$":
            out.append(stream.meta.last_id if stream is not None else (0, 0))
        elif token == b"+":  # the last entry: read after the ID just before last_id
            if stream is None:
                out.append((0, 0))
            else:
                before = ids.decrement(stream.meta.last_id)
                if before is None:
                    raise messages.error(messages.XREAD_LAST_ID_ZERO)
                out.append(before)
        elif token == b">":
            raise messages.error(messages.XREAD_GT_ID)
        else:
            out.append(ids.parse_id(arg, strict=True))
    return out


def serve_xread(
    ctx: Context,
    keys: list[bytes],
    after: list[ids.ID],
    count: int,
    limits: ReplyLimits | None = None,
) -> list[tuple[bytes, list[Entry]]]:
    """``(key, entries)`` of the keys that have entries after their ID (within ``limits``)."""
    served: list[tuple[bytes, list[Entry]]] = []
    for key, last in zip(keys, after):
        if limits and limits.full():
            break
        stream = lookup_stream(ctx.txn, key)
        if stream is None or stream.meta.length == 0:
            continue
        entries = read_after(ctx.txn, stream, last, limits.count_for(count) if limits else count)
        if limits:
            del entries[limits.take([entry_size(e[0], e[1]) for e in entries]) :]
        if entries:
            served.append((key, entries))
    return served


def entries_by_key(served: list[tuple[bytes, list[Entry]]]) -> Deferred:
    """The ``[[key, entries], ...]`` reply of XREAD (and of XREADGROUP's new entries), built
    after the transaction; or straight into redis-py's form for a client that asks."""
    return Deferred(
        lambda: [[key, entries_reply(entries)] for key, entries in served],
        lambda: DictEntries([[key, sn.dict_entries(entries)] for key, entries in served]),
    )


def read_streams(
    ctx: Context, keys: list[bytes], after: list[ids.ID], count: int
) -> Deferred | None:
    """XREAD's reply without MAXCOUNT / MAXSIZE (``None``: no entry), from the nodes after
    each ID copied out of the transaction (:func:`copied_by_key`)."""
    copied: list[tuple[bytes, CopiedRange]] = []
    for key, last in zip(keys, after):
        stream = lookup_stream(ctx.txn, key)
        start = ids.increment(last)
        if stream is not None and start is not None:
            nodes = copy_range(ctx.txn, stream, start, ids.MAX_ID, count)
            copied.append((key, CopiedRange(nodes, start, ids.MAX_ID, count)))
    return copied_by_key(copied)


def copied_by_key(copied: list[tuple[bytes, CopiedRange]]) -> Deferred | None:
    """The ``[[key, entries], ...]`` reply of XREAD and XREADGROUP's new entries, of ranges
    copied out of the transaction (``None``: no entry in any).  For a network front, one over
    :data:`STREAM_BYTES` of nodes is a :class:`StreamedReads`, written as it is read; else
    the entries are decoded now (:func:`entries_by_key`)."""
    if sum(r.node_bytes() for _, r in copied) <= STREAM_BYTES:
        served = [(key, entries) for key, r in copied if (entries := r.decoded())]
        return entries_by_key(served) if served else None
    parts = [(key, _streamed(r.nodes, r.start, r.end, r.count, False)) for key, r in copied]
    streams = [(key, entries) for key, entries in parts if entries.count]
    if not streams:
        return None

    def decoded() -> list[tuple[bytes, list[Entry]]]:
        return [(key, entries) for key, r in copied if (entries := r.decoded())]

    return Deferred(
        lambda: [[key, entries_reply(entries)] for key, entries in decoded()],
        lambda: DictEntries([[key, sn.dict_entries(entries)] for key, entries in decoded()]),
        lambda: StreamedReads(streams),
    )


@command("xread", -4, summary="Read entries after given IDs from one or more streams")
def xread(ctx: Context, argv: list[bytes]) -> Any:
    args = parse_xread(argv, False, ctx.now_ms)
    after = resolve_xread_ids(ctx, args)
    if args.limits:
        served = serve_xread(ctx, args.keys, after, args.count, args.limits)
        reply = entries_by_key(served) if served else None
    else:
        reply = read_streams(ctx, args.keys, after, args.count)
    if reply is not None:
        return reply
    if args.block_ms is None or ctx.in_batch:
        return NIL_ARRAY
    return Blocked(args.keys, KIND_READ, 0, _concrete_ids(argv, args, after), args.block_ms)


def _concrete_ids(argv: list[bytes], args: XReadArgs, after: list[ids.ID]) -> list[bytes]:
    """The XREAD argv to re-run after a wake-up: each "$" becomes the ID it stood for."""
    n = len(args.keys)
    concrete = [
        ids.format_id(sid) if cstr(arg) == b"$" else arg for arg, sid in zip(args.id_args, after)
    ]
    return argv[: len(argv) - n] + concrete
