"""Plain records describing a stream's full state, for snapshots, RDB files and DUMP payloads.

:mod:`rstore.streams` produces them from a store (export) and consumes them (restore);
:mod:`rstore.rdb` turns them into RDB bytes and back.  Neither side needs the other's
internals.  Names follow Redis's ``stream.h``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rstore.ids import ID

__all__ = [
    "ConsumerPending",
    "ConsumerSnapshot",
    "ConsumerState",
    "GroupSnapshot",
    "GroupState",
    "PendingEntry",
    "StreamNode",
    "StreamSnapshot",
    "StreamState",
]


@dataclass(frozen=True, slots=True)
class StreamNode:
    """One node: its master ID and its listpack, byte-identical to Redis's."""

    master_id: ID
    listpack: bytes


@dataclass(frozen=True, slots=True)
class StreamState:
    """Stream-level metadata.  RDB type 15 (Redis < 7.0) lacks the last three: ``None``."""

    length: int
    last_id: ID
    first_id: ID | None
    max_deleted_entry_id: ID | None
    entries_added: int | None
    group_count: int


@dataclass(frozen=True, slots=True)
class GroupState:
    """A consumer group; ``entries_read`` is -1 when unknown, ``None`` when absent (type 15).

    In an RDB file the consumer count follows the PEL, so a reader reports
    ``consumer_count = -1`` (not read yet); consumers follow as ConsumerState records."""

    name: bytes
    last_id: ID
    entries_read: int | None
    pel_count: int
    consumer_count: int


@dataclass(frozen=True, slots=True)
class PendingEntry:
    """One entry of a group's PEL (its owner is given by the consumers' lists)."""

    id: ID
    delivery_time_ms: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ConsumerState:
    """A consumer; ``active_time_ms`` is -1 for never, ``None`` when absent (types 15/19)."""

    name: bytes
    seen_time_ms: int
    active_time_ms: int | None
    pel_count: int


@dataclass(frozen=True, slots=True)
class ConsumerPending:
    """One entry ID in a consumer's own PEL."""

    id: ID


# A whole stream, lazily: the iterables are walked once, in this order, while the source
# (a read transaction) stays open.  Counts are declared up front because RDB needs them first.


@dataclass(frozen=True)
class ConsumerSnapshot:
    state: ConsumerState
    ids: Iterable[ID]  # its PEL, ascending; exactly state.pel_count of them


@dataclass(frozen=True)
class GroupSnapshot:
    state: GroupState
    pending: Iterable[PendingEntry]  # ascending; exactly state.pel_count
    consumers: Iterable[ConsumerSnapshot]  # by name; exactly state.consumer_count


@dataclass(frozen=True)
class StreamSnapshot:
    node_count: int
    nodes: Iterable[StreamNode]  # ascending master IDs; exactly node_count
    state: StreamState
    groups: Iterable[GroupSnapshot]  # by name; exactly state.group_count
