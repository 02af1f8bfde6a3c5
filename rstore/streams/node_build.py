"""Stream nodes built from entries as XADD builds them, without a store: the fast way to turn a
file of entries into nodes that :meth:`rstore.Store.append_nodes` takes whole.

A :class:`NodeBuilder` receives one stream's entries in order -- a batch of
:class:`rstore.Columns` at a time, or one entry -- and puts each into the node being built by
XADD's rules (``streamAppendItem``'s encoding, :func:`rstore.streams.append.tail_full`'s node
rule with the given limits: a node takes entries while its size plus the entry's stays under
``max_bytes`` and it holds fewer than ``max_entries``; then the entry opens a new node).  So
the nodes are byte for byte those XADD would make of the same entries in an empty stream.

It takes only what XADD could take after what it took before: an entry whose ID is not above
the last one taken (``0-0`` included), that has no fields, or that is larger than a node can
ever be, is refused -- the caller hands it to XADD's own path (``Store.append_entries``), which
answers for it.  Entries are never reordered: before a refused entry is handed on, the caller
takes the node being built (:meth:`NodeBuilder.finish`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rstore.codec import stream_node as sn
from rstore.codec.columns import Columns
from rstore.codec.node_validate import NodeFacts
from rstore.codec.stream_append import append_columns, open_node
from rstore.ids import MIN_ID
from rstore.model import ID
from rstore.streams.append import STREAM_LISTPACK_MAX_SIZE

__all__ = ["BuiltNode", "NodeBuilder"]

#: Redis's defaults: ``stream-node-max-bytes`` and ``stream-node-max-entries``.
DEFAULT_MAX_BYTES = 4096
DEFAULT_MAX_ENTRIES = 100


class BuiltNode(NamedTuple):
    """A finished node: its master ID, its listpack, and what it holds (as
    :func:`rstore.node_facts` would find it)."""

    master_id: ID
    node: bytes
    facts: NodeFacts


class NodeBuilder:
    """Nodes of one stream built entry by entry by XADD's rules (see the module docstring).

    ``max_bytes`` and ``max_entries`` are the store's ``stream-node-max-bytes`` and
    ``stream-node-max-entries`` (``Store.config``); 0 means no limit, as in Redis."""

    def __init__(
        self, max_bytes: int = DEFAULT_MAX_BYTES, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        if max_bytes < 0 or max_entries < 0:
            raise ValueError("node limits are at least 0 (0: no limit)")
        self.max_bytes = (
            STREAM_LISTPACK_MAX_SIZE if max_bytes == 0 else min(max_bytes, STREAM_LISTPACK_MAX_SIZE)
        )
        self.max_entries = max_entries
        #: the last ID taken (``0-0`` before any: an entry must be above it)
        self.last_id: ID = MIN_ID
        self._node: bytearray | None = None
        self._master: ID = MIN_ID
        self._first: ID = MIN_ID
        self._count = 0
        self._done: list[BuiltNode] = []

    def add_columns(self, cols: Columns, start: int = 0) -> int:
        """Take the entries ``start``.. of ``cols`` in order; the index of the first one
        refused (``cols.count`` when all were taken)."""
        i = start
        while i < cols.count:
            if self._node is None:
                if not self._open_column(cols, i):
                    return i
                i += 1
                continue
            before = i
            i, self.last_id = append_columns(
                self._node, self._master, self.last_id, cols, i, self.max_bytes,
                self.max_entries,
            )  # fmt: skip
            self._count += i - before
            if i < cols.count:
                if cols.entry_id(i) <= self.last_id:
                    return i
                self._close()  # the entry opens the next node, or is refused
        return i

    def add(self, entry_id: ID, flat: Sequence[bytes]) -> bool:
        """Take one entry; whether it was taken (see the module docstring)."""
        if not self._takes(entry_id, flat):
            return False
        node = self._node
        if node is not None and not self._full(node, flat):
            sn.append_entry(node, self._master, entry_id, flat)
            self._count += 1
            self.last_id = entry_id
            return True
        self._close()
        return self._open(entry_id, flat)

    def take(self) -> list[BuiltNode]:
        """The nodes finished so far (each given once)."""
        done, self._done = self._done, []
        return done

    def finish(self) -> list[BuiltNode]:
        """The nodes finished so far and the node being built: the next entry taken opens a
        new node."""
        self._close()
        return self.take()

    def _takes(self, entry_id: ID, flat: Sequence[bytes]) -> bool:
        return (
            entry_id > self.last_id
            and len(flat) >= 2
            and len(flat) % 2 == 0
            and sn.entry_size(flat) <= STREAM_LISTPACK_MAX_SIZE
        )

    def _full(self, node: bytearray, flat: Sequence[bytes]) -> bool:
        size = sn.entry_size(flat)
        return len(node) + size >= self.max_bytes or 0 < self.max_entries <= self._count

    def _open_column(self, cols: Columns, i: int) -> bool:
        """Open a node with entry ``i`` of ``cols``, if it is one to take."""
        entry_id = cols.entry_id(i)
        if entry_id <= self.last_id:
            return False
        node = open_node(cols, i)  # None: no fields
        if node is None or (
            len(node) > STREAM_LISTPACK_MAX_SIZE  # the entry may be larger than any node
            and sn.entry_size(cols.entry(i)[1]) > STREAM_LISTPACK_MAX_SIZE
        ):
            return False
        self._node = node
        self._master = self._first = self.last_id = entry_id
        self._count = 1
        return True

    def _open(self, entry_id: ID, flat: Sequence[bytes]) -> bool:
        if not self._takes(entry_id, flat):
            return False
        self._node = sn.new_node(flat)
        self._master = self._first = self.last_id = entry_id
        self._count = 1
        return True

    def _close(self) -> None:
        if self._node is not None:
            facts = NodeFacts(self._count, self._first, self.last_id, 0)
            self._done.append(BuiltNode(self._master, bytes(self._node), facts))
            self._node = None
