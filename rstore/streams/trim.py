"""Trimming (XTRIM, and XADD's MAXLEN/MINID), node by node from the head, as Redis's ``streamTrim``.

For each head node, in order:

1. MAXLEN: stop once ``length <= maxlen``.
2. With a limit in force, stop before a node whose live count would take the removed total past it.
3. Remove the whole node when MAXLEN leaves enough entries without it, or (MINID) when the last
   entry physically stored in it -- tombstone or not -- is below ``minid``.
4. Otherwise an approximate trim (``~``) stops here: it never splits a node.
5. An exact trim tombstones entries inside this node until the target is met, then stops.  The
   node stays, possibly with a live count of zero (a quirk Redis has too).

``max_deleted_entry_id`` is not touched; ``first_id`` is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rstore.codec import stream_node as sn
from rstore.ids import ID
from rstore.storage.records.layout import StoreConfig
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = ["TrimSpec", "default_limit", "trim"]

# Redis's bounds for the default LIMIT of an approximate trim.
_DEFAULT_LIMIT_FALLBACK = 10_000
_DEFAULT_LIMIT_MAX = 1_000_000


@dataclass(frozen=True)
class TrimSpec:
    """A parsed trimming request.

    ``limit`` is the LIMIT argument as given (``None`` when absent); see :func:`effective_limit`.
    """

    strategy: Literal["maxlen", "minid"]
    maxlen: int = 0
    minid: ID = (0, 0)
    approx: bool = False
    limit: int | None = None


def default_limit(config: StoreConfig) -> int:
    """The LIMIT of ``~`` when none is given: 100 x node-max-entries, within Redis's bounds."""
    limit = config.node_max_entries * 100
    if limit <= 0:
        return _DEFAULT_LIMIT_FALLBACK
    return min(limit, _DEFAULT_LIMIT_MAX)


def effective_limit(spec: TrimSpec, config: StoreConfig) -> int:
    """The work limit in entries (0 = none): exact trims are unlimited."""
    if not spec.approx:
        return 0
    return default_limit(config) if spec.limit is None else spec.limit


def trim(txn: Txn, stream: StreamRef, spec: TrimSpec) -> int:
    """Trim ``stream``; returns the number of entries removed."""
    meta = stream.meta
    handle = stream.handle
    limit = effective_limit(spec, txn.config())
    by_maxlen = spec.strategy == "maxlen"
    maxlen = spec.maxlen
    minid = spec.minid
    removed = 0
    changed = False
    while meta.node_count > 0:
        if by_maxlen and meta.length <= maxlen:
            break
        master_id, node = _head(txn, handle)
        entries, _ = sn.node_counts(node)
        if limit and removed + entries > limit:
            break
        if by_maxlen:
            remove_node = meta.length - entries >= maxlen
        else:
            remove_node = sn.last_entry_id(node, master_id) < minid
        if remove_node:
            txn.node_delete(handle, master_id)
            meta.node_count -= 1
            meta.length -= entries
            removed += entries
            changed = True  # a node of tombstones only may go while removing no entry
            continue
        if spec.approx:
            break
        positions: list[int] = []
        for entry_id, flags, flags_pos in sn.iter_ids(node, master_id):
            if (meta.length <= maxlen) if by_maxlen else (entry_id >= minid):
                break
            if not flags & sn.FLAG_DELETED:
                positions.append(flags_pos)
                meta.length -= 1
        if positions:
            mutable = txn.node_for_update(handle, master_id)
            assert mutable is not None
            sn.mark_deleted(mutable, positions)
            removed += len(positions)
            changed = True
        break
    if changed:
        if meta.node_count == 0:
            meta.tail_id = (0, 0)
        refresh_first_id(txn, stream)
        txn.stream_put(handle, meta)
    return removed


def _head(txn: Txn, handle: int) -> tuple[ID, bytes | bytearray]:
    for master_id, node in txn.iter_nodes(handle):
        return master_id, node
    raise AssertionError("stream metadata counts nodes that are not stored")


def refresh_first_id(txn: Txn, stream: StreamRef) -> None:
    """Recompute ``first_id``: the first live entry, or 0-0 when the stream is empty."""
    meta = stream.meta
    if meta.length == 0:
        meta.first_id = (0, 0)
        return
    for master_id, node in txn.iter_nodes(stream.handle):
        first = sn.first_live_entry(node, master_id)
        if first is not None:
            meta.first_id = first[0]
            return
    meta.first_id = (0, 0)
