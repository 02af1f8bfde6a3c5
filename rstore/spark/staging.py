"""Rows to append, between Spark's tasks and the commit: checked, normalised and staged as Arrow.

A task turns each Arrow batch Spark gives it into the *staged* layout -- ``stream`` and ``id`` as
binary, ``fields`` and ``values`` as two lists of binary with the same offsets (a map and a list
of pairs both become this; order and duplicate names are kept) -- and appends it to one Arrow IPC
file of its own.  The commit reads the files back, batch by batch, as the ``(stream, id,
[field, value, ...])`` entries :meth:`rstore.Store.append_entries` takes: nothing is held but
the batch being read.  Pure pyarrow: no Spark here, so all of it is tested without a session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import length_hint
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "STAGED_SCHEMA",
    "Layout",
    "StagedEntries",
    "check_columns",
    "entries_of",
    "stage",
    "to_staged",
]

STAGED_SCHEMA = pa.schema(
    [
        pa.field("stream", pa.binary(), nullable=False),
        pa.field("id", pa.binary()),
        pa.field("fields", pa.list_(pa.field("item", pa.binary(), nullable=False)), False),
        pa.field("values", pa.list_(pa.field("item", pa.binary(), nullable=False)), False),
    ]
)

_TEXT = ("string", "binary")
ACCEPTED = (
    'columns `stream` string, optional `id` string (null or "*": an automatic ID), and '
    "`fields` map<string,string|binary> or array<struct<field:string,value:string|binary>>"
)
IGNORED = ("ms", "seq")  # what the rstore reader adds beside `id`: derived from it, not written


@dataclass(frozen=True)
class Layout:
    """Where the columns are in the batches Spark gives (plain values: pickled to tasks)."""

    stream: int
    id: int | None
    fields: int


def check_columns(columns: Sequence[tuple[str, str]]) -> Layout:
    """``columns`` as ``(name, simple type string)`` (Spark's ``simpleString``); the layout, or
    ``ValueError`` with one line saying what is accepted."""
    names = [n for n, _ in columns]
    types = dict(columns)

    def refuse(why: str) -> ValueError:
        return ValueError(f"rstore: cannot write {why}; the writer takes {ACCEPTED}")

    for need in ("stream", "fields"):
        if need not in types:
            raise refuse(f"a DataFrame without a `{need}` column (columns: {', '.join(names)})")
    extra = [n for n in names if n not in ("stream", "id", "fields", *IGNORED)]
    if extra:
        raise refuse(f"the column(s) {', '.join(extra)}")
    if types["stream"] not in _TEXT:
        raise refuse(f"`stream` of type {types['stream']}")
    if "id" in types and types["id"] not in _TEXT:
        raise refuse(f"`id` of type {types['id']}")
    ftype = types["fields"]
    ok_map = ftype in {f"map<{k},{v}>" for k in _TEXT for v in _TEXT}
    ok_pairs = ftype in {f"array<struct<field:{k},value:{v}>>" for k in _TEXT for v in _TEXT}
    if not (ok_map or ok_pairs):
        raise refuse(f"`fields` of type {ftype}")
    return Layout(
        names.index("stream"), names.index("id") if "id" in types else None, names.index("fields")
    )


def _binary(arr: pa.Array) -> pa.Array:
    return arr if pa.types.is_binary(arr.type) else arr.cast(pa.binary())


def _pairs(arr: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """``(lengths, offsets from 0, names, values)`` of a map or list-of-pairs column (slices
    honoured)."""
    if isinstance(arr, pa.MapArray):  # a map's keys/items ignore slicing: view it as a list
        t = arr.type
        arr = arr.view(pa.list_(pa.struct([t.key_field, t.item_field])))
    pairs = arr.flatten()  # the pairs of the rows in this (possibly sliced) array
    names, values = pairs.flatten()
    offsets = arr.offsets
    if offsets[0].as_py():
        offsets = pc.subtract(offsets, offsets[0])
    return pc.list_value_length(arr), offsets, names, values


def to_staged(batch: pa.RecordBatch, layout: Layout, where: str) -> pa.RecordBatch:
    """One of Spark's batches in the staged layout; ``ValueError`` naming the first row that
    cannot be an entry (``where`` says which task, for the message)."""
    stream = batch.column(layout.stream)
    fields = batch.column(layout.fields)
    n = batch.num_rows
    ids = pa.nulls(n, pa.binary()) if layout.id is None else _binary(batch.column(layout.id))
    for name, col in (("stream", stream), ("fields", fields)):
        if col.null_count:
            row = pc.index(pc.is_null(col), True).as_py()
            raise ValueError(f"rstore: {where}, row {row}: `{name}` is null")
    lengths, offsets, names, values = _pairs(fields)
    if values.null_count or names.null_count:
        bad = pc.is_null(values) if values.null_count else pc.is_null(names)
        pair = pc.index(bad, True).as_py()
        row = pc.index(pc.greater(offsets, pair), True).as_py() - 1
        what = "a value" if values.null_count else "a field name"
        raise ValueError(f"rstore: {where}, row {row}: {what} in `fields` is null")
    empty = pc.equal(lengths, 0)
    if pc.any(empty).as_py():
        row = pc.index(empty, True).as_py()
        raise ValueError(f"rstore: {where}, row {row}: `fields` is empty (XADD needs a pair)")
    names, values = _binary(names), _binary(values)
    return pa.RecordBatch.from_arrays(
        [
            _binary(stream),
            ids,
            pa.ListArray.from_arrays(offsets, names),
            pa.ListArray.from_arrays(offsets, values),
        ],
        schema=STAGED_SCHEMA,
    )


def stage(batches: Iterator[pa.RecordBatch], layout: Layout, path: str, where: str) -> int:
    """Write ``batches`` (Spark's) to ``path`` in the staged layout; the number of rows.  No
    file is made for zero rows (an empty partition gives no batch at all)."""
    rows = 0
    writer: Any = None
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            staged = to_staged(batch, layout, where)
            if writer is None:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                writer = pa.ipc.new_file(path, STAGED_SCHEMA)
            writer.write_batch(staged)
            rows += staged.num_rows
    except BaseException:
        if writer is not None:
            writer.close()
            os.unlink(path)
        raise
    if writer is not None:
        writer.close()
    return rows


def entries_of(batch: pa.RecordBatch) -> tuple[int, Iterator[tuple[Any, Any, Any]], Any]:
    """``(rows, entries, cursor)`` of a staged batch: the entries as ``append_entries`` takes
    them, and an iterator whose remaining length tells how many were taken."""
    streams = batch.column(0).to_pylist()
    ids = batch.column(1).to_pylist()
    fcol = batch.column(2)
    names = fcol.values.to_pylist()
    values = batch.column(3).values.to_pylist()
    flat: list[Any] = [None] * (2 * len(names))
    flat[0::2] = names
    flat[1::2] = values
    bounds = [2 * o for o in fcol.offsets.to_pylist()]
    cursor = iter(streams)
    entries = zip(cursor, ids, map(flat.__getitem__, map(slice, bounds, bounds[1:])))
    return len(streams), entries, cursor


class StagedEntries:
    """The entries of staged files, in the order given (by partition, then row), read one
    batch at a time.  Re-iterable (each pass starts over), as ``append_entries`` may need.

    After a refused entry, :meth:`position` names it: ``(file index, row in file)``."""

    def __init__(self, files: Sequence[str]) -> None:
        self.files = list(files)
        self._file = -1
        self._row0 = 0
        self._rows = 0
        self._cursor: Any = None

    def __iter__(self) -> Iterator[tuple[Any, Any, Any]]:
        for i, path in enumerate(self.files):
            self._file, self._row0 = i, 0
            with pa.memory_map(path) as source:
                reader = pa.ipc.open_file(source)
                for k in range(reader.num_record_batches):
                    rows, entries, self._cursor = entries_of(reader.get_batch(k))
                    self._rows = rows
                    yield from entries
                    self._row0 += rows

    def position(self) -> tuple[int, int]:
        """Where the entry taken last lies: ``(file index, row in that file)``."""
        taken = self._rows - length_hint(self._cursor) if self._cursor is not None else 0
        return self._file, self._row0 + taken - 1
