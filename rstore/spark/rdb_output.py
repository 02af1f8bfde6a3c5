"""``option("output", "rdb")``: every task writes an RDB file, for clusters and for servers.

PATH is a directory (on storage every executor and the driver see, on a cluster).  Each task
stages its rows and adds them to a temporary store of its own on the executor's local disk,
exactly as a store write's commit would (explicit IDs in ID order per stream, then the rows
without IDs: :mod:`rstore.spark.runs`; one transaction), saves it with :meth:`rstore.Store.save`
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

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

import rstore
from rstore.spark.runs import StagedEntries, append_staged
from rstore.spark.staging import Layout, stage
from rstore.spark.tasks import Staged, task

__all__ = ["RdbWriter"]

RDB_VERSIONS = ("9", "10", "11")


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
        scratch = tempfile.mkdtemp(prefix="rstore-spark-task-")
        try:
            files = stage(
                iterator, self.layout, os.path.join(scratch, "rows"), f"partition {partition}"
            )
            if not files.rows:
                return Staged(partition, attempt, None, 0)
            entries = StagedEntries(
                [(partition, files.by_id)] if files.by_id else [],
                [(partition, files.in_order)] if files.in_order else [],
            )
            with rstore.Store(os.path.join(scratch, "store"), sync=False) as store:
                append_staged(store, entries, self.out_dir)
                os.makedirs(self.temporary, exist_ok=True)
                path = os.path.join(self.temporary, f"part-{partition:05d}-{attempt}.rdb")
                store.save(path, self.rdb_version)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return Staged(partition, attempt, path, files.rows)

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
