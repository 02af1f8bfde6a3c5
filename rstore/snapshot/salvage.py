"""Salvaging a damaged store: everything that can be read copied into a new store
(``rstore.salvage_store``, ``rstore salvage SRC DST``).

The source is read without LMDB (:mod:`rstore.storage.checks.salvage`: one snapshot, brought forward
by the write-ahead log when it can be), never written.  Each stream is rebuilt from the records
read (:mod:`rstore.streams.salvage`) and imported into the new store the way a restore imports
an RDB file (:func:`rstore.streams.dump.restore_stream`), so every counter of the new store
agrees with what it holds.  A database is written in one transaction: all of it or nothing.
Databases other than 0 (``SRC/dbN``, see :mod:`rstore.databases`) are salvaged into
``DST/dbN``.  What could not be read is reported, per stream and ID range.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rstore.errors import CorruptDataError, KeyExistsError, RStoreError, StorageError
from rstore.model import DATABASES
from rstore.storage import registry
from rstore.storage.checks.salvage import SalvageSource, check_source, open_source
from rstore.storage.env import DEFAULT_MAP_SIZE, Env
from rstore.storage.records import layout
from rstore.storage.records.txn import Txn
from rstore.streams.dump import restore_stream
from rstore.streams.salvage import StreamSalvage, rebuild_streams
from rstore.streams.salvage_catalog import Catalog, count_orphans, read_catalog, shown

__all__ = ["SalvageReport", "salvage_store"]

#: ``progress(done, total)``: pages of the source read, out of the pages in use.
Progress = Callable[[int, int | None], None]


@dataclass
class SalvageReport:
    """What a salvage copied from one database of a store, and what it could not.

    ``streams`` has one :class:`~rstore.streams.salvage.StreamSalvage` per stream copied, with
    its counts and losses; ``lost`` the losses that belong to no stream (stream names, records
    of groups whose record is lost, the store's settings); ``damaged`` every damaged place met,
    as ``rstore check`` names them; ``notes`` how the source was read (which snapshot, the
    write-ahead log).  ``databases`` holds the report of each other database (``SRC/dbN``)."""

    source: str
    target: str
    db: int = 0
    format: int | None = None  # the source's store format (None: its format record is lost)
    snapshot: int = 0  # the LMDB transaction read
    streams: list[StreamSalvage] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    databases: dict[int, SalvageReport] = field(default_factory=dict)

    @property
    def entries(self) -> int:
        return sum(s.entries for s in self.streams)

    @property
    def groups(self) -> int:
        return sum(s.groups for s in self.streams)

    @property
    def consumers(self) -> int:
        return sum(s.consumers for s in self.streams)

    @property
    def pending(self) -> int:
        return sum(s.pending for s in self.streams)

    @property
    def complete(self) -> bool:
        """Whether everything was copied as it was: nothing lost here or in the other
        databases (damage that lost nothing, in LMDB's free list or an index rebuilt from
        the records it indexes, does not count)."""
        return (
            not self.lost
            and all(s.complete for s in self.streams)
            and all(d.complete for d in self.databases.values())
        )

    def losses(self) -> list[str]:
        """Every loss of this database in one line each: per stream, then the others."""
        lines = []
        for s in self.streams:
            name = shown(s.original_name or s.name)
            lines += [f"stream {name}: lost {r.describe()}" for r in s.lost_entries]
            lines += [f"stream {name}: {what}" for what in s.lost]
        return lines + self.lost


def _check_paths(src: str, dst: str) -> None:
    real_src, real_dst = os.path.realpath(src), os.path.realpath(dst)
    if real_dst == real_src or real_dst.startswith(real_src + os.sep):
        raise StorageError(
            f"{dst} is inside the store {src}: salvage never writes there",
            hint="give a directory outside it",
        )
    if os.path.lexists(dst):
        if not os.path.isdir(dst):
            raise StorageError(
                f"{dst} exists and is not a directory: salvage writes a new store",
                hint="give a new or empty directory",
            )
        if os.listdir(dst):
            raise StorageError(
                f"{dst} exists and is not empty: salvage writes a new store",
                hint="give a new or empty directory",
            )


def _database_paths(src: str) -> list[int]:
    """The databases beside 0 that ``src`` holds (``src/dbN`` with a data file)."""
    return [
        n for n in range(1, DATABASES) if os.path.isfile(os.path.join(src, f"db{n}", "data.mdb"))
    ]


class _Pages:
    """Progress over every source: pages read out of the pages in use."""

    def __init__(self, sources: list[SalvageSource], progress: Progress | None) -> None:
        self.total = sum(s.pages_total for s in sources)
        self.before = 0  # pages of the sources finished
        self.progress = progress

    def report(self, source: SalvageSource) -> None:
        if self.progress is not None:
            done = self.before + min(source.pages_read, source.pages_total)
            self.progress(done, self.total)


def _copy(txn: Txn, source: SalvageSource, report: SalvageReport, pages: _Pages) -> None:
    """Everything read of ``source`` written through ``txn`` (a new store's)."""
    source.reader.on_pages = lambda: pages.report(source)
    cat = read_catalog(source)
    for rebuild in rebuild_streams(source, cat):
        try:
            restore_stream(txn, rebuild.report.name, rebuild.records(), replace=False)
        except (CorruptDataError, KeyExistsError) as exc:  # never expected: said, not hidden
            stream = rebuild.report
            stream.lost.append(f"the stream could not be rebuilt ({exc}): nothing of it copied")
            stream.entries = stream.nodes = stream.groups = stream.consumers = stream.pending = 0
        report.streams.append(rebuild.report)
        pages.report(source)
    count_orphans(source, cat)
    _copy_store_records(txn, cat)
    report.lost += cat.lost
    report.damaged += cat.damaged
    if source.changed():
        raise StorageError(
            f"{source.path} changed while it was read: a process is writing it",
            hint="stop the processes using it and salvage again",
        )


def _copy_store_records(txn: Txn, cat: Catalog) -> None:
    if cat.config is not None:
        txn.set_config(cat.config)
    for key, payload in cat.marks:
        txn.put(layout.DB_META, key, payload)


def _salvage_one(source: SalvageSource, dst: str, db: int, pages: _Pages) -> SalvageReport:
    started = time.monotonic()
    map_size = max(DEFAULT_MAP_SIZE, 2 * source.file.size)
    env = registry.acquire(dst, sync=True, map_size=map_size, create=True)
    try:
        _refuse_existing(env, dst)

        def load(txn: Txn) -> SalvageReport:  # may run again after the map grows
            report = SalvageReport(source.path, dst, db, source.format, source.snapshot.txnid)
            report.notes = list(source.notes)
            _copy(txn, source, report, pages)
            return report

        report = env.write(load, bulk=True)
    finally:
        registry.release(env)
    pages.before += source.pages_total
    report.seconds = time.monotonic() - started
    return report


def _refuse_existing(env: Env, dst: str) -> None:
    """A store that appeared at ``dst`` meanwhile (another process) is not written into."""
    if env.read(lambda txn: txn.key_count()):
        raise StorageError(
            f"{dst} holds a store with keys: salvage writes a new store",
            hint="give a new or empty directory",
        )


def salvage_store(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    previous: bool = False,
    progress: Progress | None = None,
) -> SalvageReport:
    """Copy everything that can be read of the store at ``src`` -- streams, entries, groups,
    consumers, pending entries, the store's settings and ``append_entries`` batch numbers and
    bookmarks -- into a new store at ``dst``, and report what could not be read (per
    stream, by entry ID range).  ``src`` may be too damaged to open; it is never written (its
    files are only read, no lock file is made, nothing is recovered in place).  Its databases
    other than 0 go to ``dst/dbN``.

    ``dst`` must not exist or be an empty directory (else :class:`StorageError`); it is
    created in the current format.  ``previous``: read
    the older of LMDB's two snapshots (one commit older) instead of choosing.  ``progress(done,
    total)`` counts pages of the source read.  Raises :class:`StoreNotFoundError` /
    :class:`NotAStoreError` when ``src`` is not a store, :class:`CorruptStoreError` when
    nothing of it can be read; a failure leaves no ``dst`` behind."""
    src, dst = os.fspath(src), os.fspath(dst)
    check_source(src)
    _check_paths(src, dst)
    sources: dict[int, SalvageSource] = {0: open_source(src, previous=previous)}
    unreadable: list[str] = []
    created = not os.path.lexists(dst)
    try:
        for n in _database_paths(src):
            path = os.path.join(src, f"db{n}")
            try:
                sources[n] = open_source(path, previous=previous)
            except RStoreError as exc:
                unreadable.append(f"database {n} ({path}) cannot be read at all: {exc}")
        pages = _Pages(list(sources.values()), progress)
        reports = [
            _salvage_one(s, dst if n == 0 else os.path.join(dst, f"db{n}"), n, pages)
            for n, s in sources.items()
        ]
    except BaseException:
        if os.path.isdir(dst):
            _remove_created(dst, created)
        raise
    finally:
        for source in sources.values():
            source.close()
    first = reports[0]
    first.databases = {r.db: r for r in reports[1:]}
    first.lost += unreadable
    return first


def _remove_created(dst: str, created: bool) -> None:
    """Remove what a failed salvage wrote: ``dst`` itself when it made it, else its contents."""
    if created:
        shutil.rmtree(dst, ignore_errors=True)
        return
    for name in os.listdir(dst):
        full = os.path.join(dst, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(full)
