"""XINFO's semantics: a stream, its groups and their consumers as reports show them
(:class:`~rstore.model.StreamInfo`, :class:`~rstore.model.GroupInfo`,
:class:`~rstore.model.ConsumerInfo`).

``radix-tree-keys`` is the node count.  ``radix-tree-nodes`` counts the nodes of the compressed
radix tree (rax) that maps 16-byte big-endian master IDs to nodes.  For the trees Redis builds
this equals the size of a canonical compressed trie: the root, every prefix where the keys
branch, every one-byte child of such a prefix, and every key.  In sorted key order the branching
prefixes are exactly the longest common prefixes of neighbours.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rstore.ids import ID, MAX_ID, MIN_ID
from rstore.model import ConsumerInfo, GroupInfo, PendingEntry, StreamInfo
from rstore.storage.records import group_records
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams import idempotency, retention
from rstore.streams.keyspace import StreamRef
from rstore.streams.lag import group_lag
from rstore.streams.pending import pending_entry
from rstore.streams.read import first_entry, last_entry, read_range

__all__ = ["consumer_infos", "full_pending", "group_infos", "radix_tree_nodes", "stream_info"]

T = TypeVar("T")


def radix_tree_nodes(master_ids: list[ID]) -> int:
    """Node count of the rax holding ``master_ids`` (sorted ascending) as 16-byte keys."""
    if not master_ids:
        return 1
    keys = [(ms << 64) | seq for ms, seq in master_ids]
    nodes: set[tuple[int, int]] = {(0, 0)}  # (prefix length in bytes, prefix value)
    for k in keys:
        nodes.add((16, k))
    for a, b in itertools.pairwise(keys):
        diff_bits = (a ^ b).bit_length()
        lcp = 16 - (diff_bits + 7) // 8  # common prefix length in bytes
        shift = (16 - lcp) * 8
        nodes.add((lcp, a >> shift))
        child_shift = shift - 8
        nodes.add((lcp + 1, a >> child_shift))
        nodes.add((lcp + 1, b >> child_shift))
    return len(nodes)


def stream_info(
    txn: Txn, key: bytes, stream: StreamRef, now_ms: int, *, full: bool = False, count: int = 10,
    lazy: bool = False,
) -> StreamInfo:  # fmt: skip
    """XINFO STREAM: the stream's state with its first and last entries; ``full`` instead
    gives up to ``count`` entries (0 = all) and the groups with ``count`` pending entries each
    (per group and per consumer) -- with ``lazy``, neither the entries nor the pending ones,
    for a caller that reads them as it writes them (:func:`full_pending`).  Idempotent
    production's state is as of ``now_ms``."""
    meta = stream.meta
    first = last = None
    entries = None
    groups: tuple[GroupInfo, ...] = ()
    if full:
        entries = None if lazy else tuple(read_range(txn, stream, MIN_ID, MAX_ID, count))
        groups = tuple(group_infos(txn, stream, consumers=True, pending=count, lazy=lazy))
    else:
        first = first_entry(txn, stream)
        last = last_entry(txn, stream)
    policy = retention.policy_for(txn, key)
    limited = policy is not None and policy.max_bytes is not None
    return StreamInfo(
        key=key,
        state=meta.state(),
        nodes=meta.node_count,
        first_entry_id=None if first is None else first[0],
        last_entry_id=None if last is None else last[0],
        groups=groups,
        radix_tree_nodes=radix_tree_nodes(txn.node_ids(stream.handle)),
        first_entry=first,
        last_entry=last,
        entries=entries,
        idempotency=idempotency.info(txn, stream.handle, now_ms),
        retention=policy,
        node_bytes=txn.stream_bytes(stream.handle) if limited else None,
    )


def _take(items: Iterable[T], count: int) -> list[T]:
    """The first ``count`` items (all of them when ``count`` is 0)."""
    return list(itertools.islice(items, count)) if count else list(items)


def group_infos(
    txn: Txn, stream: StreamRef, *, consumers: bool = False, pending: int | None = None,
    lazy: bool = False,
) -> Iterator[GroupInfo]:  # fmt: skip
    """The stream's groups in name order, each with its lag; with ``consumers`` their
    consumers too; with ``pending`` (a count, 0 = all) the first pending entries of each group
    and of each consumer (XINFO STREAM FULL) -- unless ``lazy``: :func:`full_pending`."""
    meta = stream.meta
    for g in group_records.groups_of(txn, stream.handle):
        members: tuple[ConsumerInfo, ...] = ()
        if consumers:
            members = tuple(consumer_infos(txn, g, pending=None if lazy else pending))
        first_pending: tuple[PendingEntry, ...] = ()
        released = None
        if pending is not None:
            if not lazy:
                first_pending = tuple(_group_pending(txn, g, pending))
            released = group_records.released_count(txn, g)
        yield GroupInfo(g.state(), group_lag(meta, g.last_id, g.entries_read), members,
                        first_pending, released)  # fmt: skip


def consumer_infos(
    txn: Txn, group: GroupMeta, *, pending: int | None = None
) -> Iterator[ConsumerInfo]:
    """The group's consumers in name order; with ``pending`` (a count, 0 = all) the first
    entries of each one's own PEL."""
    for c in group_records.consumers_of(txn, group):
        own: tuple[PendingEntry, ...] = ()
        if pending is not None:
            ids = _take(group_records.consumer_pel_ids(txn, group, c.name), pending)
            own = tuple(_own(txn, group, eid, c.name) for eid in ids)
        yield ConsumerInfo(c.state(), own)


def full_pending(
    txn: Txn, stream: StreamRef, group_name: bytes, count: int, consumer: bytes | None = None
) -> Iterator[PendingEntry]:
    """The first ``count`` (0 = all) pending entries of a group -- or of one of its consumers
    -- as XINFO STREAM FULL shows them, one at a time (see :func:`stream_info`'s ``lazy``)."""
    group = group_records.group_get(txn, stream.handle, group_name)
    if group is None:
        return iter(())
    if consumer is None:
        return _group_pending(txn, group, count)
    ids = group_records.consumer_pel_ids(txn, group, consumer)
    if count:
        ids = itertools.islice(ids, count)
    return (_own(txn, group, eid, consumer) for eid in ids)


def _group_pending(txn: Txn, group: GroupMeta, count: int) -> Iterator[PendingEntry]:
    entries = group_records.pel_entries(txn, group)
    if count:
        entries = itertools.islice(entries, count)
    return (pending_entry(eid, nack) for eid, nack in entries)


def _own(txn: Txn, group: GroupMeta, entry_id: ID, consumer: bytes) -> PendingEntry:
    delivery_time, delivery_count, owner = group_records.owned_nack(txn, group, entry_id, consumer)
    return PendingEntry(entry_id, delivery_time, delivery_count, owner)
