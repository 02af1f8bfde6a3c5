"""Creating a store's write-ahead log, and bringing a store back from it after an OS crash or
a power loss (docs/durability.md, "Recovery").

Both run while the opening process holds the log's ``flock`` (:func:`open_lock`), so they
happen once however many processes open the store at the same time: :func:`create` gives a new
store, or one of an older format, its log; after a restart (the header's boot id is not the
running kernel's, :func:`needs_recovery`) :func:`restore_checkpoint` writes the checkpoint's
meta page back before LMDB opens, and :func:`recover` redoes the records after it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from contextlib import suppress
from typing import Any, NamedTuple

import lmdb

from rstore import logs
from rstore.errors import CorruptStoreError, StorageError
from rstore.storage.engine import upgrade, wal_capture, wal_log, wal_meta, wal_position
from rstore.storage.engine.faults import crash_point
from rstore.storage.engine.log_flush import read_word
from rstore.storage.engine.wal import LOG_FILE, SHARED_FILE
from rstore.storage.engine.wal_log import Position, boot_id
from rstore.storage.engine.wal_position import META_WAL
from rstore.storage.engine.wal_position import write as write_position
from rstore.storage.records import layout

__all__ = [
    "OpenLock", "check_loss", "create", "needs_recovery", "open_lock", "recover",
    "remove_created", "restore_checkpoint",
]  # fmt: skip


class OpenLock(NamedTuple):
    """The log, open and locked by :func:`open_lock`; ``created``: this opener created the
    file (there was none: a new store, or one of an older format)."""

    fd: int
    created: bool
    path: str


def open_lock(store_path: str) -> OpenLock:
    """The log, opened (created if need be) and locked exclusively: held while a process opens
    the store, so that creating the log, upgrading and recovering happen once."""
    path = os.path.join(store_path, LOG_FILE)
    created = True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        created = False
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return OpenLock(fd, created, path)


def remove_created(lock: OpenLock) -> None:
    """An open that failed before the store changed: the log it created goes (still locked, so
    no other opener can have begun to use it)."""
    with suppress(OSError):
        if wal_log.read_header(lock.fd) is None:
            os.unlink(lock.path)


def create(
    fd: int,
    data_path: str,
    env: Any,
    dbs: dict[bytes, Any],
    version: int,
    progress: Callable[[int, int], None] | None = None,
) -> int | None:
    """Give a store its log (``fd`` from :func:`open_lock`): a new store, or one of an older
    format ``version``, which the same transaction brings to the current format
    (:func:`rstore.storage.engine.upgrade.bring_current`).  In order: the log's space, the ``wal``
    position and the format in one LMDB transaction, ``data.mdb`` flushed, the header written
    and flushed.  Cut short anywhere, the log has no header and the next writable open does it
    again.  Returns how many records an upgrade rewrote, ``None`` when nothing was upgraded;
    nothing is done when the header exists."""
    if wal_log.read_header(fd) is not None:
        upgrade.forget_old_files(os.path.dirname(data_path))  # an upgrade killed right after
        return None
    data = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.posix_fallocate(fd, 0, wal_log.RECORDS_START)
        rewritten = _position_and_format(env, dbs, data_path, version, progress)
        txnid = int(env.info()["last_txnid"])  # LMDB commits nothing if all was there
        os.fdatasync(data)
        crash_point("upgrade-committed")
        position = wal_position.committed(env, dbs)
        wal_log.write_header(fd, txnid, position, boot_id(), wal_meta.capture(data, txnid))
        os.fdatasync(fd)
    finally:
        os.close(data)
    upgrade.forget_old_files(os.path.dirname(data_path))  # also after an upgrade cut short
    return rewritten


def _position_and_format(
    env: Any,
    dbs: dict[bytes, Any],
    data_path: str,
    version: int,
    progress: Callable[[int, int], None] | None,
) -> int | None:
    """The log's first position and the current format, committed in one transaction (the map
    doubled and the transaction run again when an upgrade fills it)."""
    while True:
        raw = env.begin(write=True)
        try:
            meta = dbs[layout.DB_META]
            rewritten = None
            if version < layout.FORMAT_VERSION:
                rewritten = upgrade.bring_current(raw, dbs, version, data_path, progress)
            if raw.get(META_WAL, db=meta) is None:
                write_position(raw, meta, Position(1, wal_log.RECORDS_START, 1, 0))
            raw.commit()
            return rewritten
        except lmdb.MapFullError:
            raw.abort()
            env.set_mapsize(int(env.info()["map_size"]) * 2)
        except BaseException:
            raw.abort()
            raise


def needs_recovery(fd: int) -> bool:
    """Whether the log's header was written before the running kernel booted."""
    header = wal_log.read_header(fd)
    return header is not None and header.boot_id != boot_id()


def check_loss(fd: int, store_path: str, data_path: str) -> None:
    """Before recovery changes anything: refuse when it would lose a write acknowledged as
    durable -- the log's shared word (``wal.shm``) says records up to some sequence number were
    flushed, and the log's chain of records ends before it (a damaged or truncated log).  When
    only ``data.mdb`` names later commits than the log holds, those were never made durable
    (``sync=False`` writes since the last flush, a bulk write that did not return): recovery
    drops them as documented, and says so in the log of the ``rstore.storage`` logger."""
    header = wal_log.read_header(fd)
    if header is None:
        raise StorageError(f"{data_path}: the write-ahead log has no valid header")
    last_lsn, last_txnid = header.position.lsn - 1, header.checkpoint_txnid
    for record in wal_log.redoable(fd, header.position):
        last_lsn, last_txnid = record.position.lsn, record.txnid
    durable = read_word(os.path.join(store_path, SHARED_FILE), fd)
    data = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        committed = wal_meta.newest_txnid(data)
    finally:
        os.close(data)
    if durable > last_lsn:
        named = f" (data.mdb names transaction {committed})" if committed else ""
        raise CorruptStoreError(
            f"the write-ahead log was flushed up to record {durable}, but its records end at "
            f"record {last_lsn} (transaction {last_txnid}){named}: recovering after the "
            f"restart would lose {durable - last_lsn} acknowledged transactions, so the store "
            "was not opened and nothing in it was changed",
            path=os.path.join(store_path, LOG_FILE),
            hint=f"copy out what data.mdb holds with `rstore salvage {store_path} NEW_STORE` "
            "(rstore.salvage_store)",
        )
    if committed is not None and committed > last_txnid:
        logs.warn(
            logs.STORAGE,
            "%s: recovery after a restart drops transactions %d to %d: committed but not in "
            "the log on disk (never made durable: sync=False writes since the last flush, or a "
            "bulk write that did not return)", store_path, last_txnid + 1, committed,
        )  # fmt: skip


def restore_checkpoint(fd: int, data_path: str) -> None:
    """First step of recovery, before LMDB opens: write the checkpoint's meta page back."""
    header = wal_log.read_header(fd)
    if header is None:
        raise StorageError(f"{data_path}: the write-ahead log has no valid header")
    data = os.open(data_path, os.O_RDWR | os.O_CLOEXEC)
    try:
        wal_meta.restore(data, header.meta)
        os.fdatasync(data)
        crash_point("recovery-meta-restored")
    finally:
        os.close(data)


def recover(fd: int, data_path: str, env: Any, dbs: dict[bytes, Any]) -> int:
    """Second step, LMDB open at the checkpoint: redo the log; how many records were redone.
    Ends with a checkpoint whose header carries the running kernel's boot id."""
    data = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        header = wal_log.read_header(fd)
        if header is None:
            raise StorageError(f"{data_path}: the write-ahead log has no valid header")
        raw = env.begin(write=True)
        try:
            meta_db = dbs[layout.DB_META]
            start = header.position
            count, last = 0, start
            for record in wal_log.redoable(fd, start):
                wal_capture.redo(raw, dbs, record.ops)
                count += 1
                last = wal_log.after(record)
            fresh = Position(last.generation + 1, wal_log.RECORDS_START, last.lsn, 0)
            write_position(raw, meta_db, fresh)
            txnid = int(raw.id())
            raw.commit()
        except BaseException:
            raw.abort()
            raise
        os.fdatasync(data)
        crash_point("recovery-redone")
        meta = wal_meta.capture(data, txnid)
        wal_log.write_header(fd, txnid, fresh, boot_id(), meta)
        os.fdatasync(fd)
        return count
    finally:
        os.close(data)
