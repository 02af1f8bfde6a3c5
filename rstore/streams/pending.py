"""Pending entries: XACK and XPENDING."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rstore.ids import ID
from rstore.model import PendingEntry
from rstore.storage.records import group_records
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = ["PendingSummary", "ack", "pending_entry", "pending_range", "pending_summary"]


def ack(txn: Txn, stream: StreamRef, group: GroupMeta, ids: list[ID]) -> int:
    """Remove ``ids`` from the group PEL (and their owners' lists); how many were pending."""
    per_owner = group_records.nacks_pop(txn, group, ids)
    acked = sum(per_owner.values())
    if acked:
        for owner, n in per_owner.items():
            if owner is None:  # released by XNACK: in no consumer's count
                continue
            consumer = group_records.consumer_get(txn, group, owner)
            if consumer is not None:
                consumer.pel_count -= n
                group_records.consumer_put(txn, group, consumer)
        group.pel_count -= acked
        group_records.group_put(txn, stream.handle, group)
    return acked


@dataclass(frozen=True)
class PendingSummary:
    """XPENDING's summary form."""

    count: int
    first: ID | None
    last: ID | None
    consumers: list[tuple[bytes, int]]  # consumers owning at least one entry, by name


def pending_summary(txn: Txn, group: GroupMeta) -> PendingSummary:
    """XPENDING's summary: the count, the first and last IDs, and each owner's count."""
    if group.pel_count == 0:
        return PendingSummary(0, None, None, [])
    first_entry = next(group_records.pel_entries(txn, group), None)
    last = group_records.last_pel_id(txn, group)
    if first_entry is None or last is None:
        raise txn.inconsistent(
            group_records.PEL_DB,
            f"group {group.name!r} counts {group.pel_count} pending entries and holds none",
        )
    first = first_entry[0]
    owners = [(c.name, c.pel_count) for c in group_records.consumers_of(txn, group) if c.pel_count]
    return PendingSummary(group.pel_count, first, last, owners)


def pending_entry(entry_id: ID, nack: group_records.Nack) -> PendingEntry:
    """A PEL record as :class:`PendingEntry` shows it (a released one: no owner, time 0)."""
    delivery_time, delivery_count, owner = nack
    if owner is None:
        return PendingEntry(entry_id, 0, delivery_count, b"", released=True)
    return PendingEntry(entry_id, delivery_time, delivery_count, owner)


def pending_range(
    txn: Txn,
    group: GroupMeta,
    start: ID,
    end: ID,
    count: int,
    *,
    consumer: bytes | None,
    min_idle_ms: int,
    now_ms: int,
) -> Iterator[PendingEntry]:
    """XPENDING's extended form: pending entries from ``start`` to ``end`` (of ``consumer``
    only, when given), at most ``count``, idle for at least ``min_idle_ms`` at ``now_ms``;
    each with its owner -- one at a time, read while the transaction lasts."""
    if count <= 0:
        return
    if consumer is None:
        nacks = ((eid, nack) for eid, nack in group_records.pel_entries(txn, group, start, end))
    else:
        ids = group_records.consumer_pel_ids(txn, group, consumer, start, end)
        nacks = ((eid, group_records.owned_nack(txn, group, eid, consumer)) for eid in ids)
    found = 0
    for entry_id, nack in nacks:
        if min_idle_ms and now_ms - nack[0] < min_idle_ms:  # a released one: always idle enough
            continue
        yield pending_entry(entry_id, nack)
        found += 1
        if found >= count:
            return
