"""Restoring the streams of an RDB file into a store (``Store.restore_file``).

The streams of one database of the file are imported inside ONE write transaction: a damaged
file, an unsupported value or an existing key (without ``replace``) leaves the store exactly as
it was.  Each stream goes through :func:`rstore.streams.dump.restore_stream`, as RESTORE does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from rstore.model import StreamState
from rstore.rdb.reader import Event, KeyEnd, KeyStart, RDBReader, SelectDB, open_rdb
from rstore.snapshot.save import Progress
from rstore.storage.env import Env
from rstore.storage.records.txn import Txn
from rstore.streams.dump import restore_stream

__all__ = ["RestoreReport", "load_keys", "records_of_key", "restore_file"]


@dataclass
class RestoreReport:
    """What a restore imported, replaced and skipped."""

    path: str
    db: int | None  # None: every database (the details in ``databases``)
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
    #: with every database restored (``db`` None): each database of the file that holds keys;
    #: the lists above then hold the names of all of them, database by database
    databases: dict[int, RestoreReport] = field(default_factory=dict)


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
        with open_rdb(path) as f:
            load_keys(txn, f, report, replace=replace, now_ms=now_ms, progress=progress)
        return report

    report = env.write(load, bulk=True)  # in a store with the log: a checkpoint, not a record
    report.seconds = time.monotonic() - started
    if report.streams:
        env.notify(set(report.streams))  # a restored stream wakes readers blocked on it
    return report


#: ``other(db, key, events)``: a key of another database than the report's, its records next
#: in ``events`` (which it may consume up to the key's KeyEnd).
OtherKey = Callable[[int, KeyStart, Iterator[Event]], None]


def load_keys(
    txn: Txn,
    f: BinaryIO,
    report: RestoreReport,
    *,
    replace: bool,
    now_ms: int,
    progress: Progress | None,
    other: OtherKey | None = None,
) -> None:
    reader = RDBReader(f, runs=True)  # records in runs, for the importer
    events = reader.events()
    current_db = 0
    for event in events:
        if isinstance(event, SelectDB):
            current_db = event.db
        elif isinstance(event, KeyStart):
            if current_db == report.db and event.type_name == "stream":
                expired = event.expire_ms is not None and event.expire_ms <= now_ms
                records = records_of_key(events, None if expired else report)
                _import(txn, records, event, report, replace, now_ms)
            elif current_db == report.db:
                report.skipped[event.type_name] = report.skipped.get(event.type_name, 0) + 1
            elif other is not None:
                other(current_db, event, events)
            else:
                report.other_dbs[current_db] = report.other_dbs.get(current_db, 0) + 1
            if progress is not None:
                progress(reader.offset, reader.size)
    report.rdb_version = reader.version
    report.bytes = reader.offset
    if progress is not None:
        progress(reader.offset, reader.size)


def records_of_key(events: Iterator[Event], report: RestoreReport | None) -> Iterator[Event]:
    """The events of the current key, up to (and consuming) its KeyEnd, adding the stream's
    length to ``report.entries`` as its state goes by, when a report is given (one generator
    for both: a file of 1M entries has ~30k records)."""
    for event in events:
        if isinstance(event, KeyEnd):
            return
        if report is not None and isinstance(event, StreamState):
            report.entries += event.length
        yield event


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
    if restore_stream(txn, key, records, replace=replace):
        report.replaced.append(key)
    report.streams.append(key)
    if start.expire_ms is not None:
        report.ttl_dropped.append(key)
