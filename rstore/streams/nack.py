"""XNACK (Redis 8.8): a consumer gives pending entries back to its group without waiting for
their idle time to run out.

A released entry stays in the group's pending entries list, with no owner: it leaves its
consumer's list (and count), XPENDING shows it with an empty consumer and idle time -1, and
XREADGROUP ``>`` does not deliver it again (the group's last-delivered ID does not move back)
-- XCLAIM, XAUTOCLAIM and XREADGROUP ... CLAIM take it, whatever their minimum idle time, and
XREADGROUP CLAIM takes the released entries first, in the order they were released (a second
XNACK of an entry puts it last).  XACK removes it as any pending entry.

The delivery count: SILENT lowers it by one (not below 0: the failure is not the message's),
FAIL keeps it, FATAL sets it to 2^63 - 1 (no retry policy will take it); RETRYCOUNT sets it
whatever the mode.  FORCE also releases entries of the stream that are not pending (a new
pending entry with count 0, RETRYCOUNT's, or FATAL's), without moving the last-delivered ID.
"""

from __future__ import annotations

from rstore.ids import ID
from rstore.keywords import KeywordEnum
from rstore.storage.records import group_records
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef
from rstore.streams.lookup import EntryLookup

__all__ = ["FATAL_COUNT", "Mode", "release"]

#: FATAL's delivery count: LLONG_MAX, as Redis sets it
FATAL_COUNT = (1 << 63) - 1
#: the release order of one call's entries: its time in microseconds, shifted, plus their
#: place in the call (two calls never share a microsecond: each is a write transaction)
_ORDER_SHIFT = 10


class Mode(KeywordEnum):
    """XNACK's mode, by its keyword."""

    SILENT = b"silent"
    FAIL = b"fail"
    FATAL = b"fatal"


def _count(mode: Mode, before: int, retry_count: int | None) -> int:
    if retry_count is not None:
        return retry_count
    if mode is Mode.SILENT:
        return max(before - 1, 0)
    return FATAL_COUNT if mode is Mode.FATAL else before


def release(
    txn: Txn,
    stream: StreamRef,
    group: GroupMeta,
    ids: list[ID],
    mode: Mode,
    *,
    retry_count: int | None,
    force: bool,
    now_us: int,
) -> int:
    """XNACK ``ids`` (in order, a repeated one each time) in ``group``; how many were released
    (pending ones, and with ``force`` those the stream holds).  ``now_us``: the time in
    microseconds, which orders the released entries."""
    lookup = EntryLookup(txn, stream) if force else None
    base = now_us << _ORDER_SHIFT
    lost: dict[bytes, int] = {}  # entries each consumer no longer holds
    released = 0
    for place, entry_id in enumerate(ids):
        order = base + min(place, (1 << _ORDER_SHIFT) - 1)
        nack = group_records.nack_get(txn, group, entry_id)
        if nack is None:
            if lookup is None or lookup.get(entry_id) is None:
                continue
            count = _count(mode, 0, retry_count)
            group_records.nack_release(txn, group, entry_id, order, count, None, b"")
            group.pel_count += 1
        else:
            _, before, owner = nack
            count = _count(mode, before, retry_count)
            group_records.nack_release(txn, group, entry_id, order, count, owner, owner)
            if owner is not None:
                lost[owner] = lost.get(owner, 0) + 1
        released += 1
    for name, n in lost.items():
        consumer = group_records.consumer_get(txn, group, name)
        if consumer is not None:
            consumer.pel_count -= n
            group_records.consumer_put(txn, group, consumer)
    group_records.group_put(txn, stream.handle, group)
    return released
