"""Where replayed and exported entries come from: a store, an RDB dump or a JSONL file (the
envelope of :mod:`rstore.replay.envelope`); a live Redis/Valkey server is in
:mod:`rstore.replay.remote`, with the same selection rules.

Every source gives entries as :data:`~rstore.replay.envelope.ReplayEntry` tuples,
``(stream, (ms, seq), [field, value, ...])``: streams one after another in name order, each
stream's entries in ID order, fields in stored order with repeated names kept.  The store and
dump sources also give whole batches of :class:`rstore.Columns` (``batches_from_*``), the fast
path for exports.

**Selection**, the same everywhere: ``streams`` lists names and KEYS-style globs (an item
holding ``*``, ``?``, ``[`` or ``\\`` is a glob, matched as :func:`rstore.key_matches` does);
none means every stream.  A name that is not a stream, or a glob that matches none, raises
:class:`SelectionError` before any entry is given (in a JSONL file, where the streams are only
known at the end, nothing is raised).  ``start`` and ``end`` are inclusive ``(ms, seq)``
bounds; a caller converts times and exclusive bounds first (:func:`rstore.parse_range_bound`).
The end of each stream is fixed when its reading starts (its last ID then), so entries
appended meanwhile do not keep a read going forever.

**Memory and transactions**: a store is read a page of nodes at a time (``page_nodes`` nodes
or about ``page_bytes`` bytes, whichever comes first), each page in its own short read
transaction (:meth:`rstore.Store.view`): memory stays bounded and writers are not held up.  A
stream changed between two pages is read as it is then -- each page is consistent, the whole
read is not one snapshot.  A dump is indexed once (:func:`rstore.index_rdb` reads the whole
file and checks its checksum), then read a page of nodes at a time.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import BinaryIO

from rstore import (
    BuiltNode,
    Columns,
    NodeBuilder,
    NodeFacts,
    RDBStream,
    RStoreError,
    Store,
    StoreView,
    index_rdb,
    iter_columns,
    key_matches,
    node_facts,
    read_rdb_nodes,
)

from .buffers import int32s, int64s, strings
from .envelope import ReplayEntry, decode_blocks, decode_lines

__all__ = [
    "NodeRun",
    "SelectionError",
    "batches_from_rdb",
    "batches_from_store",
    "entries_from_columns",
    "entries_from_jsonl",
    "entries_from_rdb",
    "entries_from_store",
    "field_filter",
    "is_glob",
    "jsonl_blocks",
    "runs_from_jsonl",
    "runs_from_rdb",
    "runs_from_store",
    "select_streams",
]

ID = tuple[int, int]
_UINT64_MAX = (1 << 64) - 1
MIN_ID: ID = (0, 0)
MAX_ID: ID = (_UINT64_MAX, _UINT64_MAX)
_GLOB_BYTES = frozenset(b"*?[\\")

#: Nodes read per page (a node holds about 100 entries) and the bytes a page stops at.
PAGE_NODES = 256
PAGE_BYTES = 8 << 20


class SelectionError(RStoreError):
    """A stream named for reading does not exist, or a glob matches none."""


class NodeRun:
    """A whole node of a source stream, every entry of it selected and none deleted, given
    instead of its entries when a source is asked for ``whole_nodes``: a store target that
    keeps the IDs takes it unchanged (:meth:`rstore.Store.append_nodes`); any other use reads
    its :meth:`entries`.  ``facts`` are the node's, checked in depth (:func:`rstore.node_facts`).
    """

    __slots__ = ("facts", "master_id", "node", "stream")

    def __init__(self, stream: bytes, master_id: ID, node: bytes, facts: NodeFacts) -> None:
        self.stream = stream
        self.master_id = master_id
        self.node = node
        self.facts = facts

    def entries(self) -> Iterator[ReplayEntry]:
        """The node's entries, as the source would have given them one by one."""
        for cols in iter_columns([(self.master_id, self.node)], batch_entries=1 << 30):
            yield from entries_from_columns(self.stream, cols)


def _show_name(name: bytes) -> str:
    """A stream name as the errors of this module show it: quoted, ``\\xHH`` for bytes that are
    not UTF-8."""
    return "'" + name.decode("utf-8", "backslashreplace") + "'"


def is_glob(item: bytes) -> bool:
    """Whether a selection item is a glob rather than a plain name."""
    return not _GLOB_BYTES.isdisjoint(item)


def select_streams(
    names: Iterable[bytes], streams: Sequence[bytes] | None, *, where: str = ""
) -> list[bytes]:
    """The names of ``names`` that ``streams`` selects (see the module docstring), sorted;
    :class:`SelectionError` for an item that selects none (``where`` ends its message: `` in
    dump.rdb``)."""
    available = sorted(set(names))
    if not streams:
        return available
    present = set(available)
    chosen: set[bytes] = set()
    for item in streams:
        if is_glob(item):
            found = [name for name in available if key_matches(item, name)]
            if not found:
                raise SelectionError(f"no stream matches {_show_name(item)}{where}")
            chosen.update(found)
        elif item in present:
            chosen.add(item)
        else:
            raise SelectionError(f"no stream {_show_name(item)}{where}")
    return sorted(chosen)


def entries_from_columns(stream: bytes, cols: Columns) -> Iterator[ReplayEntry]:
    """The entries of one batch of columns of ``stream``, as replay entries."""
    wrap = 1 << 64
    ms_list = [v % wrap for v in int64s(cols.ms)]  # IDs above 2**63 are negative there
    seq_list = [v % wrap for v in int64s(cols.seq)]
    keys = strings(cols.key_offsets, cols.key_data)
    values = strings(cols.value_offsets, cols.value_data)
    flat = [item for pair in zip(keys, values) for item in pair]
    bounds = int32s(cols.entry_offsets)
    for ms, seq, a, b in zip(ms_list, seq_list, bounds, bounds[1:]):
        yield stream, (ms, seq), flat[2 * a : 2 * b]


def _page_items(
    key: bytes, nodes: list[tuple[ID, bytes]], start: ID, last: ID, whole_nodes: bool
) -> Iterator[ReplayEntry | NodeRun]:
    """The selected entries of a page of nodes of ``key``; with ``whole_nodes``, each node all
    of whose entries are selected and live as one :class:`NodeRun` instead."""
    if not whole_nodes:
        for cols in iter_columns(nodes, start, last, batch_entries=1 << 30):
            yield from entries_from_columns(key, cols)
        return
    others: list[tuple[ID, bytes]] = []
    for master_id, node in nodes:
        facts = node_facts(node, master_id)
        first = facts.first_live
        if facts.deleted or first is None or first < start or facts.last > last:
            others.append((master_id, node))
            continue
        if others:
            yield from _page_items(key, others, start, last, False)
            others = []
        yield NodeRun(key, master_id, bytes(node), facts)
    if others:
        yield from _page_items(key, others, start, last, False)


# -- a store -----------------------------------------------------------------------------------


def _store_page(
    view: StoreView, *, key: bytes, start: ID, end: ID, page_nodes: int, page_bytes: int
) -> tuple[list[tuple[ID, bytes]], ID | None]:
    """Up to a page of the nodes holding ``start..end``, and the master ID of the node after
    them (``None`` when the page reaches ``end``)."""
    nodes: list[tuple[ID, bytes]] = []
    size = 0
    for master_id, node in view.nodes(key, start, end):
        if len(nodes) >= page_nodes or size >= page_bytes:
            return nodes, master_id
        nodes.append((master_id, node))
        size += len(node)
    return nodes, None


def _store_pages(
    store: Store,
    streams: Sequence[bytes] | None,
    start: ID,
    end: ID,
    page_nodes: int,
    page_bytes: int,
) -> Iterator[tuple[bytes, list[tuple[ID, bytes]], ID]]:
    """``(stream, page of nodes, last ID read)`` for the selected streams, a page at a time."""
    if page_nodes < 1:
        raise ValueError("page_nodes must be at least 1")

    def plan(view: StoreView) -> list[tuple[bytes, ID]]:
        chosen = select_streams(view.keys(), streams)
        out = []
        for key in chosen:
            state = view.state(key)
            if state is not None and state.length:
                out.append((key, min(end, state.last_id)))
        return out

    for key, last in store.view(plan):
        cursor: ID | None = start
        while cursor is not None and cursor <= last:
            at = cursor
            read = partial(
                _store_page,
                key=key,
                start=at,
                end=last,
                page_nodes=page_nodes,
                page_bytes=page_bytes,
            )
            nodes, cursor = store.view(read)
            yield key, nodes, last


def batches_from_store(
    store: Store,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    page_nodes: int = PAGE_NODES,
    page_bytes: int = PAGE_BYTES,
) -> Iterator[tuple[bytes, Columns]]:
    """The selected entries of ``store`` as ``(stream, batch)`` pairs, a batch per page of
    nodes (see the module docstring); the selection is checked before the first batch."""
    for key, nodes, last in _store_pages(store, streams, start, end, page_nodes, page_bytes):
        for cols in iter_columns(nodes, start, last, batch_entries=1 << 30):
            yield key, cols


def entries_from_store(
    store: Store,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    page_nodes: int = PAGE_NODES,
    page_bytes: int = PAGE_BYTES,
) -> Iterator[ReplayEntry]:
    """The selected entries of ``store``, one by one (see the module docstring)."""
    for key, cols in batches_from_store(
        store, streams, start, end, page_nodes=page_nodes, page_bytes=page_bytes
    ):
        yield from entries_from_columns(key, cols)


def runs_from_store(
    store: Store,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    page_nodes: int = PAGE_NODES,
    page_bytes: int = PAGE_BYTES,
) -> Iterator[ReplayEntry | NodeRun]:
    """:func:`entries_from_store`, but a node whose entries are all selected and live comes
    whole, as a :class:`NodeRun` (a store target that keeps the IDs copies it unchanged)."""
    for key, nodes, last in _store_pages(store, streams, start, end, page_nodes, page_bytes):
        yield from _page_items(key, nodes, start, last, True)


# -- an RDB dump -------------------------------------------------------------------------------


def _rdb_pages(
    path: str,
    streams: Sequence[bytes] | None,
    start: ID,
    end: ID,
    db: int,
    page_nodes: int,
    index: Iterable[RDBStream] | None,
) -> Iterator[tuple[bytes, list[tuple[ID, bytes]], ID]]:
    """``(stream, page of nodes, last ID read)`` for the selected streams of the dump."""
    if page_nodes < 1:
        raise ValueError("page_nodes must be at least 1")
    found = index_rdb(path) if index is None else index
    streams_of_db = {s.key: s for s in found if s.db == db}
    where = f" in database {db} of {path}"
    for key in select_streams(streams_of_db, streams, where=where):
        entry = streams_of_db[key]
        last = min(end, entry.state.last_id)
        spans = entry.nodes
        if not spans or start > last:
            continue
        masters = [span.master_id for span in spans]
        first = max(0, bisect.bisect_right(masters, start) - 1)  # the node that may hold start
        stop = bisect.bisect_right(masters, last)  # nodes past last hold nothing of the range
        for i in range(first, stop, page_nodes):
            count = min(page_nodes, stop - i)
            after = masters[i - 1] if i else None
            yield key, list(read_rdb_nodes(path, spans[i].offset or 0, count, after=after)), last


def batches_from_rdb(
    path: str,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    db: int = 0,
    page_nodes: int = PAGE_NODES,
    index: Iterable[RDBStream] | None = None,
) -> Iterator[tuple[bytes, Columns]]:
    """The selected entries of the streams of database ``db`` of the RDB file ``path``, as
    ``(stream, batch)`` pairs.  The file is indexed (read whole, its checksum checked) before
    the first batch, unless ``index`` gives :func:`rstore.index_rdb`'s answer already; each
    node read is checked in depth (:class:`rstore.CorruptRDBError` at the damaged byte)."""
    for key, nodes, last in _rdb_pages(path, streams, start, end, db, page_nodes, index):
        for cols in iter_columns(nodes, start, last, batch_entries=1 << 30):
            yield key, cols


def entries_from_rdb(
    path: str,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    db: int = 0,
    page_nodes: int = PAGE_NODES,
    index: Iterable[RDBStream] | None = None,
) -> Iterator[ReplayEntry]:
    """The selected entries of an RDB file, one by one (see :func:`batches_from_rdb`)."""
    for key, cols in batches_from_rdb(
        path, streams, start, end, db=db, page_nodes=page_nodes, index=index
    ):
        yield from entries_from_columns(key, cols)


def runs_from_rdb(
    path: str,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    db: int = 0,
    page_nodes: int = PAGE_NODES,
    index: Iterable[RDBStream] | None = None,
) -> Iterator[ReplayEntry | NodeRun]:
    """:func:`entries_from_rdb`, but a node whose entries are all selected and live comes
    whole, as a :class:`NodeRun`."""
    for key, nodes, last in _rdb_pages(path, streams, start, end, db, page_nodes, index):
        yield from _page_items(key, nodes, start, last, True)


# -- a JSONL file ------------------------------------------------------------------------------


def entries_from_jsonl(
    lines: Iterable[bytes | str],
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    name: str | None = None,
) -> Iterator[ReplayEntry]:
    """The selected entries of a file in the envelope (a binary file, ``sys.stdin.buffer`` or
    any iterable of lines), in file order; a malformed line raises
    :class:`rstore.EnvelopeError` naming it (``<name> line <n>: ...``)."""
    wanted: Callable[[bytes], bool] | None = None
    if streams:
        names = {item for item in streams if not is_glob(item)}
        globs = [item for item in streams if is_glob(item)]
        seen: dict[bytes, bool] = {}

        def wanted(stream: bytes) -> bool:
            found = seen.get(stream)
            if found is None:
                found = stream in names or any(key_matches(g, stream) for g in globs)
                seen[stream] = found
            return found

    for entry in decode_lines(lines, name=name):
        if start <= entry[1] <= end and (wanted is None or wanted(entry[0])):
            yield entry


#: Bytes read at a time from a JSONL file (then cut after the block's last newline).
JSONL_BLOCK = 4 << 20


def jsonl_blocks(source: BinaryIO, size: int = JSONL_BLOCK) -> Iterator[bytes]:
    """Blocks of whole lines of a binary file (``sys.stdin.buffer`` too): up to about ``size``
    bytes each, as they can be read (a pipe gives what is there), each ending after a newline
    -- but the last, when the file does not end with one."""
    read = getattr(source, "read1", source.read)
    rest = b""
    while chunk := read(size):
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            rest += chunk
            continue
        if rest:
            yield b"".join((rest, memoryview(chunk)[:cut]))
        else:
            yield chunk if cut == len(chunk) else chunk[:cut]
        rest = chunk[cut:]
    if rest:
        yield rest


def _node_runs(stream: bytes, built: list[BuiltNode]) -> Iterator[NodeRun]:
    for b in built:
        yield NodeRun(stream, b.master_id, b.node, b.facts)


def runs_from_jsonl(
    source: BinaryIO,
    *,
    name: str | None = None,
    node_max_bytes: int = 4096,
    node_max_entries: int = 100,
) -> Iterator[NodeRun | ReplayEntry]:
    """The entries of a file in the envelope (a binary file, ``sys.stdin.buffer``), in file
    order, as whole nodes: each stream's consecutive entries built into nodes by XADD's rules
    with the target's node limits (:class:`rstore.NodeBuilder`), given as
    :class:`NodeRun` -- what a store target takes unchanged (``rstore import``); an entry no
    node can take after the ones before it (an ID not above the last, ``0-0``) comes alone,
    for the replay to apply its ID policy.  A malformed line raises
    :class:`rstore.EnvelopeError` naming it (``<name> line <n>: ...``) once the entries before
    it were given.  No selection: :func:`entries_from_jsonl` selects."""
    builder = NodeBuilder(node_max_bytes, node_max_entries)
    current: bytes | None = None
    for run in decode_blocks(jsonl_blocks(source), name=name):
        if run.stream != current:
            if current is not None:
                yield from _node_runs(current, builder.finish())
            builder = NodeBuilder(node_max_bytes, node_max_entries)
            current = run.stream
        i = 0
        while True:
            i = builder.add_columns(run.cols, i)
            yield from _node_runs(run.stream, builder.take())
            if i >= run.cols.count:
                break
            yield from _node_runs(run.stream, builder.finish())  # in file order
            entry_id, flat = run.cols.entry(i)
            yield run.stream, entry_id, flat
            i += 1
    if current is not None:
        yield from _node_runs(current, builder.finish())


# -- field filters -----------------------------------------------------------------------------


def field_filter(conditions: Iterable[bytes]) -> Callable[[Sequence[bytes]], bool]:
    """A test of an entry's ``[field, value, ...]`` list from ``field=glob`` conditions
    (``--where``): it passes when, for every condition, one of the entry's fields of that name
    has a value the glob matches (:func:`rstore.key_matches`).  The name ends at the first
    ``=``; :class:`ValueError` for a condition without one."""
    parsed: list[tuple[bytes, bytes]] = []
    for condition in conditions:
        name, sep, pattern = condition.partition(b"=")
        if not sep:
            raise ValueError(f"{condition.decode('utf-8', 'backslashreplace')!r} is not FIELD=GLOB")
        parsed.append((name, pattern))

    def keep(flat: Sequence[bytes]) -> bool:
        for name, pattern in parsed:
            for i in range(0, len(flat) - 1, 2):
                if flat[i] == name and key_matches(pattern, flat[i + 1]):
                    break
            else:
                return False
        return True

    return keep
