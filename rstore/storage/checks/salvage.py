"""What a salvage reads of a store that may be too damaged to open: one snapshot of LMDB's trees,
read from the file (:mod:`rstore.storage.checks.btree_file`), brought forward by the write-ahead
log's
records when they follow it, every record's checksum verified.  Never writes a byte of the
store (``data.mdb`` and ``wal.log`` are opened read-only, no lock file is created, nothing is
recovered in place).

**Which snapshot.**  ``data.mdb`` holds two meta pages, each naming a snapshot (the last commit
and the one before); a store with the log (format 3) also names a *checkpoint* in the log's
header, whose tree was flushed to disk, and holds the records of the transactions since.  A
snapshot *reaches* its own transaction, or the last of the log's records when they follow it
(the checkpoint's, or a snapshot whose transaction is one of the records).

* When the machine restarted since the store was last written (the log's header carries
  another boot id) the newest tree may be torn -- written back to disk in part -- so the
  checkpoint is read and the log's records applied, as opening the store would.  The meta
  pages are read only when the checkpoint's main tree cannot be.
* Otherwise every page in the page cache was in the file, and each snapshot is sound as far as
  the disk kept it: the one reaching furthest is read; among those, the one with the fewest
  damaged places (a survey of each tree's pages); then the newest.
* ``previous=True`` reads the older meta page's snapshot (LMDB's ``MDB_PREVSNAPSHOT``).

A snapshot whose main tree (the list of sub-databases) cannot be read is passed over; when no
snapshot's can be, nothing can be salvaged.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from rstore.errors import CorruptStoreError, NotAStoreError, StoreNotFoundError
from rstore.storage.checks import pagecheck
from rstore.storage.checks.btree_file import DataFile, Record, TreeReader, meta_pages
from rstore.storage.checks.pagecheck import DbRecord, MetaPage, Problem
from rstore.storage.engine import wal, wal_log
from rstore.storage.records import layout

__all__ = ["LogRecords", "SalvageSource", "Snapshot", "check_source", "open_source"]

_CHECKSUM = "checksum mismatch: the record is damaged"


@dataclass(frozen=True)
class Snapshot:
    """A snapshot of LMDB's trees: its transaction, where its meta page came from, and what
    the survey of its trees found."""

    txnid: int
    origin: str  # "meta page 0", "meta page 1" or "the log's checkpoint"
    meta: MetaPage


@dataclass
class LogRecords:
    """The write-ahead log's intact records after its checkpoint, and those applied."""

    checkpoint: int  # the checkpoint's transaction
    restarted: bool  # the header was written before the running kernel booted
    txnids: list[int]  # of every redoable record, in order
    ops: list[list[wal_log.Op]]
    applied: int = 0  # records applied on top of the snapshot read (the last ones)

    def follows(self, txnid: int) -> bool:
        """Whether the records after transaction ``txnid`` (if any) apply to its snapshot."""
        return txnid == self.checkpoint or txnid in self.txnids

    def reach(self, txnid: int) -> int:
        """The last transaction a snapshot of ``txnid`` reaches with the log's records."""
        if self.txnids and self.follows(txnid):
            return max(txnid, self.txnids[-1])
        return txnid

    def newer(self, txnid: int) -> list[int]:
        return [t for t in self.txnids if t > txnid]


@dataclass
class _Overlay:
    """Records applied from the log: per sub-database, key -> stored value (``None``:
    deleted); a sub-database emptied (FLUSHALL) ignores its tree."""

    changes: dict[bytes, dict[bytes, bytes | None]] = field(default_factory=dict)
    cleared: set[bytes] = field(default_factory=set)
    _sorted: dict[bytes, list[bytes]] = field(default_factory=dict)

    def apply(self, ops: list[wal_log.Op]) -> None:
        self._sorted.clear()
        for db, key, value in ops:
            if value is None and not key:
                self.cleared.add(db)
                self.changes[db] = {}
            else:
                self.changes.setdefault(db, {})[key] = value

    def keys(self, db: bytes, low: bytes | None, high: bytes | None) -> list[bytes]:
        """The keys of ``db`` the log changed in ``[low, high)``, in order."""
        keys = self._sorted.get(db)
        if keys is None:
            keys = self._sorted[db] = sorted(self.changes.get(db, {}))
        start = 0 if low is None else bisect.bisect_left(keys, low)
        end = len(keys) if high is None else bisect.bisect_left(keys, high)
        return keys[start:end]


class SalvageSource:
    """One snapshot of a store, readable record by record (see the module's docstring)."""

    def __init__(
        self,
        path: str,
        file: DataFile,
        snapshot: Snapshot,
        log: LogRecords | None,
        trees: dict[bytes, DbRecord],
        notes: list[str],
    ) -> None:
        self.path = path
        self.file = file
        self.snapshot = snapshot
        self.log = log
        self.trees = trees
        self.notes = notes
        self.reader = TreeReader(file, snapshot.meta)
        self.overlay = _Overlay()
        if log is not None and log.follows(snapshot.txnid):
            newer = [ops for t, ops in zip(log.txnids, log.ops) if t > snapshot.txnid]
            for ops in newer:
                self.overlay.apply(ops)
            log.applied = len(newer)
        self.format: int | None = None
        self.sealed = True
        self._find_format()
        self._metas = [(s.slot, s.meta) for s in meta_pages(file)]

    def changed(self) -> bool:
        """Whether ``data.mdb``'s meta pages changed since the source was opened: a process
        committed meanwhile, and pages of the snapshot read may have been reused."""
        return [(s.slot, s.meta) for s in meta_pages(self.file)] != self._metas

    @property
    def pages_total(self) -> int:
        return self.snapshot.meta.last_page + 1

    @property
    def pages_read(self) -> int:
        return self.reader.pages_read

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> SalvageSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _find_format(self) -> None:
        for item in self.raw_records(
            layout.DB_META, layout.META_FORMAT, layout.META_FORMAT + b"\0"
        ):
            if not isinstance(item, Problem) and item[0] == layout.META_FORMAT:
                self.format = layout.unpack_format(item[1])
        if self.format is not None:
            self.sealed = self.format >= layout.FIRST_SEALED_FORMAT
            return
        sample = [
            item
            for db in (layout.DB_STREAMS, layout.DB_KEYS)
            for item in _first(self.raw_records(db), 16)
        ]
        self.sealed = not sample or any(layout.unseal(k, v) is not None for k, v in sample)
        kind = "carry checksums" if self.sealed else "carry no checksums (format 1)"
        self.notes.append(f"the store's format record is lost; its records {kind}")

    def raw_records(
        self, db: bytes, low: bytes | None = None, high: bytes | None = None
    ) -> Iterator[Record | Problem]:
        """The records of sub-database ``db`` in ``[low, high)`` as stored (sealed), the log's
        changes applied, and the problems in their places."""
        tree = self.trees.get(db)
        changed = self.overlay.changes.get(db, {})
        items: Iterator[Record | Problem] = iter(())
        if tree is not None and db not in self.overlay.cleared:
            items = self.reader.records(db.decode(), tree, low, high)
        elif tree is None and db not in self.overlay.cleared:
            items = iter(
                [Problem(db.decode(), None, "the sub-database is not in the main tree", low, high)]
            )
        if not changed:
            yield from items
            return
        yield from _merge(items, self.overlay.keys(db, low, high), changed)

    def records(
        self, db: bytes, low: bytes | None = None, high: bytes | None = None
    ) -> Iterator[Record | Problem]:
        """As :meth:`raw_records`, each record's payload (its checksum verified and removed);
        a record whose checksum does not match is a problem naming its key."""
        for item in self.raw_records(db, low, high):
            if isinstance(item, Problem):
                yield item
                continue
            key, value = item
            if not self.sealed or (db == layout.DB_META and key == layout.META_FORMAT):
                yield item
                continue
            payload = layout.unseal(key, value)
            if payload is None:
                yield Problem(db.decode(), None, _CHECKSUM, key, None, key)
            else:
                yield key, payload


def _first(items: Iterator[Record | Problem], n: int) -> list[Record]:
    out: list[Record] = []
    for item in items:
        if not isinstance(item, Problem):
            out.append(item)
            if len(out) >= n:
                break
    return out


def _merge(
    items: Iterator[Record | Problem], pending: list[bytes], changed: dict[bytes, bytes | None]
) -> Iterator[Record | Problem]:
    """The tree's items with the log's changes (``pending``: their keys, sorted) merged in, in
    key order (a problem goes where its lower bound is)."""
    at = 0
    for item in items:
        bound = item[0] if not isinstance(item, Problem) else item.key or item.low
        while bound is not None and at < len(pending) and pending[at] < bound:
            value = changed[pending[at]]
            if value is not None:
                yield pending[at], value
            at += 1
        if isinstance(item, Problem) or item[0] not in changed:
            yield item  # (a record the log changed comes in the log's version, or not at all)
    for key in pending[at:]:
        value = changed[key]
        if value is not None:
            yield key, value


# ----------------------------------------------------------------------------- choosing


@dataclass
class _Survey:
    snapshot: Snapshot
    trusted: bool  # sound by construction (see the module's docstring)
    trees: dict[bytes, DbRecord] | None = None  # None: the main tree cannot be read
    damaged: int = 0  # damaged places found in the data trees
    why: str = ""


def _survey(file: DataFile, survey: _Survey) -> None:
    reader = TreeReader(file, survey.snapshot.meta)
    trees, problems = reader.subdatabases(survey.snapshot.meta.main)
    missing = [db.decode() for db in layout.ALL_DBS if db not in trees]
    if problems and missing:
        survey.why = f"its main tree cannot be read ({problems[0].what})"
        return
    if len(missing) == len(layout.ALL_DBS):
        survey.why = "its main tree names none of the store's sub-databases"
        return
    survey.trees = trees
    survey.damaged = len(problems) + len(missing)
    for db, tree in trees.items():
        if db in layout.ALL_DBS:
            survey.damaged += sum(
                isinstance(item, Problem)
                for item in reader.records(db.decode(), tree, values=False)
            )


def _read_log(path: str) -> tuple[LogRecords, MetaPage | None] | None:
    """The log's header and intact records (``None`` without a log or a valid header), and the
    checkpoint's meta page as the header saved it."""
    try:
        fd = os.open(os.path.join(path, wal.LOG_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        header = wal_log.read_header(fd)
        if header is None:
            return None
        records = list(wal_log.redoable(fd, header.position))
    except OSError:
        return None
    finally:
        os.close(fd)
    meta = None
    if len(header.meta) >= pagecheck.META_SIZE:
        meta = pagecheck.parse_meta(header.meta, 0, None)
    log = LogRecords(
        header.checkpoint_txnid,
        header.boot_id != wal_log.boot_id(),
        [r.txnid for r in records],
        [r.ops for r in records],
    )
    return log, meta


def _candidates(
    file: DataFile, log: LogRecords | None, checkpoint: MetaPage | None, previous: bool
) -> list[_Survey]:
    slots = meta_pages(file)
    metas = [_Survey(Snapshot(s.meta.txnid, f"meta page {s.slot}", s.meta), True) for s in slots]
    if previous:
        if len(metas) < 2:
            raise CorruptStoreError(
                "only one of LMDB's two meta pages is valid: there is no previous snapshot",
                path=file.path,
                hint="salvage without asking for the previous snapshot",
            )
        return metas[1:]
    if log is None:
        return metas
    if checkpoint is None or checkpoint.txnid != log.checkpoint:
        for survey in metas:
            survey.trusted = not log.restarted  # without the checkpoint, torn or not
        return metas
    saved = _Survey(Snapshot(checkpoint.txnid, "the log's checkpoint", checkpoint), True)
    if log.restarted:
        for survey in metas:
            survey.trusted = False
        return [saved, *metas]
    if any(s.snapshot.txnid == checkpoint.txnid for s in metas):
        return metas
    return [*metas, saved]


def _choose(
    file: DataFile, surveys: list[_Survey], log: LogRecords | None, notes: list[str]
) -> _Survey:
    def reach(s: _Survey) -> int:
        return s.snapshot.txnid if log is None else log.reach(s.snapshot.txnid)

    for trusted in (True, False):
        group = [s for s in surveys if s.trusted == trusted]
        furthest = max((reach(s) for s in group), default=0)
        best: _Survey | None = None
        for survey in group:
            _survey(file, survey)
            if survey.trees is None:
                notes.append(
                    f"the snapshot of transaction {survey.snapshot.txnid} "
                    f"({survey.snapshot.origin}) was passed over: {survey.why}"
                )
                continue
            if best is None or (reach(survey), -survey.damaged) > (reach(best), -best.damaged):
                best = survey
            if best.damaged == 0 and reach(best) == furthest:
                break
        if best is not None:
            return best
    raise CorruptStoreError(
        "no snapshot's main tree can be read: nothing can be salvaged", path=file.path
    )


def _explain(
    chosen: _Survey, surveys: list[_Survey], log: LogRecords | None, previous: bool
) -> list[str]:
    snap = chosen.snapshot
    notes = [f"read the snapshot of transaction {snap.txnid} ({snap.origin})"]
    if previous:
        notes[0] += ", the previous one, as asked"
    if log is not None and log.restarted and chosen.trusted:
        notes.append(
            "the machine restarted since the store was last written, so the newest "
            "tree of data.mdb may be torn: the log's checkpoint was read, as opening "
            "the store would"
        )
    elif not chosen.trusted:
        notes.append(
            "the log's checkpoint cannot be read; the newest tree of data.mdb may be "
            "torn (the machine restarted since the store was last written)"
        )
    for other in surveys:
        if other is chosen or other.trees is None or other.damaged or not chosen.damaged:
            continue
        o = other.snapshot
        older_page = o.origin.startswith("meta page") and o.txnid < snap.txnid
        notes.append(
            f"the snapshot of transaction {o.txnid} ({o.origin}) is intact but lacks "
            "the transactions after it"
            + (
                "; `rstore salvage --previous` (previous=True) salvages it instead"
                if older_page
                else ""
            )
        )
    return notes


def _log_notes(log: LogRecords, txnid: int) -> list[str]:
    newer = log.newer(txnid)
    if log.applied:
        first, last = newer[0], newer[-1]
        span = f"transaction {last}" if first == last else f"transactions {first} to {last}"
        return [
            f"the write-ahead log's {log.applied} newer record"
            f"{'s' if log.applied != 1 else ''} applied ({span})"
        ]
    if newer:
        return [
            f"the write-ahead log holds {len(newer)} intact records newer than the snapshot "
            f"(transactions {newer[0]} to {newer[-1]}) that do not follow it: not applied "
            "(the transactions between are not in the log)"
        ]
    return []


def check_source(path: str) -> str:
    """Refuse what is not a store directory (:class:`StoreNotFoundError`,
    :class:`NotAStoreError`); its data file."""
    data = os.path.join(path, "data.mdb")
    if not os.path.isdir(path):
        if os.path.exists(path):
            raise NotAStoreError(f"{path} is a file, not a store directory")
        raise StoreNotFoundError(f"no store at {path}")
    if not os.path.isfile(data):
        raise NotAStoreError(f"{path} is not an rstore store: it has no data.mdb")
    return data


def open_source(path: str, *, previous: bool = False) -> SalvageSource:
    """The snapshot of the store directory ``path`` that a salvage reads (see the module's
    docstring).  Raises :class:`StoreNotFoundError` / :class:`NotAStoreError` for what is
    not a store, :class:`CorruptStoreError` when no snapshot can be read."""
    data = check_source(path)
    file = DataFile(data)
    try:
        found = _read_log(path)
        log, checkpoint = found if found is not None else (None, None)
        surveys = _candidates(file, log, checkpoint, previous)
        if not surveys:
            raise CorruptStoreError(
                "neither of LMDB's meta pages is valid and the store has "
                "no write-ahead log naming a checkpoint",
                path=data,
            )
        notes: list[str] = []
        chosen = _choose(file, surveys, log, notes)
        assert chosen.trees is not None
        notes = _explain(chosen, surveys, log, previous) + notes
        source = SalvageSource(path, file, chosen.snapshot, log, chosen.trees, notes)
        if log is not None:
            notes += _log_notes(log, chosen.snapshot.txnid)
        return source
    except BaseException:
        file.close()
        raise
