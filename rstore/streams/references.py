"""The references consumer groups hold on a stream's entries, for the reference policies of
Redis 8.2 (XDELEX, XACKDEL, and XADD's and XTRIM's trimming).

A group references an entry it has not acknowledged: one in its pending entries list, or one
it has not been delivered yet (an ID above its last-delivered ID; the entry *at* that ID was
delivered).  The policies:

* ``KEEPREF`` (the default, and all Redis had before 8.2): delete the entry, leave the pending
  entries lists alone -- they may name deleted entries, as after XDEL.
* ``DELREF``: delete the entry and remove it from every group's pending entries list (and its
  owner's), whether or not the entry still exists.
* ``ACKED``: delete the entry only when no group references it.
"""

from __future__ import annotations

from rstore.ids import ID
from rstore.keywords import KeywordEnum
from rstore.storage.records import group_records
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef
from rstore.streams.pending import ack

__all__ = ["Policy", "References"]


class Policy(KeywordEnum):
    """A reference policy, by its keyword."""

    KEEPREF = b"keepref"
    DELREF = b"delref"
    ACKED = b"acked"


class References:
    """The groups of one stream, loaded once per command: which entries they reference, and
    the removal of an entry from all of their pending entries lists.

    A command that changes a group's records must reach it through :meth:`group`, so that the
    counters written back are the ones this object holds."""

    def __init__(self, txn: Txn, stream: StreamRef) -> None:
        self._txn = txn
        self._stream = stream
        self._groups: list[GroupMeta] = (
            group_records.groups_of(txn, stream.handle) if stream.meta.group_count else []
        )

    def group(self, name: bytes) -> GroupMeta | None:
        for group in self._groups:
            if group.name == name:
                return group
        return None

    def referenced(self, entry_id: ID) -> bool:
        """Whether any group has not acknowledged ``entry_id`` (pending, or not delivered)."""
        for group in self._groups:
            if entry_id > group.last_id:
                return True
            if group.pel_count and group_records.nack_get(self._txn, group, entry_id) is not None:
                return True
        return False

    def drop(self, entry_id: ID) -> None:
        """Remove ``entry_id`` from every group's pending entries list (and its owner's)."""
        for group in self._groups:
            if group.pel_count:
                ack(self._txn, self._stream, group, [entry_id])

    def acknowledge(self, group: GroupMeta, entry_id: ID) -> bool:
        """Acknowledge ``entry_id`` in ``group`` (one of :meth:`group`'s); whether it was
        pending there."""
        return ack(self._txn, self._stream, group, [entry_id]) == 1
