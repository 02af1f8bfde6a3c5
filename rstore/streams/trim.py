"""Trimming (XTRIM, and XADD's MAXLEN/MINID), node by node from the head, as Redis's ``streamTrim``.

For each node from the head, in order:

1. MAXLEN: stop once ``length <= maxlen``; a retention policy's maximum in bytes: once the
   stream's nodes hold no more listpack bytes than it (``StreamMeta.node_bytes``).
2. With a limit in force, stop before a node whose live count would take the removed total past it.
3. Remove the whole node when MAXLEN leaves enough entries without it, or (MINID) when the last
   entry physically stored in it -- tombstone or not -- is below ``minid``, or (bytes) when the
   nodes after it still hold the maximum; under the ``ACKED``
   policy only when no group references any of its live entries.
4. Otherwise an approximate trim (``~``) stops here: it never splits a node.
5. An exact trim tombstones entries inside this node until the target is met (under ``ACKED``
   skipping the referenced ones), then stops; under ``ACKED`` it goes on to the next node when
   the target is still not met.  The node stays, possibly with a live count of zero (a quirk
   Redis has too).

The reference policy (Redis 8.2, :mod:`rstore.streams.references`): ``DELREF`` also removes
every trimmed live entry from the groups' pending entries lists; an approximate trim with
``DELREF`` or ``ACKED`` trims nothing, as in Redis 8.2.3.

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
from rstore.streams.references import Policy, References

__all__ = ["TrimSpec", "default_limit", "trim"]

# Redis's bounds for the default LIMIT of an approximate trim.
_DEFAULT_LIMIT_FALLBACK = 10_000
_DEFAULT_LIMIT_MAX = 1_000_000


@dataclass(frozen=True)
class TrimSpec:
    """A parsed trimming request.

    ``limit`` is the LIMIT argument as given (``None`` when absent); see :func:`effective_limit`.
    """

    strategy: Literal["maxlen", "minid", "maxbytes"]
    maxlen: int = 0
    #: ``maxbytes`` (retention's, approximate only): whole nodes go while the stream's nodes
    #: would still hold this many listpack bytes without them (StreamMeta.node_bytes)
    maxbytes: int = 0
    minid: ID = (0, 0)
    approx: bool = False
    limit: int | None = None
    policy: Policy = Policy.KEEPREF
    #: a retention policy's trim (rstore's own): approximate trimming under DELREF or ACKED
    #: removes the whole nodes the policy lets go, where Redis 8.2.3's commands trim nothing
    retention: bool = False


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
    if spec.approx and spec.policy is not Policy.KEEPREF and not spec.retention:
        return 0  # Redis 8.2.3 removes whole nodes under KEEPREF only
    meta = stream.meta
    handle = stream.handle
    limit = effective_limit(spec, txn.config())
    by_maxlen = spec.strategy == "maxlen"
    size = txn.stream_bytes(handle) if spec.strategy == "maxbytes" else None
    refs = None if spec.policy is Policy.KEEPREF else References(txn, stream)
    acked = spec.policy is Policy.ACKED
    removed = 0
    changed = False
    after: ID | None = None  # under ACKED: the last node kept, which the walk goes past
    while meta.node_count > 0:
        if by_maxlen and meta.length <= spec.maxlen:
            break
        if size is not None and size <= spec.maxbytes:
            break
        found = _next_node(txn, handle, after)
        if found is None:
            if after is None:
                raise AssertionError("stream metadata counts nodes that are not stored")
            break
        master_id, node = found
        entries, _ = sn.node_counts(node)
        if limit and removed + entries > limit:
            break
        if by_maxlen:
            whole = meta.length - entries >= spec.maxlen
        elif size is not None:
            whole = size - len(node) >= spec.maxbytes
        else:
            whole = sn.last_entry_id(node, master_id) < spec.minid
        live = [] if refs is None else _live_ids(node, master_id)
        if whole and not (acked and refs is not None and any(map(refs.referenced, live))):
            if refs is not None:
                for entry_id in live:
                    refs.drop(entry_id)
            txn.node_delete(handle, master_id)
            if size is not None:
                size -= len(node)
            meta.node_count -= 1
            meta.length -= entries
            removed += entries
            changed = True  # a node of tombstones only may go while removing no entry
            continue
        if spec.approx or size is not None:
            break
        taken, done = _trim_inside(txn, stream, master_id, node, spec, refs)
        removed += taken
        changed = changed or taken > 0
        if done or not acked:
            break
        after = master_id
    if changed:
        if meta.node_count == 0:
            meta.tail_id = (0, 0)
        refresh_first_id(txn, stream)
        txn.stream_put(handle, meta)
    return removed


def _trim_inside(
    txn: Txn,
    stream: StreamRef,
    master_id: ID,
    node: bytes | bytearray,
    spec: TrimSpec,
    refs: References | None,
) -> tuple[int, bool]:
    """An exact trim inside one node: its entries tombstoned in order until the target (under
    ``ACKED`` the referenced ones skipped, under ``DELREF`` each dropped from the pending
    entries lists); ``(entries removed, whether the target was met)``."""
    meta = stream.meta
    by_maxlen = spec.strategy == "maxlen"
    acked = spec.policy is Policy.ACKED
    positions: list[int] = []
    done = False
    for entry_id, flags, flags_pos in sn.iter_ids(node, master_id):
        if (meta.length <= spec.maxlen) if by_maxlen else (entry_id >= spec.minid):
            done = True
            break
        if flags & sn.FLAG_DELETED:
            continue
        if refs is not None:
            if acked and refs.referenced(entry_id):
                continue
            if not acked:
                refs.drop(entry_id)
        positions.append(flags_pos)
        meta.length -= 1
    if by_maxlen and meta.length <= spec.maxlen:
        done = True
    if positions:
        mutable = txn.node_for_update(stream.handle, master_id)
        assert mutable is not None
        sn.mark_deleted(mutable, positions)
    return len(positions), done


def _live_ids(node: bytes | bytearray, master_id: ID) -> list[ID]:
    return [eid for eid, flags, _ in sn.iter_ids(node, master_id) if not flags & sn.FLAG_DELETED]


def _next_node(txn: Txn, handle: int, after: ID | None) -> tuple[ID, bytes | bytearray] | None:
    """The stream's first node, or the first one after master ID ``after``."""
    for master_id, node in txn.iter_nodes(handle, after or (0, 0)):
        if after is None or master_id > after:
            return master_id, node
    return None


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
