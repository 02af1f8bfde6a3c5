"""Where each stream and each of its nodes lies in an RDB file, so that parts of one big file
can be read independently (by several processes, or Spark tasks) without decoding the rest.

>>> index = rstore.index_rdb("dump.rdb")                      # doctest: +SKIP
>>> s = index[0]; first, last = s.nodes[0], s.nodes[9]        # doctest: +SKIP
>>> nodes = rstore.read_rdb_nodes(s.path, first.offset, 10)   # doctest: +SKIP
>>> rstore.iter_columns(nodes, (0, 0), last_id)               # doctest: +SKIP

:func:`index_rdb` reads the file once (every node's header checked, the file's checksum
verified) and keeps, per stream, its state record and per node its master ID, its live entry
count and the file offset of its master-ID string.  :func:`read_rdb_nodes` then seeks to such
an offset and reads consecutive nodes, each checked in depth as a restore checks it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rstore.codec import stream_node as sn
from rstore.errors import CorruptDataError, CorruptRDBError
from rstore.model import ID, NodeSpan, StreamNode, StreamState
from rstore.rdb.decoding import Source
from rstore.rdb.reader import KeyEnd, KeyStart, RDBReader, SelectDB, open_rdb
from rstore.rdb.values import node_error, read_nodes

__all__ = ["NodeSpan", "RDBStream", "index_rdb", "read_rdb_nodes", "read_rdb_streams"]

Progress = Callable[[int, int | None], None]


@dataclass(frozen=True, slots=True)
class RDBStream:
    """One stream key of an RDB file: database, name, the offset of its type byte, its size in
    bytes, its state record (length, IDs, counters) and its nodes in ascending order."""

    path: str
    db: int
    key: bytes
    offset: int
    size: int
    state: StreamState
    nodes: tuple[NodeSpan, ...]


def _length_size(first_byte: int) -> int:
    """Bytes of an RDB length whose first byte is ``first_byte`` (6-, 14-, 32- or 64-bit)."""
    kind = first_byte >> 6
    if kind == 0:
        return 1
    if kind == 1:
        return 2
    if first_byte == 0x80:
        return 5
    if first_byte == 0x81:
        return 9
    return 0  # not a plain length: the reader reports the damage


Wanted = Callable[[int, bytes], bool]


def _walk(
    path: str, *, keep: Wanted | None, progress: Progress | None
) -> Iterator[tuple[RDBStream, list[tuple[ID, bytes]]]]:
    """Each stream of the file with its index and, for the streams ``keep(db, key)`` is true
    of, its nodes (checked in depth; for the others only their headers are checked and the
    list stays empty)."""
    with open_rdb(path) as f:
        reader = RDBReader(f, deep=keep if keep is not None else False)
        kept = False
        db = 0
        start: KeyStart | None = None
        state: StreamState | None = None
        spans: list[NodeSpan] = []
        nodes: list[tuple[ID, bytes]] = []
        next_at = 0  # offset of the next node's first byte
        for event in reader.events():
            if isinstance(event, SelectDB):
                db = event.db
            elif isinstance(event, KeyStart):
                if event.type_name == "stream":
                    start, state, spans, nodes = event, None, [], []
                    kept = keep is not None and keep(db, event.key)
                    after_key = reader.offset  # the node count's first byte
                    head = os.pread(f.fileno(), 1, after_key)
                    next_at = after_key + (_length_size(head[0]) if head else 0)
            elif isinstance(event, StreamNode) and start is not None:
                try:  # a node read without the deep check may have a damaged master entry
                    live = sn.node_counts(event.listpack)[0]
                except CorruptDataError as exc:  # the reader stands right after the node
                    raise node_error(reader.source, exc) from exc
                spans.append(NodeSpan(event.master_id, live, next_at))
                if kept:
                    nodes.append((event.master_id, event.listpack))
                next_at = reader.offset
            elif isinstance(event, StreamState) and start is not None:
                state = event
            elif isinstance(event, KeyEnd):
                if start is not None and state is not None:
                    found = RDBStream(
                        path, db, start.key, start.offset, event.size, state, tuple(spans)
                    )
                    yield found, nodes
                start = None
                if progress is not None:
                    progress(reader.offset, reader.size)


def index_rdb(path: str, *, progress: Progress | None = None) -> list[RDBStream]:
    """The streams of the RDB file at ``path``, in file order, with their node offsets.

    The whole file is read (its checksum verified); damage raises :class:`CorruptRDBError` at
    the offset of the damaged byte.  ``progress(bytes_read, file_size)`` is called after each
    key."""
    return [stream for stream, _ in _walk(path, keep=None, progress=progress)]


def read_rdb_streams(
    path: str, wanted: Wanted | None = None, *, progress: Progress | None = None
) -> Iterator[tuple[RDBStream, list[tuple[ID, bytes]]]]:
    """Every stream of the RDB file at ``path`` with its nodes, ``(stream, [(master_id,
    listpack), ...])``, in one pass over the file: for reading whole files, where
    :func:`index_rdb` then :func:`read_rdb_nodes` would read it twice.  Only the streams
    ``wanted(db, key)`` is true of (all by default) get their nodes, checked in depth as a
    restore checks them; the others come with an empty list.  Damage raises
    :class:`CorruptRDBError` when the pass reaches it (the checksum at the end of the file:
    after the last stream was given).  One stream's nodes are held at a time."""
    return _walk(path, keep=wanted or (lambda db, key: True), progress=progress)


def read_rdb_nodes(
    path: str, offset: int, count: int, *, after: ID | None = None
) -> Iterator[tuple[ID, bytes]]:
    """``count`` consecutive nodes of one stream read from ``offset`` (a
    :attr:`NodeSpan.offset` of :func:`index_rdb`), as ``(master_id, listpack)``, each checked in
    depth; ``after`` is the master ID of the node before the first, when known."""
    with open_rdb(path) as f:
        size = os.fstat(f.fileno()).st_size
        if not 0 <= offset < size:
            raise CorruptRDBError(
                f"no stream node at offset {offset} (the file has {size} bytes)", offset
            )
        f.seek(offset)
        src = Source(f, size, offset=offset)
        for node in read_nodes(src, count, after=after):
            yield node.master_id, node.listpack
