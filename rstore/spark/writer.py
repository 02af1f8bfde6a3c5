"""Writes: ``df.write.format("rstore").mode("append").save(STORE)`` and the streaming sink.

* ``writer()`` / ``streamWriter()`` run in Spark's planner (driver host): the columns are checked
  there (:func:`rstore.spark.staging.check_columns`), and a staging directory is chosen beside
  the store: ``<parent>/.<store name>.rstore-staging/<job>``.
* ``write()`` runs once per task on an executor: the task's rows are checked and staged as
  Arrow IPC files, ``part-<partition>-<attempt>.arrow`` (rows without an ID, in the task's
  order) and ``part-<partition>-<attempt>.ids.arrow`` (rows with explicit IDs, sorted by stream
  and ID, in bounded memory: :mod:`rstore.spark.staging`) -- retried or speculative attempts
  never collide -- and a :class:`Staged` message names them.  Nothing touches the store yet.
* ``commit()`` runs in the planner once every task succeeded: the staged files are read back
  batch by batch -- the sorted files merged, so that each stream's explicit IDs come in ID
  order whatever the partitioning, then the rows without IDs by partition and row
  (:class:`rstore.spark.runs.StagedEntries`) -- and appended with
  :meth:`rstore.Store.append_entries`: ONE write transaction, all or nothing, each entry as
  XADD would add it.  The staging directory is removed whether the commit succeeded or not;
  ``abort()`` removes it too.
* Streaming: the same per micro-batch, with ``batch=("spark:<query id>", batchId)``: a batch
  Spark replays after a failure is skipped if it was committed (exactly once per query and
  batch).

``option("output", "rdb")`` writes RDB files instead (:mod:`rstore.spark.rdb_output`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

import rstore
from rstore.spark.runs import StagedEntries, append_staged
from rstore.spark.staging import Layout, check_columns, stage
from rstore.spark.tasks import Staged, remove_staging, staging_root, task

__all__ = ["Staged", "make_stream_writer", "make_writer"]

#: The local property Spark sets on the jobs of a streaming query (its id, stable across
#: restarts from one checkpoint).
QUERY_ID_PROPERTY = "sql.streaming.queryId"


def _option(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name)
    return value if value is None else str(value)


def _path(options: Mapping[str, str]) -> str:
    path = _option(options, "path")
    if not path:
        raise ValueError('rstore: no path given: df.write.format("rstore").save(PATH)')
    return os.path.abspath(path)


def _layout(schema: StructType) -> Layout:
    return check_columns([(f.name, f.dataType.simpleString()) for f in schema.fields])


def _stage_task(
    batches: Iterator[pa.RecordBatch], layout: Layout, staging: str, unique: str = ""
) -> Staged:
    partition, attempt, _ = task()
    path = os.path.join(staging, f"part-{partition:05d}-{attempt}{unique}")
    files = stage(batches, layout, path, f"partition {partition}")
    return Staged(partition, attempt, files.in_order, files.rows, by_id=files.by_id)


def staged_entries(messages: Sequence[WriterCommitMessage | None]) -> StagedEntries:
    """The entries of the tasks' messages, in the order a commit appends them."""
    staged = [m for m in messages if isinstance(m, Staged)]
    return StagedEntries(
        [(m.partition, m.by_id) for m in staged if m.by_id is not None],
        [(m.partition, m.path) for m in staged if m.path is not None],
    )


def commit_staged(
    store_path: str, messages: Sequence[WriterCommitMessage | None], batch: Any = None
) -> rstore.AppendReport:
    """Append the staged files of ``messages`` to the store in one transaction (see
    :func:`append_staged`)."""
    with rstore.Store(store_path) as store:
        return append_staged(store, staged_entries(messages), store_path, batch)


class RStoreWriter(DataSourceArrowWriter):
    """Batch writes into a store (see the module's docstring)."""

    def __init__(self, path: str, layout: Layout) -> None:
        self.path = path
        self.layout = layout
        self.staging = os.path.join(staging_root(path), uuid.uuid4().hex)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return _stage_task(iterator, self.layout, self.staging)

    def _cleanup(self, messages: list[WriterCommitMessage | None]) -> None:
        # The messages' directories too: Spark may commit through another copy of the writer.
        for staging in {self.staging} | {
            os.path.dirname(f) for m in messages if isinstance(m, Staged) for f in m.files()
        }:
            remove_staging(staging)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        try:
            commit_staged(self.path, messages)
        finally:
            self._cleanup(messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._cleanup(messages)


class RStoreStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink: each micro-batch as a batch write, applied once per (query,
    batchId) through ``append_entries(batch=("spark:<query id>", batchId))``.

    Spark may hand ``write()`` and ``commit()`` different copies of this writer, so the staging
    directory is the query's, ``<root>/query-<query id>``, known from the messages; each commit
    or abort removes it (micro-batches of one query run one after the other)."""

    def __init__(self, path: str, layout: Layout) -> None:
        self.path = path
        self.layout = layout

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        _, _, ctx = task()
        query = None if ctx is None else ctx.getLocalProperty(QUERY_ID_PROPERTY)
        staging = os.path.join(staging_root(self.path), f"query-{query}")
        # One file per task and micro-batch: a task does not know its batch id.
        msg = _stage_task(iterator, self.layout, staging, f"-{uuid.uuid4().hex[:12]}")
        msg.query = query
        return msg

    def _cleanup(self, messages: list[WriterCommitMessage | None]) -> None:
        for m in messages:
            if isinstance(m, Staged):
                remove_staging(os.path.join(staging_root(self.path), f"query-{m.query}"))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        try:
            staged = [m for m in messages if isinstance(m, Staged)]
            if not any(m.rows for m in staged):
                return  # no rows in this micro-batch: nothing to add
            queries = {m.query for m in staged}
            if None in queries or len(queries) != 1:
                raise ValueError(
                    f"rstore: cannot tell which streaming query wrote micro-batch {batchId} "
                    f"(query ids seen: {sorted(map(str, queries))})"
                )
            commit_staged(self.path, messages, batch=(f"spark:{queries.pop()}", batchId))
        finally:
            self._cleanup(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._cleanup(messages)


_MODE = (
    'rstore: only mode("append") is supported: a store is appended to, never overwritten '
    '(df.write.format("rstore").mode("append").save(PATH))'
)


def make_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> DataSourceWriter:
    if overwrite:
        raise ValueError(_MODE)
    layout = _layout(schema)
    output = (_option(options, "output") or "store").lower()
    if output == "rdb":
        from rstore.spark.rdb_output import RdbWriter  # noqa: PLC0415 - on first use

        return RdbWriter.create(options, _path(options), layout)
    if output != "store":
        raise ValueError(f'rstore: option output must be "store" or "rdb", not {output!r}')
    return RStoreWriter(_path(options), layout)


def make_stream_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> DataSourceStreamWriter:
    if overwrite:
        raise ValueError(_MODE.replace("mode(", "outputMode("))
    output = (_option(options, "output") or "store").lower()
    if output != "store":
        raise ValueError('rstore: the streaming sink writes to a store only (output "store")')
    return RStoreStreamWriter(_path(options), _layout(schema))
