"""The write-ahead log of a store: one flush per durable commit (docs/durability.md).

One :class:`WriteAheadLog` per environment per process.  LMDB runs with ``MDB_NOSYNC``; every
write transaction's changes (:mod:`rstore.storage.wal_capture`) are written as one record
(:mod:`rstore.storage.wal_log`) under LMDB's writer lock, at the position LMDB holds in the
``wal`` record of the meta sub-database; after LMDB's commit the record is marked committed and
the log flushed once (shared between writers, :class:`~rstore.storage.durable.MetaFlusher` on
the log).  Checkpoints flush ``data.mdb`` and name the checkpoint in the log's header; this
process pins a checkpoint no newer than the header's with a read transaction while it writes,
so the header's tree is never overwritten.  :mod:`rstore.storage.wal_recovery` creates the log
and brings a store back from it after an OS crash or power loss.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from rstore.errors import StorageError
from rstore.storage import layout, wal_capture, wal_log, wal_meta
from rstore.storage.checkpointer import Checkpointer
from rstore.storage.faults import crash_point
from rstore.storage.log_flush import LogFlusher
from rstore.storage.wal_log import Position

__all__ = [
    "LOG_FILE", "META_BARRIER", "META_WAL", "WriteAheadLog", "boot_id", "read_position",
    "write_position",
]  # fmt: skip

LOG_FILE = "wal.log"
SHARED_FILE = "wal.shm"
META_WAL = b"wal"
#: In ``meta`` while the last record is a barrier: that bulk transaction's id.
META_BARRIER = b"walbar"
_POSITION = struct.Struct("<QQQI")
_TXNID = struct.Struct("<Q")
#: Start the log again at the front once it has grown past this (after a checkpoint).
LOG_LIMIT = 64 << 20
#: A process that wrote makes a checkpoint (if none of another process covers its candidate pin)
#: once the last one is this old, or once it made this many commits since its pin moved: while
#: a pin stays, every commit writes fresh pages (~6 for a single XADD), so this bounds the
#: file's growth between checkpoints (~1.5 MiB for a lone writer).
CHECKPOINT_AGE_S = 0.05
CHECKPOINT_COMMITS = 256
#: ... but not more often than this (each checkpoint flushes data.mdb).
CHECKPOINT_MIN_S = 0.005
_ZEROS = bytes(16)  # written after each record: a scan stops there until the next one


def boot_id() -> bytes:
    """The running kernel's boot id (16 bytes); ``RSTORE_TEST_BOOT_ID`` overrides it (tests)."""
    text = os.environ.get("RSTORE_TEST_BOOT_ID")
    if text is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                text = f.read().strip()
        except OSError:
            text = "00000000-0000-0000-0000-000000000000"
    return uuid.UUID(text).bytes


def read_position(raw: Any, meta_db: Any) -> Position:
    """The log position recorded in LMDB (sealed like every record of format 2 and later)."""
    value = raw.get(META_WAL, db=meta_db)
    payload = None if value is None else layout.unseal(META_WAL, value)
    if payload is None or len(payload) != _POSITION.size:
        raise StorageError("the store has a write-ahead log but no valid log position")
    return Position(*_POSITION.unpack(payload))


def read_position_of(env: Any) -> Position:
    """The log position of the last commit of ``env`` (an :class:`Env`; tests, diagnostics)."""
    return env.read(lambda txn: read_position(txn._raw, txn._dbs[layout.DB_META]))  # type: ignore[no-any-return]


def write_position(raw: Any, meta_db: Any, position: Position) -> None:
    raw.put(META_WAL, layout.seal(META_WAL, _POSITION.pack(*position)), db=meta_db)


class WriteAheadLog:
    """This process's use of a store's log: records, flushes, checkpoints and its pin."""

    def __init__(
        self,
        store_path: str,
        data_path: str,
        env: Any,
        dbs: dict[bytes, Any],
        step: Callable[[], float | None],
    ) -> None:
        """``step``: what the checkpointer thread runs (:meth:`maybe_checkpoint`, inside the
        environment's gate)."""
        self._env = env
        self._dbs = dbs
        self._names = {handle: name for name, handle in dbs.items()}
        self.path = os.path.join(store_path, LOG_FILE)
        self._data_path = data_path
        self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        self._data_fd = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
        self.flusher = LogFlusher(store_path, self.path, shared_name=SHARED_FILE, fd=self._fd)
        self._pin: Any = None  # a read transaction on this process's checkpoint
        self._candidate: Any = None  # the next pin, once a checkpoint covers it
        self._candidate_txnid = 0
        self._commits = 0  # records this process wrote (committed or not)
        self._commits_at_pin = 0  # ... when its pin's snapshot was taken (about)
        self._last_txnid = 0  # the transaction of the last of them
        self._pin_txnid = 0
        self._poked = 0.0  # when the checkpointer thread was last poked
        self._unmarked: Position | None = None  # a sync=False record not marked yet
        self._allocated = 0
        self._writer: wal_log.RecordWriter | None = None  # the record being written, if any
        # (txnid, the position after its record) of this process's last record: LMDB's own
        # position while that transaction is the last commit (then no need to read it).
        self._appended: tuple[int, Position] = (-1, Position(0, 0, 0, 0))
        self._last_commit: tuple[int, Position] = (-1, Position(0, 0, 0, 0))
        self._lock = threading.Lock()  # checkpoints of this process, one at a time
        self._pin_lock = threading.Lock()  # the pin fields, held for no wait
        # The header's flock (below) is taken on this process's one descriptor of data.mdb,
        # which all its threads share, so it excludes other processes only: a writer
        # restarting the log and the checkpointer thread take this lock too.
        self._header_lock = threading.Lock()
        self.checkpointer = Checkpointer(step, f"rstore checkpoints {store_path}")

    # ------------------------------------------------------------------ the write path

    def wrap(self, raw: Any, parent: wal_capture.LoggedTxn | None = None) -> Any:
        """``raw`` recording its changes; an outermost one (no ``parent``) hands them to the
        log in pieces as they pass :data:`wal_capture.SPILL_BYTES`."""
        if parent is not None:
            return wal_capture.new_txn(raw, self._names, parent)
        logged = wal_capture.new_txn(raw, self._names)
        logged.spill = lambda body: self._spill(logged, body)
        self._writer = None
        return logged

    def ensure_pin(self, raw: Any) -> None:
        """Inside a write transaction, before it changes anything: this process must hold a
        pin; without one, make a checkpoint of the last commit first (holding the lock)."""
        if self._pin is None:
            self._checkpoint_locked(raw)

    def _next_position(self, raw: Any) -> tuple[int, Position, bool]:
        """The id of write transaction ``raw``, where its record goes, and whether the last
        record is a barrier (a bulk transaction's; :meth:`append_barrier`).  After this
        process's own record, when that was LMDB's last commit, the position is known (and
        no barrier is there: a record after one deletes it); else LMDB holds it.  No record
        may follow a barrier unless a checkpoint covers its transaction: without one, this
        makes one first.  A log grown past :data:`LOG_LIMIT` starts again at the front,
        after a checkpoint of the last commit that names the new start."""
        txnid = int(raw.id())
        last, position = self._last_commit
        barrier = None
        if last != txnid - 1:
            meta = self._dbs[layout.DB_META]
            barrier = raw.get(META_BARRIER, db=meta)
            if barrier is not None:
                payload = layout.unseal(META_BARRIER, barrier)
                covered = None  # the barrier's transaction
                if payload is not None and len(payload) == _TXNID.size:
                    covered = _TXNID.unpack(payload)[0]
                header = wal_log.read_header(self._fd)
                if covered is None or header is None or header.checkpoint_txnid < covered:
                    self._checkpoint_locked(raw)  # of the last commit: the barrier's or later
            position = read_position(raw, meta)
        if position.offset > LOG_LIMIT:
            position = Position(position.generation + 1, wal_log.RECORDS_START, position.lsn, 0)
            self._checkpoint_locked(raw, position)
        return txnid, position, barrier is not None

    def append_barrier(self, raw: Any) -> Position:
        """The record of a bulk transaction, before LMDB's commit: a barrier, in place of its
        changes (the caller makes a checkpoint once it committed); its position."""
        txnid, position, _ = self._next_position(raw)
        after = wal_log.write_record(
            self._fd, position, txnid, wal_log.BARRIER_BODY, _ZEROS, self._allocate
        )
        self._written(raw, txnid, after)
        meta = self._dbs[layout.DB_META]
        raw.put(META_BARRIER, layout.seal(META_BARRIER, _TXNID.pack(txnid)), db=meta)
        return position

    def _begin(self, logged: wal_capture.LoggedTxn) -> tuple[int, Position]:
        """Where the record of ``logged`` goes (:meth:`_next_position`): its transaction's id
        and position; a record after a barrier deletes it."""
        txnid, position, after_barrier = self._next_position(logged.raw)
        if after_barrier:
            logged.delete(META_BARRIER, db=self._dbs[layout.DB_META])
        return txnid, position

    def _spill(self, logged: wal_capture.LoggedTxn, body: bytes) -> None:
        if self._writer is None:  # the record of this transaction, begun
            txnid, position = self._begin(logged)
            self._writer = wal_log.RecordWriter(self._fd, position, txnid, self._allocate)
        self._writer.add_encoded(body)

    def append(self, logged: wal_capture.LoggedTxn, txnid: int) -> Position | None:
        """Finish the transaction's record (before LMDB's commit): its position, or ``None``
        when it changed nothing."""
        del txnid  # the record carries the id of the transaction it was begun in
        writer = self._writer
        if writer is None:
            if not logged.pending:
                return None
            txnid, at = self._begin(logged)  # nothing spilled: one write
            after = wal_log.write_record(self._fd, at, txnid, logged.take(), _ZEROS, self._allocate)
        else:
            self._writer = None
            txnid, at = writer.txnid, writer.position
            after = writer.finish(logged.take(), _ZEROS)
        self._written(logged.raw, txnid, after)
        self._appended = (txnid, after)
        return at

    def _written(self, raw: Any, txnid: int, after: Position) -> None:
        """Transaction ``txnid``'s record is in the log: LMDB's position moves past it."""
        write_position(raw, self._dbs[layout.DB_META], after)
        self._commits += 1
        self._last_txnid = txnid

    def lmdb_committed(self) -> None:
        """Right after LMDB committed the last :meth:`append`'s transaction (before another)."""
        self._last_commit = self._appended

    def _allocate(self, end: int) -> None:
        if end > self._allocated:  # the file's size is checked only past the last known one
            self._allocated = wal_log.grow(self._fd, end)

    def sync(self) -> None:
        """Flush the log: every commit that returned before this call is then durable."""
        self._mark_pending()
        os.fdatasync(self._fd)

    def committed(self, position: Position, *, durable: bool) -> None:
        """After LMDB's commit of the record at ``position``.  A durable write marks it at
        once (its flush must prove it committed).  Otherwise marking waits for :meth:`sync`
        or the close: a record only needs its mark while it is the log's last (the next
        record proves it), and a write that is not flushed may be lost after a crash anyway
        -- one system call less per write."""
        if durable:
            crash_point("lmdb-committed")
            self._mark(position)
            self.flusher.note_marked(position.lsn)
            crash_point("record-marked")
        else:
            self._unmarked = position

    def _mark_pending(self) -> None:
        pending, self._unmarked = self._unmarked, None
        if pending is not None:
            self._mark(pending)

    def _mark(self, position: Position) -> None:
        """The record at ``position`` is committed."""
        try:
            wal_log.mark_committed(self._fd, position)
        except OSError as exc:
            raise StorageError(
                f"{self.path}: the write was committed but marking it in the log failed "
                f"({exc}); it may be lost if the machine crashes",
                hint="check the disk; the store stays consistent",
            ) from exc

    # ------------------------------------------------------------------ checkpoints

    def _checkpoint_locked(self, raw: Any, restart: Position | None = None) -> None:
        """A checkpoint of the last commit, made inside a write transaction (LMDB's lock);
        ``restart``: the log starts again there (the header names it)."""
        txnid = int(raw.id()) - 1
        meta = wal_meta.capture(self._data_fd, txnid)
        position = restart or read_position(raw, self._dbs[layout.DB_META])
        pin = self._env.begin(buffers=True)
        try:
            self._publish(txnid, meta, position, replace_equal=restart is not None)
        except BaseException:
            pin.abort()
            raise
        self._swap_pin(pin)

    def maybe_checkpoint(self) -> float | None:
        """Move this process's pin forward when it has written since (run by the
        checkpointer thread, :meth:`poke`); ``None`` when the pin covers every write of this
        process, else how many seconds to wait before looking again.

        A pin may only move to a transaction that a published checkpoint covers.  So a
        process first opens a *candidate* (a read transaction on the latest commit) and
        swaps it in once the header names a checkpoint at or after it -- whoever made that
        checkpoint.  Only when the header's checkpoint is older than ``CHECKPOINT_AGE_S``,
        or the process made ``CHECKPOINT_COMMITS`` commits since its pin moved, does it make
        one itself, and only one process at a time does (a lock on ``wal.shm``): with many
        writer processes one data flush serves every pin."""
        with self._lock:
            if self._candidate is None and self._pin_txnid >= self._last_txnid:
                return None  # the pin covers every write of this process
            header = wal_log.read_header(self._fd)
            if header is None:
                return None
            candidate = self._candidate
            if candidate is not None and header.checkpoint_txnid >= self._candidate_txnid:
                self._swap_pin(candidate)
                return CHECKPOINT_AGE_S  # look again: writes since were not all poked
            if candidate is None:
                candidate = self._env.begin(buffers=True)
                with self._pin_lock:
                    self._candidate, self._candidate_txnid = candidate, int(candidate.id())
            age = (time.time_ns() - header.written_ns) / 1e9
            since = self._commits - self._commits_at_pin
            if age < CHECKPOINT_AGE_S and (since < CHECKPOINT_COMMITS or age < CHECKPOINT_MIN_S):
                return (CHECKPOINT_MIN_S if since >= CHECKPOINT_COMMITS else CHECKPOINT_AGE_S) - age
            lock = self.flusher.shared_fd  # -1: no shared file; every process checkpoints
            try:
                if lock >= 0:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return CHECKPOINT_AGE_S  # another process is making one: it may cover ours
            try:
                self._checkpoint()
            finally:
                if lock >= 0:
                    fcntl.flock(lock, fcntl.LOCK_UN)
            return CHECKPOINT_AGE_S  # look again (pokes are throttled); None once all is covered

    def poke(self) -> None:
        """After a commit: let the checkpointer thread look when a checkpoint may be due --
        about every ``CHECKPOINT_AGE_S``, or after ``CHECKPOINT_COMMITS`` commits (waking a
        thread after every write would cost each write its share of the GIL)."""
        now = time.monotonic()
        since = self._commits - self._commits_at_pin
        if since < CHECKPOINT_COMMITS and now - self._poked < CHECKPOINT_AGE_S:
            return
        self._poked = now
        self.checkpointer.poke()

    def checkpoint(self) -> None:
        """Make a checkpoint of the last commit now (and pin it)."""
        with self._lock:
            self._checkpoint()

    def _checkpoint(self) -> None:
        # Reader slots of dead processes pin old snapshots as well: clear them as the pin
        # moves (safe at any time: the pins that protect checkpoints belong to live writers).
        self._env.reader_check()
        writer = self._env.begin(write=True, buffers=True)  # LMDB's lock, briefly
        try:
            txnid = int(writer.id()) - 1
            meta = wal_meta.capture(self._data_fd, txnid)
            position = read_position(writer, self._dbs[layout.DB_META])
            pin = self._env.begin(buffers=True)
        finally:
            writer.abort()
        try:
            self._publish(txnid, meta, position)
        except BaseException:
            pin.abort()
            raise
        self._swap_pin(pin)

    def _publish(
        self, txnid: int, meta: bytes, position: Position, *, replace_equal: bool = False
    ) -> None:
        os.fdatasync(self._data_fd)  # every tree up to txnid, and its meta page
        crash_point("checkpoint-data-flushed")
        # The header's lock is a flock of data.mdb (LMDB never flocks it): taken while
        # LMDB's writer lock may be held, so never the lock of opening (wal.log), which is
        # held while waiting for LMDB's lock.
        with self._header_lock:
            fcntl.flock(self._data_fd, fcntl.LOCK_EX)
            try:
                current = wal_log.read_header(self._fd)
                newer = current is None or current.checkpoint_txnid < txnid
                if newer or (
                    replace_equal and current is not None and current.checkpoint_txnid == txnid
                ):
                    wal_log.write_header(self._fd, txnid, position, boot_id(), meta)
                    os.fdatasync(self._fd)
            finally:
                fcntl.flock(self._data_fd, fcntl.LOCK_UN)

    def _swap_pin(self, pin: Any) -> None:
        with self._pin_lock:  # the writer (log restart) and the checkpointer thread both swap
            candidate, self._candidate = self._candidate, None
            old, self._pin = self._pin, pin
            self._pin_txnid = int(pin.id())
            self._commits_at_pin = self._commits
        for txn in (candidate, old):
            if txn is not None and txn is not pin:  # the new pin is not older than either
                with suppress(Exception):
                    txn.abort()

    def drop_pin(self) -> None:
        """Before the map is resized, the environment closed or the process forked."""
        with self._pin_lock:
            dropped = (self._pin, self._candidate)
            self._pin = self._candidate = None
        for txn in dropped:
            if txn is not None:
                with suppress(Exception):
                    txn.abort()

    def abandon(self) -> None:
        """In a forked child (:mod:`rstore.storage.forks`): let go of what was inherited
        without using it -- no flush, no mark, no lock (a parent thread may hold this
        object's), and no abort of the pins (their reader slots are the parent's: py-lmdb
        leaves a transaction freed in a child alone).  Only the child's copies of the
        descriptors are closed."""
        self._pin = self._candidate = None
        self.flusher.abandon()
        for fd in (self._fd, self._data_fd):
            with suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        self.checkpointer.close()
        self.drop_pin()
        with suppress(StorageError):  # a close does not fail; the mark only helps a recovery
            self._mark_pending()
        self.flusher.close()  # flushes the log
        for fd in (self._fd, self._data_fd):
            with suppress(OSError):
                os.close(fd)
