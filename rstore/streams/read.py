"""Reading entries: XRANGE / XREVRANGE, XREAD, first and last entry.

Entries are ``(id, [field1, value1, field2, value2, ...])`` with ``id`` an ``(ms, seq)`` tuple;
tombstones are never returned.

The walk over nodes is one pure function, :func:`scan_nodes`, over any iterable of
``(master_id, listpack)`` pairs: a store's nodes from a transaction (:func:`read_range`), nodes
copied out of one (:func:`copy_range`, decoded after the transaction), or the nodes of a stream
read from an RDB file (:func:`rstore.snapshot.inspection.read_rdb_entries`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rstore.codec import stream_node as sn
from rstore.codec.resp_entries import node_resp
from rstore.ids import ID, MAX_ID, MIN_ID, increment
from rstore.model import Entry
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = [
    "STREAM_BYTES",
    "CopiedRange",
    "Entry",
    "copy_range",
    "count_range",
    "first_entry",
    "last_entry",
    "range_pages",
    "range_resp",
    "read_after",
    "read_range",
    "scan_nodes",
]

Nodes = list[tuple[ID, bytes]]

#: A read over more bytes of nodes than this is streamed to a network front (commands/reply's
#: ``StreamedEntries``): below it, building the reply whole is as fast and simpler.
STREAM_BYTES = 1 << 20


@dataclass
class CopiedRange:
    """The live entries of nodes copied out of a transaction (:func:`copy_range`): those in
    ``[start, end]``, at most ``count`` (0: all), ascending -- read after the transaction
    ended, whole or a page at a time.  ``entries``: already decoded (a small read)."""

    nodes: Nodes
    start: ID
    end: ID
    count: int
    entries: list[Entry] | None = None

    def node_bytes(self) -> int:
        return sum(len(node) for _, node in self.nodes)

    def decoded(self) -> list[Entry]:
        """The entries, whole."""
        if self.entries is None:
            return scan_nodes(self.nodes, self.start, self.end, self.count)
        return self.entries


def copy_range(
    txn: Txn,
    stream: StreamRef,
    start: ID,
    end: ID,
    count: int = 0,
    *,
    reverse: bool = False,
) -> Nodes:
    """The raw nodes :func:`read_range` would decode, copied out of the transaction without
    decoding them, so that the read transaction ends before the (slow) decoding and reply
    building (``executor.Deferred``).  With ``count``, copying stops once the nodes known to lie
    wholly inside the range hold ``count`` live entries (from each node's master entry)."""
    nodes: Nodes = []
    if start > end or stream.meta.length == 0:
        return nodes
    sure = 0  # live entries in nodes wholly inside [start, end]
    if not reverse:
        for master_id, node in txn.iter_nodes(stream.handle, start):
            if master_id > end:
                break
            if master_id < start and sn.last_entry_id(node, master_id) < start:
                continue  # the node before the range holds nothing of it: do not keep it
            nodes.append((master_id, node))
            if count > 0 and master_id >= start:
                sure += sn.node_counts(node)[0]
                if sure >= count:
                    break
    else:
        first = True
        for master_id, node in txn.iter_nodes(stream.handle, end, reverse=True):
            nodes.append((master_id, node))
            if master_id <= start:
                break
            if count > 0 and not first:
                sure += sn.node_counts(node)[0]
                if sure >= count:
                    break
            first = False
    return nodes


def scan_nodes(
    nodes: Iterable[tuple[ID, bytes]],
    start: ID,
    end: ID,
    count: int = 0,
    *,
    reverse: bool = False,
    dicts: bool = False,
) -> list[Any]:
    """The live entries of ``nodes`` with ``start <= id <= end``, at most ``count`` (0 = no
    limit); with ``dicts``, as redis-py's stream methods give them
    (:func:`~rstore.codec.stream_node.dict_entry`).  ``nodes`` come in walk order: ascending
    master IDs from the node that may hold ``start``, or with ``reverse`` descending from the
    node that may hold ``end`` -- and entries come out in the same order.  The walk stops as
    soon as nothing further can match, so ``nodes`` may be a lazy, unbounded iterator."""
    out: list[Any] = []
    if start > end:
        return out
    if not reverse:
        for master_id, node in nodes:
            if master_id > end:
                break
            if sn.scan_forward(node, master_id, start, end, count, out, dicts):
                break
        return out
    for master_id, node in nodes:
        if sn.scan_backward(node, master_id, start, end, count, out):
            break
        if master_id <= start:
            break  # earlier nodes hold only IDs below this master ID
    return [sn.dict_entry(e) for e in out] if dicts else out


def count_range(nodes: Nodes, start: ID, end: ID, count: int = 0, *, reverse: bool = False) -> int:
    """How many entries :func:`scan_nodes` gives of ``nodes`` (:func:`copy_range`'s), without
    decoding them: a node wholly inside the range counts its master entry's live count; only
    the nodes at the range's edges are scanned.  A node's entries all lie below the next
    node's master ID (its first entry's ID when it was made), which bounds it."""
    if start > end:
        return 0
    total = 0
    for i, (master_id, node) in enumerate(nodes):
        bound = nodes[i - 1][0] if reverse and i else None
        if not reverse and i + 1 < len(nodes):
            bound = nodes[i + 1][0]
        if master_id >= start and bound is not None and bound <= end:
            total += sn.node_counts(node)[0]
        else:
            total += len(scan_nodes([(master_id, node)], start, end, reverse=reverse))
        if count and total >= count:
            return count
    return total


def range_pages(
    nodes: Nodes, start: ID, end: ID, count: int = 0, *, reverse: bool = False,
    page_bytes: int = 1 << 20,
) -> Iterator[list[Entry]]:  # fmt: skip
    """:func:`scan_nodes` of ``nodes``, a page at a time: the entries of about ``page_bytes``
    of nodes each (so a reply of any size is decoded in bounded memory)."""
    left = count
    page: Nodes = []
    size = 0
    for i, (master_id, node) in enumerate(nodes):
        page.append((master_id, node))
        size += len(node)
        if size < page_bytes and i + 1 < len(nodes):
            continue
        entries = scan_nodes(page, start, end, left, reverse=reverse)
        if entries:
            yield entries
        if count:
            left -= len(entries)
            if left <= 0:
                return
        page, size = [], 0


def range_resp(
    nodes: Nodes, start: ID, end: ID, count: int = 0, *, reverse: bool = False,
    page_bytes: int = 1 << 20,
) -> Iterator[tuple[bytes, int]]:  # fmt: skip
    """What :func:`range_pages` gives, as the RESP bytes a client reads (``node_resp``),
    with how many entries each page holds: no Python object per entry."""
    left = count
    page = bytearray()
    taken = size = 0
    for master_id, node in nodes:
        if not reverse and master_id > end:
            break
        got = node_resp(node, master_id, start, end, left, page, reverse)
        taken += got
        size += len(node)
        if count:
            left -= got
        if (count and left <= 0) or (reverse and master_id <= start):
            break
        if size >= page_bytes and taken:
            yield bytes(page), taken
            page, taken, size = bytearray(), 0, 0
    if taken:
        yield bytes(page), taken


def read_range(
    txn: Txn,
    stream: StreamRef,
    start: ID,
    end: ID,
    count: int = 0,
    *,
    reverse: bool = False,
) -> list[Entry]:
    """Live entries with ``start <= id <= end``, ascending (or descending with ``reverse``),
    at most ``count`` of them (0 = no limit)."""
    if start > end or stream.meta.length == 0:
        return []
    nodes = txn.iter_nodes(stream.handle, end if reverse else start, reverse=reverse)
    return scan_nodes(nodes, start, end, count, reverse=reverse)


def read_after(txn: Txn, stream: StreamRef, after: ID, count: int = 0) -> list[Entry]:
    """XREAD's view: live entries with ``id > after``, ascending, at most ``count``."""
    start = increment(after)
    if start is None:
        return []
    return read_range(txn, stream, start, MAX_ID, count)


def first_entry(txn: Txn, stream: StreamRef) -> Entry | None:
    """The first live entry, or ``None``."""
    found = read_range(txn, stream, MIN_ID, MAX_ID, 1)
    return found[0] if found else None


def last_entry(txn: Txn, stream: StreamRef) -> Entry | None:
    """The last live entry, or ``None``."""
    found = read_range(txn, stream, MIN_ID, MAX_ID, 1, reverse=True)
    return found[0] if found else None
