"""XINFO STREAM: the stream's state, including Redis's radix-tree counters.

``radix-tree-keys`` is the node count.  ``radix-tree-nodes`` counts the nodes of the compressed
radix tree (rax) that maps 16-byte big-endian master IDs to nodes.  For the trees Redis builds
this equals the size of a canonical compressed trie: the root, every prefix where the keys
branch, every one-byte child of such a prefix, and every key.  In sorted key order the branching
prefixes are exactly the longest common prefixes of neighbours.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from rstore.codec.stream_node import Entry
from rstore.ids import ID
from rstore.storage.txn import Txn
from rstore.streams.keyspace import StreamRef
from rstore.streams.read import first_entry, last_entry, read_range

__all__ = ["StreamInfo", "radix_tree_nodes", "stream_info"]

_FULL_DEFAULT_COUNT = 10


@dataclass(frozen=True)
class StreamInfo:
    """What XINFO STREAM reports (names as in Redis)."""

    length: int
    radix_tree_keys: int
    radix_tree_nodes: int
    last_generated_id: ID
    max_deleted_entry_id: ID
    entries_added: int
    recorded_first_entry_id: ID
    groups: int
    first_entry: Entry | None
    last_entry: Entry | None
    entries: list[Entry] | None  # FULL only


def radix_tree_nodes(master_ids: list[ID]) -> int:
    """Node count of the rax holding ``master_ids`` (sorted ascending) as 16-byte keys."""
    if not master_ids:
        return 1
    keys = [(ms << 64) | seq for ms, seq in master_ids]
    nodes: set[tuple[int, int]] = {(0, 0)}  # (prefix length in bytes, prefix value)
    for k in keys:
        nodes.add((16, k))
    for a, b in itertools.pairwise(keys):
        diff_bits = (a ^ b).bit_length()
        lcp = 16 - (diff_bits + 7) // 8  # common prefix length in bytes
        shift = (16 - lcp) * 8
        nodes.add((lcp, a >> shift))
        child_shift = shift - 8
        nodes.add((lcp + 1, a >> child_shift))
        nodes.add((lcp + 1, b >> child_shift))
    return len(nodes)


def stream_info(txn: Txn, stream: StreamRef, *, full: bool = False, count: int = 10) -> StreamInfo:
    """Collect XINFO STREAM; ``full`` adds up to ``count`` entries (0 = all)."""
    meta = stream.meta
    entries = None
    first = last = None
    if full:
        entries = read_range(txn, stream, (0, 0), (2**64 - 1, 2**64 - 1), count)
    else:
        first = first_entry(txn, stream)
        last = last_entry(txn, stream)
    return StreamInfo(
        length=meta.length,
        radix_tree_keys=meta.node_count,
        radix_tree_nodes=radix_tree_nodes(txn.node_ids(stream.handle)),
        last_generated_id=meta.last_id,
        max_deleted_entry_id=meta.max_deleted_entry_id,
        entries_added=meta.entries_added,
        recorded_first_entry_id=meta.first_id,
        groups=meta.group_count,
        first_entry=first,
        last_entry=last,
        entries=entries,
    )
