"""XINFO GROUPS, XINFO CONSUMERS and the groups section of XINFO STREAM FULL."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from rstore.ids import ID
from rstore.storage import group_records
from rstore.storage.layout import INVALID_ENTRIES_READ, GroupMeta
from rstore.storage.txn import Txn
from rstore.streams.keyspace import StreamRef
from rstore.streams.lag import group_lag

__all__ = ["ConsumerInfo", "FullConsumer", "FullGroup", "GroupInfo", "consumers_info",
           "full_groups", "groups_info"]  # fmt: skip


T = TypeVar("T")


@dataclass(frozen=True)
class GroupInfo:
    name: bytes
    consumers: int
    pending: int
    last_delivered_id: ID
    entries_read: int | None
    lag: int | None


def _entries_read(group: GroupMeta) -> int | None:
    return None if group.entries_read == INVALID_ENTRIES_READ else group.entries_read


def groups_info(txn: Txn, stream: StreamRef) -> list[GroupInfo]:
    return [
        GroupInfo(
            g.name,
            g.consumer_count,
            g.pel_count,
            g.last_id,
            _entries_read(g),
            group_lag(stream.meta, g),
        )
        for g in group_records.groups_of(txn, stream.handle)
    ]


@dataclass(frozen=True)
class ConsumerInfo:
    name: bytes
    pending: int
    seen_time: int
    active_time: int


def consumers_info(txn: Txn, group: GroupMeta) -> list[ConsumerInfo]:
    return [
        ConsumerInfo(c.name, c.pel_count, c.seen_time, c.active_time)
        for c in group_records.consumers_of(txn, group)
    ]


@dataclass(frozen=True)
class FullConsumer:
    name: bytes
    seen_time: int
    active_time: int
    pel_count: int
    pending: list[tuple[ID, int, int]]  # id, delivery time, delivery count


@dataclass(frozen=True)
class FullGroup:
    name: bytes
    last_delivered_id: ID
    entries_read: int | None
    lag: int | None
    pel_count: int
    pending: list[tuple[ID, bytes, int, int]]  # id, consumer, delivery time, delivery count
    consumers: list[FullConsumer]


def _take(items: Iterable[T], count: int) -> list[T]:
    """The first ``count`` items (all of them when ``count`` is 0)."""
    return list(islice(items, count)) if count else list(items)


def full_groups(txn: Txn, stream: StreamRef, count: int) -> list[FullGroup]:
    """Every group with up to ``count`` (0 = all) PEL entries per group and per consumer."""
    out: list[FullGroup] = []
    for g in group_records.groups_of(txn, stream.handle):
        pel = group_records.pel_entries(txn, g)
        pending = [(eid, owner, t, n) for eid, (t, n, owner) in _take(pel, count)]
        consumers = []
        for c in group_records.consumers_of(txn, g):
            ids = _take(group_records.consumer_pel_ids(txn, g, c.name), count)
            own = []
            for eid in ids:
                nack = group_records.nack_get(txn, g, eid)
                assert nack is not None
                own.append((eid, nack[0], nack[1]))
            consumers.append(FullConsumer(c.name, c.seen_time, c.active_time, c.pel_count, own))
        out.append(
            FullGroup(
                g.name,
                g.last_id,
                _entries_read(g),
                group_lag(stream.meta, g),
                g.pel_count,
                pending,
                consumers,
            )
        )
    return out
