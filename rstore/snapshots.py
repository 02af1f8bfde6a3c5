"""Saving a store to an RDB file and restoring one (the work behind ``Store.save`` and
``Store.restore``).

Saving reads every stream inside ONE read transaction -- a consistent point in time while
writers go on -- and writes a temporary file next to the target, which is fsynced and renamed
into place (then the directory is fsynced), so a crash never leaves a half-written file under
the target name.  Restoring imports the streams of one database of the file inside ONE write
transaction: a damaged file, an unsupported value or an existing key (without ``replace``)
leaves the store exactly as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from rstore.errors import KeyExistsError
from rstore.model import StreamState
from rstore.rdb.reader import Event, KeyEnd, KeyStart, RDBReader, SelectDB
from rstore.rdb.writer import RDBWriter
from rstore.storage.env import Env
from rstore.storage.txn import Txn
from rstore.streams import keyspace
from rstore.streams.export import snapshot_stream, stream_keys
from rstore.streams.restore import import_stream

__all__ = ["RestoreReport", "SaveReport", "remove_stale_temporaries", "restore_file", "save_file"]

#: A progress callback: ``progress(done, total)``.  Saving reports keys written out of the keys
#: in the store; restoring and reading files report bytes read out of the file's size (``None``
#: when the size cannot be known, e.g. a pipe).
Progress = Callable[[int, int | None], None]


@dataclass(frozen=True)
class SaveReport:
    path: str
    rdb_version: int
    streams: int
    bytes: int
    seconds: float
    entries: int = 0  # live entries in the streams written


@dataclass
class RestoreReport:
    path: str
    db: int
    rdb_version: int = 0
    streams: list[bytes] = field(default_factory=list)
    replaced: list[bytes] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # other types in this db, by type
    expired: list[bytes] = field(default_factory=list)  # streams whose TTL had passed
    ttl_dropped: list[bytes] = field(default_factory=list)  # rstore keys never expire
    other_dbs: dict[int, int] = field(default_factory=dict)  # keys left in other databases
    seconds: float = 0.0
    entries: int = 0  # live entries in the streams restored
    bytes: int = 0  # bytes read from the file


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


def restore_file(
    env: Env,
    path: str,
    *,
    db: int = 0,
    replace: bool = False,
    now_ms: int,
    progress: Progress | None = None,
) -> RestoreReport:
    """Import the streams of database ``db`` of an RDB file, all or nothing."""
    started = time.monotonic()

    def load(txn: Txn) -> RestoreReport:
        report = RestoreReport(os.fspath(path), db)
        with open(path, "rb") as f:
            _load(txn, f, report, replace=replace, now_ms=now_ms, progress=progress)
        return report

    report = env.write(load)
    report.seconds = time.monotonic() - started
    if report.streams:
        env.notify(set(report.streams))  # a restored stream wakes readers blocked on it
    return report


def _load(
    txn: Txn,
    f: BinaryIO,
    report: RestoreReport,
    *,
    replace: bool,
    now_ms: int,
    progress: Progress | None,
) -> None:
    reader = RDBReader(f)
    events = reader.events()
    current_db = 0
    for event in events:
        if isinstance(event, SelectDB):
            current_db = event.db
        elif isinstance(event, KeyStart):
            if current_db == report.db and event.type_name == "stream":
                _import(txn, _records_of_key(events), event, report, replace, now_ms)
            elif current_db == report.db:
                report.skipped[event.type_name] = report.skipped.get(event.type_name, 0) + 1
            else:
                report.other_dbs[current_db] = report.other_dbs.get(current_db, 0) + 1
            if progress is not None:
                progress(reader.offset, reader.size)
    report.rdb_version = reader.version
    report.bytes = reader.offset
    if progress is not None:
        progress(reader.offset, reader.size)


def _records_of_key(events: Iterator[Event]) -> Iterator[Event]:
    """The events of the current key, up to (and consuming) its KeyEnd."""
    for event in events:
        if isinstance(event, KeyEnd):
            return
        yield event


def _counting(records: Iterator[Event], report: RestoreReport) -> Iterator[Event]:
    """``records`` as they are, adding the stream's length to ``report.entries``."""
    for record in records:
        if isinstance(record, StreamState):
            report.entries += record.length
        yield record


def _import(
    txn: Txn,
    records: Iterator[Event],
    start: KeyStart,
    report: RestoreReport,
    replace: bool,
    now_ms: int,
) -> None:
    key = start.key
    if start.expire_ms is not None and start.expire_ms <= now_ms:
        for _ in records:  # already expired: a server loading the file drops it too
            pass
        report.expired.append(key)
        return
    existing = keyspace.lookup_stream(txn, key)
    if existing is not None and not replace:
        raise KeyExistsError(key)
    stream = import_stream(txn, key, _counting(records, report))
    if existing is not None:
        keyspace.delete_keys(txn, [key])
        report.replaced.append(key)
    keyspace.bind_stream(txn, key, stream)
    report.streams.append(key)
    if start.expire_ms is not None:
        report.ttl_dropped.append(key)
