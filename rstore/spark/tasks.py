"""What every writer's task and commit share: the commit message, the task's identity, and
the staging directory beside a store."""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage

__all__ = ["Staged", "remove_staging", "staging_root", "task"]


@dataclass
class Staged(WriterCommitMessage):
    """One task's output: its file (its rows without an ID in its order, or its RDB file) and
    its sorted file of rows with explicit IDs; ``None`` where it has no such row."""

    partition: int
    attempt: int
    path: str | None
    rows: int
    query: str | None = None
    by_id: str | None = None

    def files(self) -> list[str]:
        return [p for p in (self.path, self.by_id) if p is not None]


def staging_root(store: str) -> str:
    """Where the jobs writing to ``store`` stage their files (beside the store)."""
    parent, name = os.path.split(store.rstrip(os.sep))
    return os.path.join(parent, f".{name}.rstore-staging")


def remove_staging(staging: str) -> None:
    """Remove a job's staging directory, and the root when no other job uses it."""
    shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):  # another job's files are there, or already gone
        os.rmdir(os.path.dirname(staging))


def task() -> tuple[int, int, Any]:
    ctx = TaskContext.get()
    if ctx is None:  # not in a Spark task (tests of write() alone)
        return 0, 0, None
    return ctx.partitionId(), ctx.attemptNumber(), ctx
