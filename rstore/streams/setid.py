"""XSETID: set a stream's last ID (and optionally entries-added and max-deleted-entry-id)."""

from __future__ import annotations

from rstore import messages
from rstore.ids import ID
from rstore.storage.records import layout
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import lookup_stream
from rstore.streams.read import last_entry

__all__ = ["set_id"]


def set_id(
    txn: Txn,
    name: bytes,
    last_id: ID,
    entries_added: int | None,
    max_deleted_id: ID | None,
) -> None:
    """Apply XSETID after its arguments were validated (Valkey 8.0 order of checks)."""
    stream = lookup_stream(txn, name)
    if stream is None:
        raise messages.error(messages.NO_SUCH_KEY)
    meta = stream.meta
    if last_id < meta.max_deleted_entry_id:
        raise messages.error(messages.XSETID_SMALLER_THAN_MAXDEL)
    if meta.length > 0:
        top = last_entry(txn, stream)
        if top is None:
            raise txn.inconsistent(
                layout.DB_STREAMS, f"the stream counts {meta.length} entries and holds none",
                txn.stream_name(stream.handle),
            )  # fmt: skip
        if last_id < top[0]:
            raise messages.error(messages.XSETID_SMALLER_THAN_TOP)
        if entries_added is not None and entries_added < meta.length:
            raise messages.error(messages.XSETID_ENTRIES_ADDED_SMALL)
    meta.last_id = last_id
    if entries_added is not None:
        meta.entries_added = entries_added
    if max_deleted_id is not None and max_deleted_id != (0, 0):
        meta.max_deleted_entry_id = max_deleted_id
    txn.stream_put(stream.handle, meta)
