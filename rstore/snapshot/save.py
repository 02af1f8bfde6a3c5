"""Saving a store to an RDB file (``Store.save``).

Each database is read inside ONE read transaction of its own -- a consistent point in time
while writers go on.  The read transactions of all the databases saved are begun one after
another, in ascending order, before the first byte is written (each database is its own LMDB
environment, so there is no single point in time across them).  The file is written to a
temporary name next to the target, fsynced and renamed into place (then the directory is
fsynced), so a crash never leaves a half-written file under the target name; an
:class:`OSError` names the target, never the temporary.  The temporary
is ``flock``ed while it is written; temporaries that killed saves left behind are removed by
the next save of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from rstore.rdb.writer import RDBWriter
from rstore.storage.env import Env
from rstore.storage.records.txn import Txn
from rstore.streams.dump import snapshot_stream, stream_keys

__all__ = ["DatabaseSaved", "Progress", "SaveReport", "remove_stale_temporaries", "save_file"]

#: A progress callback: ``progress(done, total)``.  Saving reports keys written out of the keys
#: in the store; restoring and reading files report bytes read out of the file's size (``None``
#: when the size cannot be known, e.g. a pipe).
Progress = Callable[[int, int | None], None]
T = TypeVar("T")


class DatabaseSaved(NamedTuple):
    """What a save wrote of one database."""

    streams: int
    entries: int  # live entries in the streams written


@dataclass(frozen=True)
class SaveReport:
    """What a save wrote: totals, and per database in ``databases`` (a database without keys
    is not written, so not listed)."""

    path: str
    rdb_version: int
    streams: int
    bytes: int
    seconds: float
    entries: int = 0  # live entries in the streams written
    databases: dict[int, DatabaseSaved] = field(default_factory=dict)


def _temporary(path: str) -> str:
    """The temporary name a save of ``path`` writes to before renaming it into place."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{os.getpid()}.tmp")


def remove_stale_temporaries(path: str) -> list[str]:
    """Delete the temporaries that saves of ``path`` killed half-way left behind; the paths
    removed.  A save holds an exclusive ``flock`` on its temporary while it writes, so one
    that can be locked belongs to nobody (a PID alone could have been reused)."""
    directory, name = os.path.split(os.path.abspath(path))
    removed = []
    for candidate in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(name)}.*.tmp")):
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a save in progress
        finally:
            os.close(fd)  # drops the lock too
        with contextlib.suppress(OSError):
            os.unlink(candidate)
            removed.append(candidate)
    return removed


def save_file(
    envs: list[tuple[int, Env]],
    path: str,
    *,
    rdb_version: int = 11,
    compress: bool = True,
    progress: Progress | None = None,
) -> SaveReport:
    """Write the databases ``envs`` (``(number, env)`` in ascending order) to ``path``."""
    started = time.monotonic()
    now = int(time.time() * 1000)  # which iids of idempotent production are still held
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale_temporaries(path)
    tmp = _temporary(path)

    def write(txns: list[Txn]) -> tuple[dict[int, DatabaseSaved], int]:
        with open(tmp, "wb") as f:  # reopened (truncated) if a read is retried
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # "in progress", for remove_stale_temporaries
            writer = RDBWriter(f, version=rdb_version, compress=compress)
            writer.header()
            counts = [txn.key_count() for txn in txns]
            total = sum(counts)
            saved: dict[int, DatabaseSaved] = {}
            done = 0
            if progress is not None:
                progress(0, total)
            for (db, _), txn, count in zip(envs, txns, counts, strict=True):
                if not count:
                    continue
                writer.select_db(db, count)
                streams = entries = 0
                for name, stream in stream_keys(txn):
                    snap = snapshot_stream(
                        txn,
                        stream,
                        nack_zone=rdb_version >= 14,
                        idempotency_at=now if rdb_version >= 13 else None,
                    )
                    writer.stream(name, snap)
                    streams += 1
                    entries += stream.meta.length
                    if progress is not None:
                        progress(done + streams, total)
                done += streams
                saved[db] = DatabaseSaved(streams, entries)
            writer.end()
            f.flush()
            os.fsync(f.fileno())
            return saved, writer.bytes_written

    try:
        saved, size = _read_all([env for _, env in envs], write, [])
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            # the user's file, not the temporary, is what could not be written
            raise OSError(exc.errno, exc.strerror or str(exc), path) from exc
        raise
    _fsync_dir(directory)
    return SaveReport(
        path, rdb_version, sum(d.streams for d in saved.values()), size,
        time.monotonic() - started, sum(d.entries for d in saved.values()), saved,
    )  # fmt: skip


def _read_all(envs: list[Env], fn: Callable[[list[Txn]], T], txns: list[Txn]) -> T:
    """``fn`` on read snapshots of every env, begun in order before ``fn`` runs.  A retried
    read (the map grew meanwhile) runs ``fn`` again, so ``fn`` must start over each time."""
    if len(txns) == len(envs):
        return fn(txns)
    return envs[len(txns)].read(lambda txn: _read_all(envs, fn, [*txns, txn]))


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
