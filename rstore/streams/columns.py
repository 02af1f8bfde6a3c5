"""Entries of a range decoded into column batches (:class:`rstore.Columns`), for Arrow, Spark,
pandas or Parquet, from any source of nodes: a store's (:meth:`rstore.StoreView.nodes`), an RDB
file's (:func:`rstore.read_rdb_nodes`) or nodes copied earlier.

>>> for batch in rstore.iter_columns(nodes, (0, 0), last_id):   # doctest: +SKIP
...     batch.count, batch.ms, batch.key_data

The walk is :func:`rstore.streams.read.scan_nodes`'s: nodes in ascending master-ID order from
the node that may hold ``start``; it stops at the first ID past ``end``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rstore.codec.columns import Columns, append_node
from rstore.ids import MAX_ID, MIN_ID
from rstore.model import ID

__all__ = ["DEFAULT_BATCH_ENTRIES", "iter_columns"]

#: Entries per batch unless asked otherwise: large enough that per-batch costs vanish, small
#: enough that a batch of typical entries stays a few MiB.
DEFAULT_BATCH_ENTRIES = 65536


def iter_columns(
    nodes: Iterable[tuple[ID, bytes]],
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    batch_entries: int = DEFAULT_BATCH_ENTRIES,
    dedupe: bool = False,
) -> Iterator[Columns]:
    """The live entries of ``nodes`` with ``start <= id <= end``, in ID order, as batches of
    whole nodes holding at least ``batch_entries`` entries each (the last one fewer); no batch
    is empty.  With ``dedupe`` an entry that holds a field name twice keeps only its last value
    (what a map column can hold); without, every pair is kept in order."""
    if batch_entries < 1:
        raise ValueError("batch_entries must be at least 1")
    if start > end:
        return
    cols = Columns()
    for master_id, node in nodes:
        if master_id > end:
            break
        _, done = append_node(cols, node, master_id, start, end, dedupe=dedupe)
        if cols.count >= batch_entries:
            yield cols
            cols = Columns()
        if done:
            break
    if cols.count:
        yield cols
