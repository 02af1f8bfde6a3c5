"""XREADGROUP: read as a consumer of a group, new entries (``>``) or the consumer's history."""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from rstore import ids, messages
from rstore.commands.argv import cstr
from rstore.commands.executor import Blocked
from rstore.commands.read import parse_xread
from rstore.commands.registry import Context, command
from rstore.commands.reply import NIL_ARRAY, entries_reply, public_stream_reply
from rstore.storage.notify import KIND_GROUP, key_hash
from rstore.storage.txn import Txn
from rstore.streams import groups
from rstore.streams.keyspace import lookup_stream
from rstore.streams.readgroup import read_history, read_new

NOGROUP = "NOGROUP No such key '{key}' or consumer group '{group}' in XREADGROUP with GROUP option"
DOLLAR = (
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
    "would just return an empty result set."
)
NEW = None  # the ">" ID

T = TypeVar("T")


def _must(found: T | None) -> T:
    assert found is not None
    return found


@command(
    "xreadgroup", -7, write=True, public=public_stream_reply, summary="Read as a group consumer"
)
def xreadgroup(ctx: Context, argv: list[bytes]) -> Any:
    args = parse_xread(argv, True, ctx.now_ms)
    assert args.group is not None and args.consumer is not None
    txn = ctx.txn
    targets: list[tuple[bytes, ids.ID | None]] = []
    for key, arg in zip(args.keys, args.id_args):
        stream = lookup_stream(txn, key)
        group = None if stream is None else groups.find_group(txn, stream, args.group)
        if stream is None or group is None:
            raise messages.error(
                NOGROUP, key=messages.sanitize(key), group=messages.sanitize(args.group)
            )
        token = cstr(arg)
        if token in (b"$", b"+"):
            raise messages.error(DOLLAR.replace("$", token.decode()))
        after = NEW if token == b">" else ids.parse_id(arg, strict=True)
        if after == ids.MAX_ID:  # Redis stores ">" as the largest ID: the two are one
            after = NEW
        targets.append((key, after))
    reply: list[Any] = []
    for key, after in targets:
        # Looked up again: an earlier key of the same call may have changed the same group.
        stream = _must(lookup_stream(txn, key))
        group = _must(groups.find_group(txn, stream, args.group))
        consumer = groups.ensure_consumer(txn, stream, group, args.consumer, ctx.now_ms)
        if after is NEW:
            entries = read_new(
                txn, stream, group, consumer, args.count, noack=args.noack, now_ms=ctx.now_ms
            )
            if entries:
                reply.append([key, entries_reply(entries)])
        else:
            history = read_history(
                txn, stream, group, consumer, after, args.count, now_ms=ctx.now_ms
            )
            reply.append(
                [
                    key,
                    [
                        [ids.format_id(eid), NIL_ARRAY if fv is None else fv]
                        for eid, fv, _ in history  # the delivery counts are not replied
                    ],
                ]
            )
    if reply:
        return reply
    if args.block_ms is None or ctx.in_batch:
        return NIL_ARRAY
    ready = functools.partial(_has_news, list(args.keys), args.group)
    return Blocked(args.keys, KIND_GROUP, key_hash(args.group), argv, args.block_ms, ready)


def _has_news(keys: list[bytes], group_name: bytes, txn: Txn) -> bool:
    """Whether a blocked ``XREADGROUP ... >`` re-run now could serve something, or must fail
    because a stream or the group is gone: a stream got entries past the group's last ID."""
    for key in keys:
        stream = lookup_stream(txn, key)
        group = None if stream is None else groups.find_group(txn, stream, group_name)
        if stream is None or group is None:
            return True
        if stream.meta.length and stream.meta.last_id > group.last_id:
            return True
    return False
