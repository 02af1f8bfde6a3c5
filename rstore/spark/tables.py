"""The consumer-group state of a store or of RDB dumps as small tables (option ``table``):

* ``streams``: one row per stream, as ``XINFO STREAM`` answers (first and last entry by ID);
* ``groups``: one row per group, as ``XINFO GROUPS``;
* ``consumers``: one row per consumer, with the absolute times of ``XINFO STREAM FULL``
  (``seen_time_ms``, ``active_time_ms``: a file has no "now" to make XINFO CONSUMERS's idle
  times from);
* ``pending``: one row per pending entry, as XPENDING's extended form with the absolute
  delivery time of ``XINFO STREAM FULL``.

Pure rstore + pyarrow (no pyspark): one task per source reads it whole.  The schemas are in
:data:`rstore.spark.options.TABLE_SCHEMAS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

import rstore
from rstore.spark.options import ReadOptions
from rstore.spark.plan import ID, Part, wanted

__all__ = ["plan_table", "read_table", "table_rows"]

MIN_ID: ID = (0, 0)
MAX_ID: ID = (2**64 - 1, 2**64 - 1)

Row = tuple[Any, ...]


def plan_table(opts: ReadOptions) -> list[Part]:
    """One partition per source: the store, or each RDB file."""
    if opts.kind == "store":
        return [Part("store", opts.path, whole=True)]
    return [Part("rdb", f, whole=True) for f in opts.files]


def _id(i: ID | None) -> str | None:
    return None if i is None else f"{i[0]}-{i[1]}"


def _text(name: bytes, what: str) -> str:
    try:
        return name.decode()
    except UnicodeDecodeError:
        raise ValueError(
            f"{what} {name!r} is not UTF-8 text (the tables hold names as text)"
        ) from None


def _edge_ids(nodes: Iterable[tuple[ID, bytes]]) -> tuple[ID | None, ID | None]:
    """The first and last live entry IDs of ``nodes``."""
    first: ID | None = None
    last: ID | None = None
    for cols in rstore.iter_columns(nodes, MIN_ID, MAX_ID):
        ids = bytes(cols.id_data)
        offs = memoryview(cols.id_offsets).cast("i")
        if first is None:
            first = _parse(ids[offs[0] : offs[1]])
        last = _parse(ids[offs[cols.count - 1] : offs[cols.count]])
    return first, last


def _parse(raw: bytes) -> ID:
    ms, seq = raw.split(b"-")
    return int(ms), int(seq)


def _stream_row(
    key: bytes, state: rstore.StreamState, nodes: int, first: ID | None, last: ID | None
) -> Row:
    return (
        _text(key, "stream name"),
        state.length,
        nodes,
        _id(state.last_id),
        _id(state.max_deleted_entry_id),
        state.entries_added,
        _id(state.first_id),
        state.group_count,
        _id(first),
        _id(last),
    )


def _store_streams(opts: ReadOptions) -> list[Row]:
    def collect(view: rstore.StoreView) -> list[Row]:
        rows = []
        for key in view.keys(opts.pattern):
            state = view.state(key)
            if state is None or not wanted(opts, key):
                continue
            spans = view.node_index(key)
            first = last = None
            if spans:
                first = _edge_ids(list(view.nodes(key, MIN_ID, spans[0].master_id))[:1])[0]
                last = _edge_ids(list(view.nodes(key, spans[-1].master_id, MAX_ID))[-1:])[1]
            rows.append(_stream_row(key, state, len(spans), first, last))
        return rows

    with rstore.Store(opts.path, create=False) as store:
        return store.view(collect)


def _rdb_streams(path: str, opts: ReadOptions) -> list[Row]:
    rows = []
    for s in rstore.index_rdb(path):
        if s.db != opts.db or not wanted(opts, s.key):
            continue
        first = last = None
        if s.nodes:
            head = rstore.read_rdb_nodes(path, s.nodes[0].offset or 0, 1)
            after = s.nodes[-2].master_id if len(s.nodes) > 1 else None
            tail = rstore.read_rdb_nodes(path, s.nodes[-1].offset or 0, 1, after=after)
            first = _edge_ids(head)[0]
            last = _edge_ids(tail)[1]
        rows.append(_stream_row(s.key, s.state, len(s.nodes), first, last))
    return rows


def _infos(part: Part, opts: ReadOptions) -> list[rstore.StreamInfo]:
    if part.kind == "store":
        with rstore.Store(part.path, create=False) as store:
            infos = store.inspect(pending=opts.table == "pending")
    else:
        summary = rstore.inspect_rdb(part.path, pending=opts.table == "pending")
        infos = [s for s in summary.streams if s.db == opts.db]
    return [s for s in infos if wanted(opts, s.key)]


def _group_rows(infos: list[rstore.StreamInfo], table: str) -> Iterator[Row]:
    for info in infos:
        stream = _text(info.key, "stream name")
        for g in info.groups:
            group = _text(g.state.name, "group name")
            if table == "groups":
                yield (
                    stream,
                    group,
                    len(g.consumers),
                    g.state.pel_count,
                    _id(g.state.last_id),
                    g.entries_read,
                    g.lag,
                )
            elif table == "consumers":
                for c in g.consumers:
                    yield (
                        stream,
                        group,
                        _text(c.state.name, "consumer name"),
                        c.state.pel_count,
                        c.state.seen_time_ms,
                        c.state.active_time_ms,
                    )
            else:
                for p in g.pending:
                    owner = None if p.consumer is None else _text(p.consumer, "consumer name")
                    yield (stream, group, _id(p.id), owner, p.delivery_time_ms, p.delivery_count)


def table_rows(part: Part, opts: ReadOptions) -> list[Row]:
    """The rows of table ``opts.table`` from one source, in the order of TABLE_SCHEMAS."""
    if opts.table == "streams":
        if part.kind == "store":
            return _store_streams(opts)
        return _rdb_streams(part.path, opts)
    return list(_group_rows(_infos(part, opts), opts.table))


def read_table(part: Part, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one source as one record batch typed by ``schema`` (none when empty)."""
    rows = table_rows(part, opts)
    if not rows:
        return
    columns = [
        pa.array([row[i] for row in rows], type=field.type) for i, field in enumerate(schema)
    ]
    yield pa.RecordBatch.from_arrays(columns, schema=schema)
