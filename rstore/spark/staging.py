"""Rows to append, between Spark's tasks and the commit: checked, normalised, sorted and staged.

A task turns each Arrow batch Spark gives it into the *staged* layout -- ``stream`` and ``id`` as
binary, ``fields`` and ``values`` as two lists of binary with the same offsets (a map and a list
of pairs both become this; order and duplicate names are kept), the row's place in its partition,
and an explicit ID's sort key (``ms``, ``seq``, parsed as XADD parses it) -- and stages it in two
Arrow IPC files of its own:

* the rows without an ID (null or ``*``), in the task's order;
* the rows with an explicit ID, sorted by stream, ID and row.  They are held in memory up to a
  limit (:data:`SORT_BUFFER_BYTES`), sorted and spilled as a sorted run when it is passed, and
  the runs merged into the one file at the end of the task (:mod:`rstore.spark.runs`).

The commit merges the tasks' sorted files and appends (:class:`rstore.spark.runs.StagedEntries`).
Pure pyarrow: no Spark here, so all of it is tested without a session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

import rstore
from rstore.spark.runs import BATCH_BYTES, merge, write_rows

__all__ = [
    "SORT_BUFFER_BYTES",
    "STAGED_SCHEMA",
    "Layout",
    "StagedFiles",
    "check_columns",
    "stage",
    "to_staged",
]

_BINARY_LIST = pa.list_(pa.field("item", pa.binary(), nullable=False))
STAGED_SCHEMA = pa.schema(
    [
        pa.field("stream", pa.binary(), nullable=False),
        pa.field("id", pa.binary()),
        pa.field("fields", _BINARY_LIST, False),
        pa.field("values", _BINARY_LIST, False),
        pa.field("row", pa.int64(), nullable=False),  # the row's place in its partition
        pa.field("ms", pa.uint64()),  # an explicit ID's: null without one (0 when invalid)
        pa.field("seq", pa.uint64()),  # null without an explicit ID, and for "<ms>-*"
    ]
)
#: Rows with explicit IDs a task holds (as staged Arrow data) before it sorts and spills them.
SORT_BUFFER_BYTES = 64 * 1024 * 1024

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


#: The common ``<ms>-<seq>`` form, read in Arrow as :func:`rstore.parse_xadd_id` reads it
#: without its general path (up to 19 digits each always fit in 64 bits); every other ID goes
#: through ``parse_xadd_id`` itself.
_PLAIN_ID = r"^(?P<ms>[0-9]{1,19})-(?P<seq>[0-9]{1,19})$"


def _id_keys(ids: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The sort key ``(ms, seq)`` of each ID, as XADD parses it: null for no ID (null or
    ``*``), seq null for ``<ms>-*``, ``(0, 0)`` for an ID XADD refuses (the commit then fails
    with XADD's line, naming the row)."""
    n = len(ids)
    if ids.null_count == n:
        return pa.nulls(n, pa.uint64()), pa.nulls(n, pa.uint64())
    plain = pc.extract_regex(ids, _PLAIN_ID)
    matched = pc.fill_null(pc.is_valid(plain), False)

    def number(part: str) -> pa.Array:  # 0 where the ID is not plain (replaced below)
        digits = pc.if_else(matched, pc.struct_field(plain, part), b"0")
        return pc.cast(pc.cast(digits, pa.string()), pa.uint64())

    ms, seq = number("ms"), number("seq")
    others = pc.and_(pc.is_valid(ids), pc.invert(matched))
    if not pc.any(others).as_py():  # (null where there is no ID)
        return pc.if_else(matched, ms, None), pc.if_else(matched, seq, None)
    ms_list, seq_list = ms.to_pylist(), seq.to_pylist()
    raw = ids.to_pylist()
    for k in pc.indices_nonzero(pc.invert(matched)).to_pylist():
        key: tuple[int | None, int | None] = (None, None)
        if raw[k] is not None and raw[k] != b"*":
            try:
                key = rstore.parse_xadd_id(raw[k])
            except rstore.ResponseError:
                key = (0, 0)
        ms_list[k], seq_list[k] = key
    return pa.array(ms_list, pa.uint64()), pa.array(seq_list, pa.uint64())


def to_staged(
    batch: pa.RecordBatch, layout: Layout, where: str, first_row: int = 0
) -> pa.RecordBatch:
    """One of Spark's batches in the staged layout, its rows numbered from ``first_row``;
    ``ValueError`` naming the first row that cannot be an entry (``where`` says which task,
    for the message)."""
    stream = batch.column(layout.stream)
    fields = batch.column(layout.fields)
    n = batch.num_rows
    ids = pa.nulls(n, pa.binary()) if layout.id is None else _binary(batch.column(layout.id))
    for name, col in (("stream", stream), ("fields", fields)):
        if col.null_count:
            row = first_row + pc.index(pc.is_null(col), True).as_py()
            raise ValueError(f"rstore: {where}, row {row}: `{name}` is null")
    lengths, offsets, names, values = _pairs(fields)
    if values.null_count or names.null_count:
        bad = pc.is_null(values) if values.null_count else pc.is_null(names)
        pair = pc.index(bad, True).as_py()
        row = first_row + pc.index(pc.greater(offsets, pair), True).as_py() - 1
        what = "a value" if values.null_count else "a field name"
        raise ValueError(f"rstore: {where}, row {row}: {what} in `fields` is null")
    empty = pc.equal(lengths, 0)
    if pc.any(empty).as_py():
        row = first_row + pc.index(empty, True).as_py()
        raise ValueError(f"rstore: {where}, row {row}: `fields` is empty (XADD needs a pair)")
    names, values = _binary(names), _binary(values)
    ms, seq = _id_keys(ids)
    return pa.RecordBatch.from_arrays(
        [
            _binary(stream),
            ids,
            pa.ListArray.from_arrays(offsets, names),
            pa.ListArray.from_arrays(offsets, values),
            pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n), start=first_row - 1),
            ms,
            seq,
        ],
        schema=STAGED_SCHEMA,
    )


def _sort_keys(table: pa.Table) -> pa.Table:
    """The merge key of :mod:`rstore.spark.runs` as columns to sort on: stream, ms, then a
    ``<ms>-*`` ID after every seq of its ms, seq, row (unique: no two rows tie)."""
    seq = table.column("seq")
    return pa.table(
        {
            "stream": table.column("stream"),
            "ms": table.column("ms"),
            "star": pc.is_null(seq),
            "seq": pc.fill_null(seq, 0),
            "row": table.column("row"),
        }
    )


class StagedFiles(NamedTuple):
    """What a task staged: its rows, and its two files (``None`` where it had no such row)."""

    rows: int
    in_order: str | None  # rows without an ID, in the task's order
    by_id: str | None  # rows with an explicit ID, sorted by stream, ID and row


class _InOrder:
    """The file of rows without IDs, made on its first row."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.writer: Any = None

    def add(self, batch: pa.RecordBatch) -> None:
        if self.writer is None:
            self.writer = pa.ipc.new_file(self.path, STAGED_SCHEMA)
        self.writer.write_batch(batch)

    def finish(self) -> str | None:
        if self.writer is None:
            return None
        self.writer.close()
        self.writer = None
        return self.path


class _ById:
    """The rows with explicit IDs, sorted in bounded memory: held up to ``limit`` bytes, then
    sorted and spilled as a run beside ``path``; at the end the runs are merged into ``path``."""

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        self.limit = limit
        self.held: list[pa.RecordBatch] = []
        self.held_bytes = 0
        self.runs: list[str] = []

    def add(self, batch: pa.RecordBatch) -> None:
        self.held.append(batch)
        self.held_bytes += batch.nbytes
        if self.held_bytes >= self.limit:
            self._spill(f"{self.path}.run-{len(self.runs)}")

    def _spill(self, path: str) -> None:
        table = pa.Table.from_batches(self.held, STAGED_SCHEMA)
        keys = _sort_keys(table)
        table = table.take(
            pc.sort_indices(keys, sort_keys=[(k, "ascending") for k in keys.column_names])
        )
        rows_per_batch = max(1, min(65536, BATCH_BYTES * table.num_rows // max(1, table.nbytes)))
        with pa.ipc.new_file(path, STAGED_SCHEMA) as writer:
            for batch in table.to_batches(max_chunksize=rows_per_batch):
                writer.write_batch(batch)
        self.runs.append(path)
        self.held, self.held_bytes = [], 0

    def finish(self) -> str | None:
        if not self.runs:
            if not self.held:
                return None
            self._spill(self.path)
            return self.path
        if self.held:
            self._spill(f"{self.path}.run-{len(self.runs)}")
        write_rows(merge([(0, run) for run in self.runs]), self.path, STAGED_SCHEMA)
        for run in self.runs:
            os.unlink(run)
        return self.path


def stage(
    batches: Iterator[pa.RecordBatch],
    layout: Layout,
    path: str,
    where: str,
    sort_buffer: int = SORT_BUFFER_BYTES,
) -> StagedFiles:
    """Stage ``batches`` (Spark's) as ``<path>.arrow`` (rows without an ID, in order) and
    ``<path>.ids.arrow`` (rows with an explicit ID, sorted), each made only when it has rows,
    holding at most about ``sort_buffer`` bytes of rows in memory.  On an error no file is
    left behind."""
    rows = 0
    in_order = _InOrder(f"{path}.arrow")
    by_id = _ById(f"{path}.ids.arrow", sort_buffer)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            staged = to_staged(batch, layout, where, rows)
            rows += staged.num_rows
            explicit = pc.is_valid(staged.column("ms"))
            if pc.all(explicit).as_py():
                by_id.add(staged)
            elif not pc.any(explicit).as_py():
                in_order.add(staged)
            else:
                by_id.add(staged.filter(explicit))
                in_order.add(staged.filter(pc.invert(explicit)))
        return StagedFiles(rows, in_order.finish(), by_id.finish())
    except BaseException:
        if in_order.writer is not None:
            in_order.writer.close()
        for leftover in (in_order.path, by_id.path, *by_id.runs):
            if os.path.exists(leftover):
                os.unlink(leftover)
        raise
