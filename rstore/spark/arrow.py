"""Reading a planned partition as Arrow record batches: nodes decoded by
:func:`rstore.iter_columns` (in C) and wrapped as Arrow arrays without copying the buffers.
Needs pyarrow, not pyspark: runs in Spark's executors, and in tests.

Batches are built with exactly the Arrow schema Spark asks for (its types and nullability), as
Spark 4.3 checks them.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator

import pyarrow as pa

import rstore
from rstore.spark.options import ReadOptions
from rstore.spark.plan import ID, Part, Slice, wanted

__all__ = ["check_host", "columns_to_batch", "read_part", "read_partition"]

BATCH_ENTRIES = 65536


def _strings(typ: pa.DataType, n: int, offsets: bytearray, data: bytearray) -> pa.Array:
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


#: Offsets 0, step, 2 * step, ... by step, kept per executor process: each batch's ``stream``
#: column uses the first n + 1 of them instead of building its own (a quarter of the Python
#: time per batch otherwise).  Never written after creation (Arrow buffers point into them).
_PROGRESSIONS: dict[int, array[int]] = {}


def _progression(step: int, n: int) -> array[int]:
    have = _PROGRESSIONS.get(step)
    if have is None or len(have) < n + 1:
        size = max(n + 1, 2 * len(have) if have is not None else 0)
        have = array("i", range(0, size * step, step)) if step else array("i", bytes(4 * size))
        _PROGRESSIONS[step] = have
    return have


def _repeated(typ: pa.DataType, value: bytes, n: int) -> pa.Array:
    offsets = pa.py_buffer(_progression(len(value), n))
    return pa.Array.from_buffers(typ, n, [None, offsets, pa.py_buffer(value * n)])


def _check_text(arr: pa.Array, stream: bytes, what: str, data: bytes | bytearray = b"") -> None:
    """Raise unless every item of ``arr`` is UTF-8 (``data``: its bytes, when known: ASCII
    needs no further look, the common case)."""
    if data and data.isascii():
        return
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        raise ValueError(
            f"stream {stream!r} holds a {what} that is not UTF-8 text; read it with "
            f"option {'values' if what == 'value' else 'names'}=binary"
        ) from None


def columns_to_batch(cols: rstore.Columns, stream: bytes, schema: pa.Schema) -> pa.RecordBatch:
    """One batch of the entries table (``stream, id, ms, seq, fields``) from ``cols``, typed by
    ``schema`` (``fields`` a map or a list of structs, values string or binary)."""
    n = cols.count
    stream_type = schema.field("stream").type
    stream_col = _repeated(stream_type, stream, n)
    if n and pa.types.is_string(stream_type):
        _check_text(stream_col.slice(0, 1), stream, "stream name")
    ids = _strings(schema.field("id").type, n, cols.id_offsets, cols.id_data)
    ms = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.ms)])
    seq = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.seq)])
    fields_type = schema.field("fields").type
    pairs = cols.pairs
    if isinstance(fields_type, pa.MapType):
        key_type, value_type = fields_type.key_type, fields_type.item_type
        struct_type = pa.struct([fields_type.key_field, fields_type.item_field])
    else:
        struct_type = fields_type.value_type
        key_type, value_type = struct_type.field(0).type, struct_type.field(1).type
    keys = _strings(key_type, pairs, cols.key_offsets, cols.key_data)
    values = _strings(value_type, pairs, cols.value_offsets, cols.value_data)
    if pa.types.is_string(key_type):
        _check_text(keys, stream, "field name", cols.key_data)
    if pa.types.is_string(value_type):
        _check_text(values, stream, "value", cols.value_data)
    children = pa.StructArray.from_arrays([keys, values], fields=list(struct_type))
    fields = pa.Array.from_buffers(
        fields_type, n, [None, pa.py_buffer(cols.entry_offsets)], children=[children]
    )
    return pa.RecordBatch.from_arrays([stream_col, ids, ms, seq, fields], schema=schema)


def _store_slices(
    path: str, slices: tuple[Slice, ...]
) -> Iterator[tuple[Slice, Iterable[tuple[ID, bytes]]]]:
    with rstore.Store(path, create=False) as store:
        for s in slices:
            # copied out in one short read transaction; decoded after it ended
            def copy(view: rstore.StoreView, s: Slice = s) -> list[tuple[ID, bytes]]:
                return list(view.nodes(s.stream, s.lo, s.hi))

            yield s, store.view(copy)


def _rdb_slices(
    path: str, slices: tuple[Slice, ...]
) -> Iterator[tuple[Slice, Iterable[tuple[ID, bytes]]]]:
    for s in slices:
        if s.offset is None:
            raise ValueError("an RDB slice without a file offset (a plan from another source?)")
        yield s, rstore.read_rdb_nodes(path, s.offset, s.count, after=s.after)


def _whole_file(path: str, opts: ReadOptions) -> Iterator[tuple[Slice, Iterable[tuple[ID, bytes]]]]:
    """Every wanted stream of a file, in one pass over it (no index first)."""

    def chosen(db: int, key: bytes) -> bool:
        return db == opts.db and wanted(opts, key)

    for s, nodes in rstore.read_rdb_streams(path, chosen):
        if not nodes:
            continue  # not chosen, or empty
        yield Slice(s.key, opts.start, min(opts.end, s.state.last_id)), nodes


def read_part(part: Part, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The entries of one partition as record batches of at most about 64k entries."""
    if part.kind == "store":
        source = _store_slices(part.path, part.slices)
    elif part.whole:
        source = _whole_file(part.path, opts)
    else:
        source = _rdb_slices(part.path, part.slices)
    for s, nodes in source:
        for cols in rstore.iter_columns(
            nodes, s.lo, s.hi, batch_entries=BATCH_ENTRIES, dedupe=opts.dedupe
        ):
            yield columns_to_batch(cols, s.stream, schema)


def check_host(part: Part) -> None:
    """A store is read on its own host: LMDB is single-host (``docs/spark.md``, cluster)."""
    here = os.uname().nodename
    if part.kind == "store" and part.host != here:
        raise RuntimeError(
            f"the rstore store {part.path} was planned on host {part.host} but this task runs "
            f"on {here}: a store is read on its own host (local mode); on a cluster, read RDB "
            "files from storage every executor sees"
        )


def read_partition(
    part: Part | None, opts: ReadOptions, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """The record batches of one partition of any table (none for ``None``: Spark's
    placeholder partition of an empty plan)."""
    if part is None:
        return
    check_host(part)
    if opts.table == "entries":
        yield from read_part(part, opts, schema)
    else:
        from rstore.spark.tables import read_table  # noqa: PLC0415 - tables imports plan

        yield from read_table(part, opts, schema)
