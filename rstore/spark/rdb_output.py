"""``option("output", "rdb")``: every task writes an RDB file, for clusters and for servers.

PATH is a directory (on storage every executor and the driver see, on a cluster).  Each task
adds its rows to a temporary store of its own on the executor's local disk, exactly as a
store write would (:meth:`rstore.Store.append_entries`), saves it with :meth:`rstore.Store.save`
into ``PATH/_temporary-<job>/part-<partition>-<attempt>.rdb``, and removes the store.  The
commit renames each task's file into place as ``PATH/part-<partition>.rdb`` (``os.replace``:
atomic per file); an abort removes the temporary directory.  Each file is a complete dump of one
task's rows: ``rstore restore``, valkey-server and redis-server load it.  A stream whose rows
are in several partitions is in several files; ``df.repartition("stream")`` keeps each stream
in one file.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

import rstore
from rstore.spark.staging import Layout, entries_of, to_staged
from rstore.spark.tasks import Staged, task

__all__ = ["RdbWriter"]

RDB_VERSIONS = ("9", "10", "11")


class _BatchEntries:
    """A staged batch as entries, re-iterable (``append_entries`` may read twice)."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        self.batch = batch

    def __iter__(self) -> Iterator[tuple[Any, Any, Any]]:
        return entries_of(self.batch)[1]


class RdbWriter(DataSourceArrowWriter):
    def __init__(self, out_dir: str, layout: Layout, rdb_version: int) -> None:
        self.out_dir = out_dir
        self.layout = layout
        self.rdb_version = rdb_version
        self.temporary = os.path.join(out_dir, f"_temporary-{uuid.uuid4().hex}")

    @classmethod
    def create(cls, options: Mapping[str, str], out_dir: str, layout: Layout) -> RdbWriter:
        version = str(options.get("rdbVersion", options.get("rdbversion", "11")))
        if version not in RDB_VERSIONS:
            raise ValueError(f"rstore: option rdbVersion must be 9, 10 or 11, not {version!r}")
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise ValueError(f"rstore: output rdb writes a directory; {out_dir} is a file")
        taken = glob.glob(os.path.join(glob.escape(out_dir), "part-*.rdb"))
        if taken:
            raise ValueError(
                f"rstore: {out_dir} already holds RDB parts ({os.path.basename(taken[0])}, ...): "
                "write into an empty or new directory"
            )
        return cls(out_dir, layout, int(version))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        partition, attempt, _ = task()
        where = f"partition {partition}"
        rows = 0
        scratch = tempfile.mkdtemp(prefix="rstore-spark-task-")
        try:
            with rstore.Store(scratch, sync=False) as store:
                for batch in iterator:
                    if batch.num_rows:
                        staged = to_staged(batch, self.layout, where)
                        try:
                            store.append_entries(_BatchEntries(staged))
                        except rstore.ResponseError as exc:
                            raise ValueError(f"rstore: {where} was refused: {exc.line}") from exc
                        rows += staged.num_rows
                if not rows:
                    return Staged(partition, attempt, None, 0)
                os.makedirs(self.temporary, exist_ok=True)
                path = os.path.join(self.temporary, f"part-{partition:05d}-{attempt}.rdb")
                store.save(path, self.rdb_version)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return Staged(partition, attempt, path, rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        try:
            for m in messages:
                if isinstance(m, Staged) and m.path is not None:
                    target = os.path.join(self.out_dir, f"part-{m.partition:05d}.rdb")
                    os.replace(m.path, target)
        finally:
            shutil.rmtree(self.temporary, ignore_errors=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        shutil.rmtree(self.temporary, ignore_errors=True)
