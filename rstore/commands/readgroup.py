"""XREADGROUP: read as a consumer of a group, new entries (``>``) or the consumer's history."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, cast

from rstore import ids, messages
from rstore.codec.resp_entries import entry_resp
from rstore.commands.argv import cstr
from rstore.commands.executor import SAFETY_RECHECK_S, Blocked, now_ms
from rstore.commands.read import copied_by_key, parse_xread
from rstore.commands.registry import Context, command
from rstore.commands.reply import NIL_ARRAY, HistoryReads, entries_reply, public_stream_reply
from rstore.errors import ResponseError
from rstore.storage.records.txn import Txn
from rstore.storage.waiting.notify import KIND_GROUP, slot_hash
from rstore.streams import readgroup
from rstore.streams.read import CopiedRange

NEW = None  # the ">" ID
#: the shortest re-check interval of a blocked XREADGROUP CLAIM (half its min-idle-time)
CLAIM_RECHECK_FLOOR_S = 0.02


@command(
    "xreadgroup", -7, write=True, public=public_stream_reply, summary="Read as a group consumer"
)
def xreadgroup(ctx: Context, argv: list[bytes]) -> Any:
    args = parse_xread(argv, True, ctx.now_ms)
    assert args.group is not None and args.consumer is not None
    found: dict[bytes, readgroup.Target] = {}
    targets = []
    for key, arg in zip(args.keys, args.id_args):  # Redis checks each key, then its ID
        target = readgroup.find_target(ctx.txn, key, args.group, found)
        token = cstr(arg)
        if token in (b"$", b"+"):
            raise messages.error(messages.XREADGROUP_DOLLAR.replace("$", token.decode()))
        after = NEW if token == b">" else ids.parse_id(arg, strict=True)
        target.after = None if after == ids.MAX_ID else after  # Redis stores ">" as max
        targets.append(target)
    # a network front takes histories as RESP, written while they are read -- only when
    # every key asks for one: a ">" before a history of the same group would change it
    lazy = ctx.wire and args.claim_ms is None and not args.limits
    lazy = lazy and all(t.after is not None for t in targets)
    served = readgroup.read_group(
        ctx.txn, targets, args.consumer, args.count, noack=args.noack, now_ms=ctx.now_ms,
        claim_ms=args.claim_ms, limits=args.limits, copied=True, lazy=lazy,
    )  # fmt: skip
    claimed = args.claim_ms is not None
    if served and all(isinstance(got, CopiedRange) for _, got in served):
        return copied_by_key([(t.key, cast(CopiedRange, got)) for t, got in served])
    if lazy:
        histories = [(t.key, cast(Iterator[readgroup.HistoryEntry], got)) for t, got in served]
        return HistoryReads([_history_resp(key, history) for key, history in histories])
    if served:  # the history (deleted entries as nil), or CLAIM's entries
        return [[t.key, _reply(t, got, claimed)] for t, got in served]
    if args.block_ms is None or ctx.in_batch:
        return NIL_ARRAY
    # Only its consumer was recorded: the reader waits without waiting for the disk (a later
    # commit's flush covers it; nothing was acknowledged if it is lost).
    ctx.relax()
    added = {t.key: t.stream.meta.entries_added for t in targets}
    ready = functools.partial(_has_news, list(args.keys), args.group, added, args.claim_ms)
    recheck = None
    if args.claim_ms is not None:  # entries become claimable with time alone
        recheck = min(SAFETY_RECHECK_S, max(args.claim_ms / 2000, CLAIM_RECHECK_FLOOR_S))
    in_line = args.claim_ms is None
    return Blocked(
        args.keys, KIND_GROUP, slot_hash(args.group), argv, args.block_ms, ready, recheck, in_line
    )


def _reply(
    target: readgroup.Target, got: readgroup.Served | CopiedRange, claimed: bool
) -> list[Any]:
    entries: list[Any] = got.decoded() if isinstance(got, CopiedRange) else list(got)
    if target.after is None and claimed:  # CLAIM: each entry with its idle time and deliveries
        return [[ids.format_id(eid), fv, idle, deliveries] for eid, fv, idle, deliveries in entries]
    if target.after is None:
        return entries_reply(entries)
    return [  # the history: deleted entries as nil, delivery counts not replied
        [ids.format_id(eid), NIL_ARRAY if fv is None else fv] for eid, fv, _ in entries
    ]


def _history_resp(
    key: bytes, history: Iterator[readgroup.HistoryEntry]
) -> tuple[bytes, int, list[bytearray], list[bytes]]:
    """A stream's part of :class:`HistoryReads`: its entries' RESP in runs between the
    deleted ones, as the history is read."""
    runs = [bytearray()]
    deleted: list[bytes] = []
    count = 0
    for entry_id, fields, _ in history:
        count += 1
        if fields is None:
            deleted.append(ids.format_id(entry_id))
            runs.append(bytearray())
        else:
            entry_resp(entry_id, fields, runs[-1])
    return key, count, runs, deleted


def _has_news(
    keys: list[bytes],
    group_name: bytes,
    added: dict[bytes, int],
    claim_ms: int | None,
    woken: bool,
    txn: Txn,
) -> bool:
    """Whether a blocked ``XREADGROUP ... >`` re-run now could serve something, or must fail
    because a stream or the group is gone: a stream got entries past the group's last ID, or
    (with CLAIM) a pending entry has been idle ``claim_ms``.

    Without a wake-up (the periodic re-check that covers a writer that died before waking
    anyone) only a stream that got entries since the call blocked counts (``added``: the
    entries added to each when it did), as in Valkey, where only such writes wake a blocked
    reader: after ``XGROUP SETID`` moved the group back, the old entries wait for the next
    wake-up, not for the re-check's timer."""
    found: dict[bytes, readgroup.Target] = {}
    for key in keys:
        try:
            target = readgroup.find_target(txn, key, group_name, found)
        except ResponseError:  # gone: the re-run answers NOGROUP
            return True
        if claim_ms is not None and readgroup.claimable(txn, target.group, claim_ms, now_ms()):
            return True
        meta = target.stream.meta
        if not woken and meta.entries_added == added.get(key):
            continue  # nothing that would have woken it
        if meta.length and meta.last_id > target.group.last_id:
            return True
    return False
