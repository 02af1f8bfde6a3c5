"""Saving a store to an RDB file (``Store.save``).

Every stream is read inside ONE read transaction -- a consistent point in time while writers
go on -- and written to a temporary file next to the target, which is fsynced and renamed into
place (then the directory is fsynced), so a crash never leaves a half-written file under the
target name.  The temporary is ``flock``ed while it is written; temporaries that killed saves
left behind are removed by the next save of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rstore.rdb.writer import RDBWriter
from rstore.storage.env import Env
from rstore.storage.txn import Txn
from rstore.streams.dump import snapshot_stream, stream_keys

__all__ = ["Progress", "SaveReport", "remove_stale_temporaries", "save_file"]

#: A progress callback: ``progress(done, total)``.  Saving reports keys written out of the keys
#: in the store; restoring and reading files report bytes read out of the file's size (``None``
#: when the size cannot be known, e.g. a pipe).
Progress = Callable[[int, int | None], None]


@dataclass(frozen=True)
class SaveReport:
    """What a save wrote."""

    path: str
    rdb_version: int
    streams: int
    bytes: int
    seconds: float
    entries: int = 0  # live entries in the streams written


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
    env: Env,
    path: str,
    *,
    rdb_version: int = 11,
    compress: bool = True,
    progress: Progress | None = None,
) -> SaveReport:
    started = time.monotonic()
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale_temporaries(path)
    tmp = _temporary(path)

    def write(txn: Txn) -> tuple[int, int, int]:
        with open(tmp, "wb") as f:  # reopened (truncated) if the read is retried
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # "in progress", for remove_stale_temporaries
            writer = RDBWriter(f, version=rdb_version, compress=compress)
            writer.header()
            count = txn.key_count()
            streams = entries = 0
            if progress is not None:
                progress(0, count)
            if count:
                writer.select_db(0, count)
                for name, stream in stream_keys(txn):
                    writer.stream(name, snapshot_stream(txn, stream))
                    streams += 1
                    entries += stream.meta.length
                    if progress is not None:
                        progress(streams, count)
            writer.end()
            f.flush()
            os.fsync(f.fileno())
            return streams, entries, writer.bytes_written

    try:
        streams, entries, size = env.read(write)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)
    return SaveReport(path, rdb_version, streams, size, time.monotonic() - started, entries)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
