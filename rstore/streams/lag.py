"""A group's ``entries-read`` counter and its ``lag``, computed as Valkey 8.0 does.

Valkey 8.0 keeps the algorithm Redis introduced in 7.0 (Redis 8.0 later changed it).  The idea:
``entries_added`` counts every XADD ever, so a group that knows how many entries it has read
has ``lag = entries_added - entries_read``.  Deletions (tombstones) that may lie after the
group's position make the counter unreliable, and then it is estimated from the stream's
edges, or reported as unknown (``None``, a nil in replies).
"""

from __future__ import annotations

from rstore.ids import ID
from rstore.storage.layout import INVALID_ENTRIES_READ, GroupMeta, StreamMeta

__all__ = ["entries_read_after_delivery", "estimate_entries_read", "group_lag", "has_tombstone"]

_ZERO: ID = (0, 0)


def has_tombstone(meta: StreamMeta, start: ID) -> bool:
    """Whether a deleted entry may lie at or after ``start`` (Redis ``streamRangeHasTombstones``
    with an open end)."""
    if meta.length == 0 or meta.max_deleted_entry_id == _ZERO:
        return False
    if meta.first_id > meta.max_deleted_entry_id:
        return False  # every deletion happened before the first live entry
    return start <= meta.max_deleted_entry_id


def estimate_entries_read(meta: StreamMeta, sid: ID) -> int:
    """The logical read counter of a group positioned at ``sid``, or -1 when unknowable."""
    if meta.entries_added == 0:
        return 0
    if meta.length == 0 and sid <= meta.last_id:
        return meta.entries_added
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


def group_lag(meta: StreamMeta, group: GroupMeta) -> int | None:
    """Entries not yet delivered to the group, or ``None`` when it cannot be known."""
    if meta.entries_added == 0:
        return 0
    if group.entries_read != INVALID_ENTRIES_READ and not has_tombstone(meta, group.last_id):
        return meta.entries_added - group.entries_read
    estimate = estimate_entries_read(meta, group.last_id)
    if estimate == INVALID_ENTRIES_READ:
        return None
    return meta.entries_added - estimate


def entries_read_after_delivery(meta: StreamMeta, group: GroupMeta, delivered: ID) -> int:
    """The group's counter after delivering entry ``delivered`` (> its last ID) with ``>``."""
    if group.entries_read != INVALID_ENTRIES_READ and not has_tombstone(meta, delivered):
        return group.entries_read + 1
    if meta.entries_added:
        return estimate_entries_read(meta, delivered)
    return group.entries_read
