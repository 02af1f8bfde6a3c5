"""The streaming source's consumer group (option ``group``): Spark's progress mirrored into a
group of every stream it reads, so that ``XINFO GROUPS`` shows it -- last-delivered ID and lag.

Valkey's XGROUP SETID without ENTRIESREAD forgets the group's entries-read counter, and the lag
of a group in the middle of a stream is then unknown (nil).  The counter set here is the one
XREADGROUP would have left after delivering up to the same ID: the entries added minus the live
entries after it; none when a deletion lies after it (XREADGROUP cannot know it then either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import rstore
from rstore.spark.offsets import ID, ZERO, count_range, format_id, next_id

__all__ = ["commit_group", "group_entries_read"]


def _tombstone_after(state: Any, at: ID) -> bool:
    """Whether a deleted entry may lie after ``at`` (Valkey's ``streamRangeHasTombstones``)."""
    deleted = state.max_deleted_entry_id
    if state.length == 0 or deleted is None or deleted == ZERO:
        return False
    if state.first_id is not None and state.first_id > deleted:
        return False
    return bool(at < deleted)


def group_entries_read(view: rstore.StoreView, name: bytes, at: ID) -> int | None:
    """The entries-read counter of a group positioned at ``at`` -- what XREADGROUP would have
    left after delivering up to ``at`` -- or ``None`` when it cannot be known (a deletion
    after ``at``, or ``at`` past the last ID; Valkey then estimates, or reports the lag as
    unknown)."""
    state = view.state(name)
    if state is None or state.entries_added is None:
        return None
    if at == state.last_id or (state.length == 0 and at < state.last_id):
        return state.entries_added
    if at > state.last_id or _tombstone_after(state, at):  # after the end: not known yet
        return None
    after = next_id(at)
    live = 0 if after is None else count_range(view, name, after, state.last_id)
    return state.entries_added - live


def commit_group(store: rstore.Store, group: bytes, end: Mapping[bytes, ID]) -> None:
    """Move consumer group ``group`` of every stream in ``end`` to its ID there (creating the
    group where missing), with the entries-read counter that makes XINFO GROUPS' lag count
    the entries after it -- in one write transaction."""

    def counters(view: rstore.StoreView) -> dict[bytes, int | None]:
        return {n: group_entries_read(view, n, at) for n, at in end.items() if view.state(n)}

    read = store.view(counters)
    pipe = store.pipeline()
    for name, entries_read in read.items():
        sid = format_id(end[name])
        if any(g["name"] == group for g in store.xinfo_groups(name)):
            pipe.xgroup_setid(name, group, sid, entries_read=entries_read)
        else:
            pipe.xgroup_create(name, group, sid, entries_read=entries_read)
    for reply in pipe.execute(raise_on_error=False):
        if isinstance(reply, Exception):
            raise reply
