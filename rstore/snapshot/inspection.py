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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from rstore.codec import stream_node as sn
from rstore.ids import ID, MAX_ID, MIN_ID, format_id, parse_range_bound
from rstore.model import (
    ConsumerInfo,
    ConsumerPending,
    ConsumerState,
    GroupInfo,
    GroupState,
    NackedEntries,
    PendingEntry,
    StreamInfo,
    StreamNode,
    StreamState,
)
from rstore.rdb.reader import (
    Aux,
    End,
    Function,
    KeyEnd,
    KeyStart,
    ModuleAux,
    RDBReader,
    SelectDB,
    open_rdb,
)
from rstore.storage.env import Env
from rstore.storage.records.txn import Txn
from rstore.streams.dump import snapshot_stream, stream_keys
from rstore.streams.lag import counters, group_lag
from rstore.streams.read import scan_nodes

__all__ = [
    "RDBSummary",
    "TypeSummary",
    "inspect_rdb",
    "inspect_store",
    "read_rdb_entries",
    "read_rdb_range",
]

Progress = Callable[[int, int | None], None]


@dataclass
class TypeSummary:
    """The keys of one type in one database of a file."""

    keys: int = 0
    bytes: int = 0
    elements: int = 0
    expiring: int = 0


@dataclass
class RDBSummary:
    """A whole file: its header data, its databases by type, and its streams in detail."""

    path: str
    size: int | None = None
    rdb_version: int = 0
    aux: dict[bytes, bytes] = field(default_factory=dict)
    functions: int = 0
    module_aux: list[str] = field(default_factory=list)
    databases: dict[int, dict[str, TypeSummary]] = field(default_factory=dict)
    streams: list[StreamInfo] = field(default_factory=list)
    checksum: int = 0
    checksum_verified: bool = False


class _Group:
    """One group as the records come: its state, lag, consumers and (when kept) its PEL."""

    def __init__(self, state: GroupState, lag: int | None) -> None:
        self.state = state
        self.lag = lag
        self.consumers: list[tuple[ConsumerState, list[ID]]] = []
        self.pel: list[PendingEntry] = []
        self.released: set[ID] = set()  # in the PEL with no owner (RDB 14's NACK zone)

    def finish(self, pending: bool) -> GroupInfo:
        if not pending:
            members = tuple(ConsumerInfo(c) for c, _ in self.consumers)
            return GroupInfo(self.state, self.lag, members)
        owner = {i: c.name for c, ids in self.consumers for i in ids}
        pel = tuple(
            PendingEntry(p.id, 0, p.delivery_count, b"", released=True)
            if p.id in self.released
            else PendingEntry(
                p.id, p.delivery_time_ms, p.delivery_count, owner.get(p.id, p.consumer)
            )
            for p in self.pel
        )
        by_id = {p.id: p for p in pel}
        members = tuple(
            ConsumerInfo(c, tuple(by_id[i] for i in ids if i in by_id)) for c, ids in self.consumers
        )
        return GroupInfo(self.state, self.lag, members, pel)


class _StreamBuilder:
    """Folds one stream's records -- from a file, or a store's snapshot, alike -- into a
    :class:`StreamInfo` (constant memory: node counts and edge IDs, not entries; with
    ``pending``, every group's whole PEL too)."""

    def __init__(
        self, key: bytes, db: int = 0, expire_ms: int | None = None, pending: bool = False
    ) -> None:
        self.key = key
        self.db = db
        self.expire_ms = expire_ms
        self.pending = pending
        self.nodes = 0
        self.first_entry_id: ID | None = None
        self.last_entry_id: ID | None = None
        self.state: StreamState | None = None
        self.groups: list[_Group] = []

    def add(self, rec: object) -> None:
        if isinstance(rec, StreamNode):
            self.nodes += 1
            if self.first_entry_id is None:
                first = sn.first_live_entry(rec.listpack, rec.master_id)
                self.first_entry_id = first[0] if first else None
            self.last_entry_id = sn.last_entry_id(rec.listpack, rec.master_id)
        elif isinstance(rec, StreamState):
            self.state = rec
        elif isinstance(rec, GroupState):
            assert self.state is not None, "a group before its stream's state"
            lag = group_lag(
                counters(self.state, self.first_entry_id), rec.last_id, rec.entries_read
            )
            self.groups.append(_Group(rec, lag))
        elif isinstance(rec, ConsumerState):
            self.groups[-1].consumers.append((rec, []))
        elif self.pending and isinstance(rec, PendingEntry):
            self.groups[-1].pel.append(rec)
        elif self.pending and isinstance(rec, ConsumerPending):
            self.groups[-1].consumers[-1][1].append(rec.id)
        elif self.pending and isinstance(rec, NackedEntries):
            self.groups[-1].released.update(rec.ids)

    def finish(self, size: int = 0) -> StreamInfo:
        assert self.state is not None, "a stream without its state"
        groups = tuple(g.finish(self.pending) for g in self.groups)
        return StreamInfo(
            key=self.key, state=self.state, nodes=self.nodes,
            first_entry_id=self.first_entry_id, last_entry_id=self.last_entry_id,
            groups=groups, db=self.db, expire_ms=self.expire_ms, bytes=size,
        )  # fmt: skip


def inspect_rdb(
    path: str,
    *,
    key: bytes | None = None,
    progress: Progress | None = None,
    pending: bool = False,
) -> RDBSummary:
    """Summarise an RDB file; with ``key``, only that stream is summarised in ``streams``.

    With ``pending``, each group's :attr:`GroupInfo.pending` holds its whole PEL (every
    pending entry with its delivery time, delivery count and owner, as XPENDING's extended
    form lists them) and each consumer's :attr:`ConsumerInfo.pending` its own entries; memory
    then grows with the PELs.

    Every stream summarised is checked in depth as a restore would check it; damage raises
    :class:`CorruptRDBError` at the offset of the damaged byte (the offset a restore of the
    same file reports)."""
    summary = RDBSummary(path)
    with open_rdb(path) as f:
        _inspect(f, summary, key, progress, pending)
    return summary


def _inspect(
    f: BinaryIO,
    summary: RDBSummary,
    key: bytes | None,
    progress: Progress | None,
    pending: bool = False,
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
                builder = _StreamBuilder(event.key, db, event.expire_ms, pending)
        elif isinstance(event, KeyEnd):
            types = summary.databases.setdefault(db, {})
            t = types.setdefault(event.type_name, TypeSummary())
            t.keys += 1
            t.bytes += event.size
            t.elements += max(event.elements, 0)
            t.expiring += expiring
            if builder is not None:
                summary.streams.append(builder.finish(event.size))
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
    current = 0
    found = False
    wanted = key
    entries: list[tuple[ID, list[bytes]]] = []
    with open_rdb(path) as f:
        reader = RDBReader(f, deep=lambda db_, name: db_ == db and name == wanted)
        events = reader.events()
        key_ended = [False]

        def nodes_of_key() -> Iterator[tuple[ID, bytes]]:
            """The key's nodes, ascending, as the walk asks for them; up to its KeyEnd."""
            for event in events:
                if isinstance(event, StreamNode):
                    yield event.master_id, event.listpack
                elif isinstance(event, KeyEnd):
                    key_ended[0] = True
                    if progress is not None:
                        progress(reader.offset, reader.size)
                    return

        for event in events:
            if isinstance(event, SelectDB):
                current = event.db
            elif isinstance(event, KeyStart):
                if current == db and event.key == key and event.type_name == "stream":
                    found = True
                    entries = _walk(nodes_of_key(), low, high, limit, reverse)
                    if not key_ended[0]:
                        for _ in nodes_of_key():  # the rest of the key: checked, not decoded
                            pass
                    if not verify:
                        break
            elif isinstance(event, KeyEnd | End) and progress is not None:
                progress(reader.offset, reader.size)
    if not found:
        return None
    return [(format_id(entry_id), fields) for entry_id, fields in entries]


def _walk(
    nodes: Iterator[tuple[ID, bytes]], low: ID, high: ID, limit: int, reverse: bool
) -> list[tuple[ID, list[bytes]]]:
    """A range of a stream whose nodes come from a file, ascending: forward, the walk every
    range uses (:func:`rstore.streams.read.scan_nodes`); backward, the last ``limit`` entries
    of the forward walk, kept as it goes (a file cannot be read from its end)."""
    if not reverse:
        return scan_nodes(nodes, low, high, limit)
    kept: collections.deque[tuple[ID, list[bytes]]] = collections.deque(
        maxlen=limit if limit > 0 else None
    )
    for master_id, node in nodes:
        if master_id > high:
            break
        kept.extend(scan_nodes([(master_id, node)], low, high))
    return list(reversed(kept))


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
    env: Env,
    *,
    key: bytes | None = None,
    progress: Progress | None = None,
    pending: bool = False,
) -> list[StreamInfo]:
    """The same per-stream reports for a live store (one consistent snapshot), built from the
    same records as a file's.  ``progress(keys_done, keys_total)`` is called as the keys are
    read; ``pending`` as in :func:`inspect_rdb`."""

    def collect(txn: Txn) -> list[StreamInfo]:
        out = []
        total = txn.key_count() if progress is not None else 0
        for done, (name, stream) in enumerate(stream_keys(txn), start=1):
            if progress is not None:
                progress(done, total)
            if key is not None and name != key:
                continue
            snap = snapshot_stream(txn, stream, nack_zone=True)
            builder = _StreamBuilder(name, pending=pending)
            for node in snap.nodes:
                builder.add(node)
            builder.add(snap.state)
            for group in snap.groups:
                builder.add(group.state)
                if pending:
                    for entry in group.pending:
                        builder.add(entry)
                for consumer in group.consumers:
                    builder.add(consumer.state)
                    if pending:
                        for entry_id in consumer.ids:
                            builder.add(ConsumerPending(entry_id))
                builder.add(NackedEntries(tuple(group.nacked)))
            out.append(builder.finish())
        return out

    return env.read(collect)
