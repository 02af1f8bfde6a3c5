"""Looking inside RDB files (from rstore, Redis or Valkey) without a server, and inside stores.

:func:`inspect_rdb` reads a whole file in constant memory and summarises it: per database and
type, key counts and bytes; per stream its length, nodes, edge IDs, counters, and groups with
their pending counts, lag and consumers.  :func:`read_rdb_range` returns a stream's entries
straight from a file in the shape of ``Store.xrange``, and :func:`read_rdb_entries` in the
shape of an XRANGE reply (every field pair kept).  :func:`inspect_store` gives the same summary of a
live store.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from rstore.codec import stream_node as sn
from rstore.ids import ID, MAX_ID, MIN_ID, format_id, parse_range_bound
from rstore.model import ConsumerState, GroupState, PendingEntry, StreamNode, StreamState
from rstore.rdb.reader import (
    Aux,
    End,
    Function,
    KeyEnd,
    KeyStart,
    ModuleAux,
    RDBReader,
    SelectDB,
)
from rstore.storage.env import Env
from rstore.storage.layout import INVALID_ENTRIES_READ, GroupMeta, StreamMeta
from rstore.storage.txn import Txn
from rstore.streams.export import snapshot_stream, stream_keys
from rstore.streams.lag import group_lag

__all__ = [
    "ConsumerSummary",
    "GroupSummary",
    "RDBSummary",
    "StreamSummary",
    "TypeSummary",
    "inspect_rdb",
    "inspect_store",
    "read_rdb_entries",
    "read_rdb_range",
]

Progress = Callable[[int, int | None], None]


@dataclass
class ConsumerSummary:
    name: bytes
    pending: int
    seen_time_ms: int
    active_time_ms: int | None


@dataclass
class GroupSummary:
    name: bytes
    last_delivered_id: ID
    entries_read: int | None
    lag: int | None
    pending: int
    consumers: list[ConsumerSummary] = field(default_factory=list)


@dataclass
class StreamSummary:
    db: int
    key: bytes
    length: int = 0
    nodes: int = 0
    first_entry_id: ID | None = None
    last_entry_id: ID | None = None  # last entry physically stored (live or not)
    last_generated_id: ID = MIN_ID
    entries_added: int | None = None
    max_deleted_entry_id: ID | None = None
    expire_ms: int | None = None
    bytes: int = 0
    groups: list[GroupSummary] = field(default_factory=list)


@dataclass
class TypeSummary:
    keys: int = 0
    bytes: int = 0
    elements: int = 0
    expiring: int = 0


@dataclass
class RDBSummary:
    path: str
    size: int | None = None
    rdb_version: int = 0
    aux: dict[bytes, bytes] = field(default_factory=dict)
    functions: int = 0
    module_aux: list[str] = field(default_factory=list)
    databases: dict[int, dict[str, TypeSummary]] = field(default_factory=dict)
    streams: list[StreamSummary] = field(default_factory=list)
    checksum: int = 0
    checksum_verified: bool = False


def _meta_of(st: StreamState) -> StreamMeta:
    return StreamMeta(
        length=st.length,
        last_id=st.last_id,
        first_id=st.first_id or MIN_ID,
        max_deleted_entry_id=st.max_deleted_entry_id or MIN_ID,
        entries_added=st.entries_added if st.entries_added is not None else st.length,
    )


class _StreamBuilder:
    """Folds one stream's records into a summary (constant memory)."""

    def __init__(self, summary: StreamSummary) -> None:
        self.s = summary
        self.meta: StreamMeta | None = None

    def add(self, rec: object) -> None:
        s = self.s
        if isinstance(rec, StreamNode):
            s.nodes += 1
            if s.first_entry_id is None:
                first = sn.first_live_entry(rec.listpack, rec.master_id)
                s.first_entry_id = first[0] if first else None
            s.last_entry_id = sn.last_entry_id(rec.listpack, rec.master_id)
        elif isinstance(rec, StreamState):
            s.length = rec.length
            s.last_generated_id = rec.last_id
            s.entries_added = rec.entries_added
            s.max_deleted_entry_id = rec.max_deleted_entry_id
            self.meta = _meta_of(rec)
        elif isinstance(rec, GroupState):
            assert self.meta is not None
            entries_read = rec.entries_read if rec.entries_read is not None else -1
            lag = group_lag(self.meta, GroupMeta(rec.name, 0, rec.last_id, entries_read))
            s.groups.append(
                GroupSummary(
                    rec.name,
                    rec.last_id,
                    None if entries_read == INVALID_ENTRIES_READ else entries_read,
                    lag,
                    rec.pel_count,
                )
            )
        elif isinstance(rec, ConsumerState):
            s.groups[-1].consumers.append(
                ConsumerSummary(rec.name, rec.pel_count, rec.seen_time_ms, rec.active_time_ms)
            )
        elif isinstance(rec, PendingEntry):
            pass


def inspect_rdb(
    path: str,
    *,
    key: bytes | None = None,
    progress: Progress | None = None,
) -> RDBSummary:
    """Summarise an RDB file; with ``key``, only that stream is summarised in ``streams``.

    Every stream summarised is checked in depth as a restore would check it; damage raises
    :class:`CorruptRDBError` at the offset of the damaged byte (the offset a restore of the
    same file reports)."""
    summary = RDBSummary(path)
    with open(path, "rb") as f:
        _inspect(f, summary, key, progress)
    return summary


def _inspect(
    f: BinaryIO, summary: RDBSummary, key: bytes | None, progress: Progress | None
) -> None:
    reader = RDBReader(f, deep=True if key is None else lambda db, name: name == key)
    summary.size = reader.size
    db = 0
    expiring = False
    builder: _StreamBuilder | None = None
    for event in reader.events():
        if isinstance(event, Aux):
            summary.aux[event.key] = event.value
        elif isinstance(event, Function):
            summary.functions += 1
        elif isinstance(event, ModuleAux):
            summary.module_aux.append(event.module)
        elif isinstance(event, SelectDB):
            db = event.db
        elif isinstance(event, KeyStart):
            summary.rdb_version = reader.version
            expiring = event.expire_ms is not None
            if event.type_name == "stream" and (key is None or event.key == key):
                builder = _StreamBuilder(StreamSummary(db, event.key, expire_ms=event.expire_ms))
        elif isinstance(event, KeyEnd):
            types = summary.databases.setdefault(db, {})
            t = types.setdefault(event.type_name, TypeSummary())
            t.keys += 1
            t.bytes += event.size
            t.elements += max(event.elements, 0)
            t.expiring += expiring
            if builder is not None:
                builder.s.bytes = event.size
                summary.streams.append(builder.s)
                builder = None
            if progress is not None:
                progress(reader.offset, reader.size)
        elif isinstance(event, End):
            summary.checksum = event.checksum
            summary.checksum_verified = event.verified
            if progress is not None:  # the whole file, trailer included
                progress(reader.offset, reader.size)
        elif builder is not None:
            builder.add(event)  # nodes arrive checked in depth
    summary.rdb_version = reader.version


#: One entry as XRANGE replies it: ``(id, [field, value, ...])``.
RawEntry = tuple[bytes, list[bytes]]
Bound = ID | bytes | str


def read_rdb_entries(
    path: str,
    key: bytes | str,
    start: Bound = MIN_ID,
    end: Bound = MAX_ID,
    count: int | None = 0,
    *,
    db: int = 0,
    reverse: bool = False,
    verify: bool = True,
    progress: Progress | None = None,
) -> list[RawEntry] | None:
    """A stream's live entries with ``start <= id <= end`` read from an RDB file, shaped as
    ``Store.execute("XRANGE", ...)`` replies them: ``[(b"ms-seq", [field, value, ...]), ...]``
    (fields in stored order, repeats kept); ascending, or descending with ``reverse``; at most
    ``count`` (0 or ``None``: all).  ``None`` if the file has no such stream in database ``db``.

    ``start`` and ``end`` are ``(ms, seq)`` tuples, or range bounds as
    :func:`rstore.parse_range_bound` reads them (``-``, ``+``, ``ms``, ``ms-seq``, ``(ms-seq``
    for an exclusive bound, a time), refused with XRANGE's error texts.
    ``progress(bytes_read, file_size)`` is called after each key.

    The stream's nodes are checked in depth, as a restore checks them, before they are read;
    damage raises :class:`CorruptRDBError` at the offset of the damaged byte.  With ``verify``
    (the default) the rest of the file is read too, so that its checksum is checked.
    ``verify=False`` stops at the key, which is faster on a big file but trusts whatever lies
    outside the nodes read."""
    if isinstance(key, str):
        key = key.encode()
    low = start if isinstance(start, tuple) else parse_range_bound(start, is_end=False)
    high = end if isinstance(end, tuple) else parse_range_bound(end, is_end=True)
    limit = count or 0
    found = False
    kept: collections.deque[tuple[ID, list[bytes]]] = collections.deque(
        maxlen=limit if reverse and limit > 0 else None
    )
    current = 0
    in_key = done = False
    wanted = key
    with open(path, "rb") as f:
        reader = RDBReader(f, deep=lambda db_, name: db_ == db and name == wanted)
        for event in reader.events():
            if isinstance(event, SelectDB):
                current = event.db
            elif isinstance(event, KeyStart):
                in_key = current == db and event.key == key and event.type_name == "stream"
                found = found or in_key
            elif isinstance(event, KeyEnd | End):
                if progress is not None:
                    progress(reader.offset, reader.size)
                if isinstance(event, KeyEnd) and in_key:
                    in_key, done = False, True
                    if not verify:
                        break
            elif in_key and not done and isinstance(event, StreamNode):
                entries: list[tuple[ID, list[bytes]]] = []
                sn.scan_forward(event.listpack, event.master_id, low, high, 0, entries)
                kept.extend(entries)
                if not reverse and limit > 0 and len(kept) >= limit:
                    done = True
                    if not verify:
                        break
    if not found:
        return None
    result = [(format_id(entry_id), fields) for entry_id, fields in kept]
    if reverse:
        result.reverse()
    return result[:limit] if limit > 0 else result


def read_rdb_range(
    path: str,
    key: bytes | str,
    start: Bound = MIN_ID,
    end: Bound = MAX_ID,
    count: int | None = 0,
    *,
    db: int = 0,
    reverse: bool = False,
    verify: bool = True,
    progress: Progress | None = None,
) -> list[tuple[bytes, dict[bytes, bytes]]] | None:
    """:func:`read_rdb_entries` in the shape of :meth:`rstore.Store.xrange` (redis-py's):
    ``[(b"ms-seq", {field: value}), ...]``; ``None`` if the file has no such stream.  A field
    an entry holds twice keeps its last value, as in ``Store.xrange``; use
    :func:`read_rdb_entries` to see every pair."""
    entries = read_rdb_entries(
        path, key, start, end, count, db=db, reverse=reverse, verify=verify, progress=progress
    )
    if entries is None:
        return None
    return [(entry_id, dict(zip(flat[0::2], flat[1::2]))) for entry_id, flat in entries]


def inspect_store(
    env: Env, *, key: bytes | None = None, progress: Progress | None = None
) -> list[StreamSummary]:
    """The same per-stream summaries for a live store (one consistent snapshot).
    ``progress(keys_done, keys_total)`` is called as the keys are read."""

    def collect(txn: Txn) -> list[StreamSummary]:
        out = []
        total = txn.key_count() if progress is not None else 0
        for done, (name, stream) in enumerate(stream_keys(txn), start=1):
            if progress is not None:
                progress(done, total)
            if key is not None and name != key:
                continue
            snap = snapshot_stream(txn, stream)
            builder = _StreamBuilder(StreamSummary(0, name))
            for node in snap.nodes:
                builder.add(node)
            builder.add(snap.state)
            for group in snap.groups:
                builder.add(group.state)
                for consumer in group.consumers:
                    builder.add(consumer.state)
            out.append(builder.s)
        return out

    return env.read(collect)
