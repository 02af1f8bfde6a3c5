"""Staged files read back as rows, and sorted runs merged: the order in which a write appends.

A staged file (:mod:`rstore.spark.staging`) holds rows of one partition in the staged layout.
Its rows come back here as Python tuples, one Arrow batch at a time::

    (stream, ms, seq, partition, row, id, [field, value, ...])

The first five items are the merge key: a row with an explicit ID sorts by its stream, then its
ID (``ms``, ``seq``; a ``<ms>-*`` ID, whose seq XADD picks, after every seq of its ms), then its
place in the job (partition, row), which is unique -- so two rows never tie and the fields are
never compared.  :func:`merge` merges files sorted on that key (runs) holding one batch of each
at a time; :class:`StagedEntries` is what the commit appends: the rows with explicit IDs merged
in ID order per stream, then the rows without IDs by partition and row.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any

import pyarrow as pa

import rstore

__all__ = [
    "AFTER_EVERY_SEQ",
    "BATCH_BYTES",
    "StagedEntries",
    "append_staged",
    "merge",
    "rows_of",
    "write_rows",
]

#: The merge key's seq for a ``<ms>-*`` ID: above every 64-bit seq.
AFTER_EVERY_SEQ = 1 << 64
#: About how many bytes one batch of a sorted run holds: a merge holds one batch per run.
BATCH_BYTES = 256 * 1024
_BATCH_ROWS = 65536

#: One staged row as a tuple (see the module's docstring).
Row = tuple[bytes, int, int, int, int, Any, list[bytes]]


def rows_of(path: str, partition: int) -> Iterator[Row]:
    """The rows of a staged file of ``partition``, in the file's order, one batch in memory."""
    with pa.memory_map(path) as source:
        reader = pa.ipc.open_file(source)
        for k in range(reader.num_record_batches):
            batch = reader.get_batch(k)
            fields = batch.column("fields")
            names = fields.values.to_pylist()
            flat: list[Any] = [None] * (2 * len(names))
            flat[0::2] = names
            flat[1::2] = batch.column("values").values.to_pylist()
            bounds = [2 * o for o in fields.offsets.to_pylist()]
            seqs = batch.column("seq")
            seq = seqs.to_pylist()
            if seqs.null_count:
                seq = [AFTER_EVERY_SEQ if s is None else s for s in seq]
            yield from zip(
                batch.column("stream").to_pylist(),
                batch.column("ms").to_pylist(),
                seq,
                repeat(partition),
                batch.column("row").to_pylist(),
                batch.column("id").to_pylist(),
                map(flat.__getitem__, map(slice, bounds, bounds[1:])),
            )


def merge(runs: Sequence[tuple[int, str]]) -> Iterator[Row]:
    """The rows of sorted files ``(partition, path)`` in key order (one batch of each in
    memory)."""
    if len(runs) == 1:
        return rows_of(runs[0][1], runs[0][0])
    return heapq.merge(*(rows_of(path, partition) for partition, path in runs))


def write_rows(rows: Iterable[Row], path: str, schema: pa.Schema) -> int:
    """Write ``rows`` (tuples as :func:`rows_of` gives them) to a staged file at ``path``, in
    batches of about :data:`BATCH_BYTES`; the number of rows."""
    written = 0
    with pa.ipc.new_file(path, schema) as writer:
        held: list[Row] = []
        size = 0
        for row in rows:
            held.append(row)
            size += len(row[0]) + sum(map(len, row[6]))
            if size >= BATCH_BYTES or len(held) >= _BATCH_ROWS:
                writer.write_batch(_batch(held, schema))
                written += len(held)
                held, size = [], 0
        if held:
            writer.write_batch(_batch(held, schema))
            written += len(held)
    return written


def _batch(rows: list[Row], schema: pa.Schema) -> pa.RecordBatch:
    stream, ms, seq, _, row, ids, flat = zip(*rows)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(stream, pa.binary()),
            pa.array(ids, pa.binary()),
            pa.array([f[0::2] for f in flat], schema.field("fields").type),
            pa.array([f[1::2] for f in flat], schema.field("values").type),
            pa.array(row, pa.int64()),
            pa.array(ms, pa.uint64()),
            pa.array([None if s == AFTER_EVERY_SEQ else s for s in seq], pa.uint64()),
        ],
        schema=schema,
    )


class StagedEntries:
    """The entries of a job's staged files as :meth:`rstore.Store.append_entries` takes them:
    first the rows with explicit IDs, merged from the tasks' sorted files ``by_id`` (each
    stream's in ID order), then the rows without IDs from the files ``in_order``, by partition
    and row.  Both are ``(partition, path)`` lists.  Re-iterable (each pass starts over), as
    ``append_entries`` may need.  After a refused entry, :meth:`position` names it."""

    def __init__(
        self, by_id: Sequence[tuple[int, str]], in_order: Sequence[tuple[int, str]]
    ) -> None:
        self.by_id = sorted(by_id)
        self.in_order = sorted(in_order)
        self._at: Row | None = None

    def __iter__(self) -> Iterator[tuple[bytes, Any, list[bytes]]]:
        self._at = None
        for row in merge(self.by_id) if self.by_id else ():
            self._at = row
            yield row[0], row[5], row[6]
        for partition, path in self.in_order:
            for row in rows_of(path, partition):
                self._at = row
                yield row[0], row[5], row[6]

    def position(self) -> tuple[int, int]:
        """Where the entry taken last comes from: ``(partition, row in that partition)``."""
        if self._at is None:
            raise ValueError("no entry was taken")
        return self._at[3], self._at[4]


def append_staged(
    store: rstore.Store, entries: StagedEntries, target: str, batch: Any = None
) -> rstore.AppendReport:
    """Append ``entries`` to ``store`` in one transaction.  A refused entry raises
    ``ValueError`` naming ``target`` (what the job writes), the entry's partition and row, and
    XADD's error line; then nothing was written."""
    try:
        return store.append_entries(entries, batch=batch)
    except rstore.ResponseError as exc:
        partition, row = entries.position()
        raise ValueError(
            f"rstore: nothing was written to {target}: the row {row} of partition "
            f"{partition} was refused: {exc.line}"
        ) from exc
