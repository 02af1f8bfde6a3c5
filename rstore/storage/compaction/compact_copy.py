"""The compacted copy of a store's ``data.mdb`` (step 2 of
:mod:`~rstore.storage.compaction.compact`): written by LMDB's compacting copy, checked, fixed
up and flushed, beside ``data.mdb`` as ``data.mdb.compact`` (``compact_intent.COPY_FILE``).

* LMDB is opened on the store's file **without its lock file** (``lock=False``): the store is
  held (no other process uses it), and this process must never open and close a descriptor of
  ``lock.mdb``, which would drop the POSIX locks of the hold.
* The copy (``mdb_env_copyfd1``) writes the meta pages, then the main tree and every
  sub-database's pages, renumbered from page 2; it leaves out the free pages and the free list.
  It runs in C without the GIL; in a thread of its own when progress is wanted.
* Checked and fixed up, opened by LMDB alone (``lock=False`` again): the same number of records
  in every sub-database as the source; in format 3 the ``wal`` position moved to a new log
  generation at the log's first record, and a bulk write's ``walbar`` removed -- the copy is a
  checkpoint of everything, nothing of the old log is needed.
* **Relabelled**: LMDB numbers a copy's transaction 1 (``mm_txnid = 1``) and the fix-up
  commits 2; both meta slots are rewritten with the copy's last state labelled with the
  store's own last transaction id and the one before (``wal_meta.relabel`` and ``restore``).
  A process that opens the store with ``lock.mdb``'s table not rebuilt (its opener waited in
  ``F_SETLKW`` while a compaction was killed after its rename) takes the transaction id from
  that table: it then finds the copy's trees in the slot it reads.  Ids keep growing, as the
  log's header and ``wal.shm`` expect.
* Flushed, and walked again from the file (``pagecheck``) before anything may use it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import lmdb

from rstore.errors import StorageError
from rstore.storage import opening
from rstore.storage.checks import pagecheck
from rstore.storage.compaction import compact_intent
from rstore.storage.engine import wal, wal_log, wal_meta, wal_position
from rstore.storage.engine.faults import crash_point
from rstore.storage.engine.wal_log import Position
from rstore.storage.records import layout

__all__ = ["Copied", "live_pages", "open_source", "write_copy"]

_MAX_DBS = len(layout.ALL_DBS) + 2
_POLL_S = 0.05  # how often progress is reported


def open_source(path: str) -> Any:
    """LMDB on the store's file without its lock file (the store is held: no one else uses
    it), at the map size the file records."""
    return lmdb.open(
        os.fsencode(path), readonly=True, lock=False, create=False, map_size=0, max_dbs=_MAX_DBS
    )


def live_pages(env: Any) -> int:
    """The meta pages, the main tree and every sub-database's (not the free list)."""
    pages = 2 + _tree_pages(env.stat())
    with env.begin() as txn:
        for name in layout.ALL_DBS:
            pages += _tree_pages(txn.stat(env.open_db(name, txn=txn, create=False)))
    return pages


def _tree_pages(stat: dict[str, int]) -> int:
    return int(stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"])


class Copied:
    """The copy, written and checked: the store's format and last transaction, the copy's meta
    page (of that transaction), the log's new position, pages before and after."""

    __slots__ = ("format", "meta", "pages_after", "pages_before", "position", "txnid")

    def __init__(self, fmt: int, txnid: int, position: Position, pages: int) -> None:
        self.format = fmt
        self.txnid = txnid
        self.position = position
        self.pages_before = pages
        self.pages_after = 0
        self.meta = b""


def write_copy(path: str, fmt: int, progress: Callable[[int], None] | None) -> Copied:
    """The copy, written, checked and flushed (see the module); removed on any failure (the
    store is untouched until then)."""
    copy_path = os.path.join(path, compact_intent.COPY_FILE)
    source = open_source(path)
    try:
        dbs, _ = opening.open_dbs(source, path, create=False)
        with source.begin() as txn:
            counts = _counts(txn, dbs)
            position = _fresh_position(txn, dbs)
        info = source.info()
        copied = Copied(fmt, int(info["last_txnid"]), position, int(info["last_pgno"]) + 1)
        fd = _create_copy(path, copy_path)
        try:
            _copy(source, fd, progress)
        finally:
            os.close(fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(copy_path)
        raise
    finally:
        source.close()
    try:
        _finish_copy(copy_path, copied, counts)
        compact_intent.sync_directory(path)
    except BaseException:
        with suppress(OSError):
            os.unlink(copy_path)
        raise
    crash_point("compact-copied")
    return copied


def _counts(txn: Any, dbs: dict[bytes, Any]) -> dict[bytes, int]:
    return {name: int(txn.stat(db)["entries"]) for name, db in dbs.items()}


def _fresh_position(txn: Any, dbs: dict[bytes, Any]) -> Position:
    """Where the log starts again after the compaction: its first record, a new generation,
    the sequence numbers going on (``wal.shm``'s flushed word stays true)."""
    last = wal_position.read(txn, dbs[layout.DB_META])
    return Position(last.generation + 1, wal_log.RECORDS_START, last.lsn, 0)


def _create_copy(path: str, copy_path: str) -> int:
    """The copy's file, new (a leftover was removed), with ``data.mdb``'s mode and owner."""
    st = os.stat(os.path.join(path, opening.DATA_FILE))
    fd = os.open(copy_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, st.st_mode & 0o7777)
        with suppress(OSError):  # only root may give a file away
            os.fchown(fd, st.st_uid, st.st_gid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy(source: Any, fd: int, progress: Callable[[int], None] | None) -> None:
    """LMDB's compacting copy into ``fd``.  It runs in C without the GIL, in a thread of its
    own when progress is wanted: this thread reports the bytes written meanwhile."""
    if progress is None:
        source.copyfd(fd, compact=True)
        return
    failure: list[BaseException] = []

    def run() -> None:
        try:
            source.copyfd(fd, compact=True)
        except BaseException as exc:  # handed to the calling thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="rstore compact copy", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_POLL_S)
            progress(os.fstat(fd).st_size)
    finally:
        worker.join()  # ^C: the copy cannot be stopped half-way; the caller removes it
    if failure:
        raise failure[0]
    progress(os.fstat(fd).st_size)  # the end, even of a copy over before the first look


def _finish_copy(copy_path: str, copied: Copied, counts: dict[bytes, int]) -> None:
    """The copy written: checked, fixed up, relabelled, walked (``copied.meta`` and
    ``pages_after`` set)."""
    env = lmdb.open(
        os.fsencode(copy_path), subdir=False, lock=False, create=False, map_size=0,
        max_dbs=_MAX_DBS, sync=False,
        metasync=False, meminit=True,
    )  # fmt: skip
    try:
        dbs = {name: env.open_db(name, create=False) for name in layout.ALL_DBS}
        with env.begin(write=True) as txn:
            if _counts(txn, dbs) != counts:
                raise StorageError(f"{copy_path}: the compacted copy lacks records; not used")
            meta_db = dbs[layout.DB_META]
            wal_position.write(txn, meta_db, copied.position)
            txn.delete(wal.META_BARRIER, db=meta_db)  # the copy is a checkpoint of all
        info = env.info()
        last, copied.pages_after = int(info["last_txnid"]), int(info["last_pgno"]) + 1
    finally:
        env.close()
    fd = os.open(copy_path, os.O_RDWR | os.O_CLOEXEC)
    try:
        wal_meta.restore(fd, wal_meta.relabel(wal_meta.capture(fd, last), copied.txnid))
        os.fsync(fd)
        copied.meta = wal_meta.capture(fd, copied.txnid)
    finally:
        os.close(fd)
    problems = pagecheck.verify(copy_path, copied.txnid).problems
    if problems:
        raise StorageError(f"{copy_path}: the compacted copy failed its check ({problems[0]})")
