"""Appending whole stream nodes (``Store.append_nodes``): the copy of a stream's history from
another store or an RDB file without decoding and re-encoding its entries.

A node is appended as it is, as the stream's new last node, keyed by its own master ID.  The
stream ends exactly as if every entry of the node had been added by ``XADD key <its ID> ...``
in turn -- the same length, last ID, first ID and ``entries-added`` -- except for where the node
boundaries fall (the copied node is not merged into the stream's last node, nor split by the
store's node limits; XRANGE, XREAD and RDB files do not show boundaries).  So the rules are
XADD's where they apply, and stricter where a node could break the stream's invariants:

* the node is checked in depth (the listpack, the master entry, every entry, IDs rising from
  the master ID): :class:`~rstore.errors.CorruptDataError` otherwise;
* it holds no deleted entry (a tombstone was never added by XADD; append those entries one by
  one instead): :class:`ValueError`;
* its first entry's ID is not ``0-0`` and its master ID (the first entry's ID, or below it) is
  above the stream's last ID: XADD's errors otherwise.

The caller's transaction makes a batch of nodes all or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from rstore import messages
from rstore.codec.node_validate import node_facts
from rstore.ids import ID
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import create_stream, lookup_stream

__all__ = ["add_nodes"]


def add_nodes(txn: Txn, nodes: Iterable[tuple[bytes, ID, bytes]]) -> dict[bytes, tuple[int, ID]]:
    """Append each ``(stream, master ID, node)`` in order (see the module docstring).

    Returns ``{stream: (entries added, last ID)}``; raises on the first node refused (the
    caller aborts the transaction)."""
    stats: dict[bytes, tuple[int, ID]] = {}
    for name, master_id, node in nodes:
        facts = node_facts(node, master_id)
        if facts.deleted or facts.first_live is None:
            raise ValueError(
                f"the node {master_id[0]}-{master_id[1]} of {name!r} holds deleted entries: "
                "append its live entries one by one (Store.append_entries)"
            )
        stream = lookup_stream(txn, name)
        if stream is None:
            stream = create_stream(txn, name)
        meta = stream.meta
        if facts.first_live == (0, 0):
            raise messages.error(messages.XADD_ID_ZERO)
        if master_id <= meta.last_id:  # the first entry is at or above the master ID
            raise messages.error(messages.XADD_ID_SMALL)
        txn.node_write(stream.handle, master_id, node)
        if meta.length == 0:
            meta.first_id = facts.first_live
        meta.length += facts.live
        meta.entries_added += facts.live
        meta.last_id = facts.last
        meta.node_count += 1
        meta.tail_id = master_id
        txn.stream_put(stream.handle, meta)
        added = stats.get(name, (0, facts.last))[0] + facts.live
        stats[name] = (added, facts.last)
    return stats
