"""A group's ``entries-read`` counter and its ``lag``, computed as Valkey 8.0 does.

Valkey 8.0 keeps the algorithm Redis introduced in 7.0 (Redis 8.0 later changed it).  The idea:
``entries_added`` counts every XADD ever, so a group that knows how many entries it has read
has ``lag = entries_added - entries_read``.  Deletions (tombstones) that may lie after the
group's position make the counter unreliable, and then it is estimated from the stream's
edges, or reported as unknown (``None``, a nil in replies).

Pure functions over plain values: the stream's counters (a store's ``StreamMeta`` or a file's
``StreamState``, see :func:`counters`) and a group's position and read counter -- so that a
store, an RDB file being inspected and a restore compute them alike.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from rstore.ids import ID
from rstore.model import INVALID_ENTRIES_READ, StreamState

__all__ = [
    "INVALID_ENTRIES_READ",
    "StreamCounters",
    "counters",
    "counts_on",
    "entries_read_after_delivery",
    "estimate_entries_read",
    "group_lag",
    "has_tombstone",
]

_ZERO: ID = (0, 0)


class StreamCounters(Protocol):
    """What the lag rules read of a stream (``StreamMeta`` and a complete ``StreamState``)."""

    @property
    def length(self) -> int: ...
    @property
    def last_id(self) -> ID: ...
    @property
    def first_id(self) -> ID: ...
    @property
    def max_deleted_entry_id(self) -> ID: ...
    @property
    def entries_added(self) -> int: ...


def counters(state: StreamState, first_entry_id: ID | None = None) -> StreamCounters:
    """A file's stream state with the counters RDB type 15 lacks filled in as Redis does when
    it loads such a file: no deletions known, every live entry added, and the first ID that of
    the first live entry (``first_entry_id``, found in the nodes; 0-0 when empty)."""
    return replace(  # type: ignore[return-value]  # the Nones are gone
        state,
        first_id=state.first_id if state.first_id is not None else first_entry_id or _ZERO,
        max_deleted_entry_id=state.max_deleted_entry_id or _ZERO,
        entries_added=state.entries_added if state.entries_added is not None else state.length,
    )


def has_tombstone(meta: StreamCounters, start: ID) -> bool:
    """Whether a deleted entry may lie at or after ``start`` (Redis ``streamRangeHasTombstones``
    with an open end)."""
    if meta.length == 0 or meta.max_deleted_entry_id == _ZERO:
        return False
    if meta.first_id > meta.max_deleted_entry_id:
        return False  # every deletion happened before the first live entry
    return start <= meta.max_deleted_entry_id


def estimate_entries_read(meta: StreamCounters, sid: ID) -> int:
    """The logical read counter of a group positioned at ``sid``, or -1 when unknowable."""
    if meta.entries_added == 0:
        return 0
    if meta.length == 0 and sid <= meta.last_id:
        return meta.entries_added
    if sid != _ZERO and sid < meta.max_deleted_entry_id:
        return INVALID_ENTRIES_READ  # a deletion after it: its count is lost
    if sid == meta.last_id:
        return meta.entries_added
    if sid > meta.last_id:
        return INVALID_ENTRIES_READ
    if meta.max_deleted_entry_id == _ZERO or meta.max_deleted_entry_id < meta.first_id:
        if sid < meta.first_id:
            return meta.entries_added - meta.length
        if sid == meta.first_id:
            return meta.entries_added - meta.length + 1
    return INVALID_ENTRIES_READ


def group_lag(meta: StreamCounters, last_id: ID, entries_read: int | None) -> int | None:
    """Entries not yet delivered to a group positioned at ``last_id`` with the read counter
    ``entries_read`` (-1 or ``None``: unknown), or ``None`` when it cannot be known."""
    if meta.entries_added == 0 or meta.length == 0:
        return 0
    if last_id < meta.first_id and meta.max_deleted_entry_id < meta.first_id:
        return meta.length  # before every entry, and no deletion among them
    known = entries_read is not None and entries_read != INVALID_ENTRIES_READ
    if known and not has_tombstone(meta, last_id):
        assert entries_read is not None
        return meta.entries_added - entries_read
    estimate = estimate_entries_read(meta, last_id)
    if estimate == INVALID_ENTRIES_READ:
        return None
    return meta.entries_added - estimate


def counts_on(meta: StreamCounters, entries_read: int, last_id: ID) -> bool:
    """Whether a group positioned at ``last_id`` may count the delivery of the next entry on
    its read counter: a valid counter, a position not before the first entry (a trim may have
    removed entries it never read), and no deletion after its position."""
    return (
        entries_read != INVALID_ENTRIES_READ
        and last_id >= meta.first_id
        and not has_tombstone(meta, last_id)
    )


def entries_read_after_delivery(
    meta: StreamCounters, entries_read: int, last_id: ID, delivered: ID
) -> int:
    """A group's read counter after delivering entry ``delivered`` (beyond its position
    ``last_id``) with ``>``, from ``entries_read`` before."""
    if counts_on(meta, entries_read, last_id):
        return entries_read + 1
    if meta.entries_added:
        return estimate_entries_read(meta, delivered)
    return entries_read
