"""The write-ahead log of a store: one flush per durable commit (docs/durability.md).

One :class:`WriteAheadLog` per environment per process.  LMDB runs with ``MDB_NOSYNC``; every
write transaction's changes (:mod:`rstore.storage.engine.wal_capture`) are written as one record
(:mod:`rstore.storage.engine.wal_log`) under LMDB's writer lock, at the position LMDB holds in the
``wal`` record of the meta sub-database; after LMDB's commit the record is marked committed and
the log flushed once (shared between writers and processes,
:class:`~rstore.storage.engine.log_flush.LogFlusher`).  Checkpoints flush ``data.mdb`` and name the
checkpoint in the log's header; this process pins a checkpoint no newer than the header's with
a read transaction while it writes, so the header's tree is never overwritten.
:mod:`rstore.storage.engine.wal_recovery` creates the log and brings a store back from it after an
OS
crash or power loss.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from rstore.errors import StorageError
from rstore.storage.engine import faults, wal_capture, wal_log, wal_position
from rstore.storage.engine.log_flush import READER_GRACE_S, LogFlusher
from rstore.storage.engine.wal_checkpoints import Checkpoints
from rstore.storage.engine.wal_log import Position
from rstore.storage.failures import translate_os
from rstore.storage.records import layout

__all__ = ["LOG_FILE", "META_BARRIER", "SHARED_FILE", "WriteAheadLog"]

LOG_FILE = "wal.log"
SHARED_FILE = "wal.shm"
#: In ``meta`` while the last record is a barrier: that bulk transaction's id.
META_BARRIER = b"walbar"
_TXNID = struct.Struct("<Q")
#: Start the log again at the front once it has grown past this (after a checkpoint).
LOG_LIMIT = 64 << 20
_ZEROS = bytes(16)  # written after each record: a scan stops there until the next one


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
        """``step``: what the checkpointer thread runs (:meth:`step`, inside the
        environment's gate)."""
        self._env = env
        self._store_path = store_path
        self._dbs = dbs
        self._names = {handle: name for name, handle in dbs.items()}
        self.path = os.path.join(store_path, LOG_FILE)
        self._data_path = data_path
        self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        self._data_fd = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
        self.flusher = LogFlusher(self.path, os.path.join(store_path, SHARED_FILE), self._fd)
        self.flusher.forget_if_ahead(wal_position.committed(env, dbs).lsn - 1)
        self.checkpoints = Checkpoints(
            env, dbs, self._fd, self._data_fd, self.flusher, step,
            f"rstore checkpoints {store_path}",
        )  # fmt: skip
        self._last_txnid = 0  # the transaction of this process's last record
        self._allocated = 0  # the log file's size, as far as known (checked past it only)
        self._writer: wal_log.RecordWriter | None = None  # the record being written, if any
        # (txnid, the position after its record) of this process's last record: LMDB's own
        # position while that transaction is the last commit (then no need to read it).
        self._appended: tuple[int, Position] = (-1, Position(0, 0, 0, 0))
        self._last_commit: tuple[int, Position] = (-1, Position(0, 0, 0, 0))

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

    def prepare(self) -> None:
        """Before a write transaction of this process: it holds a pin
        (:meth:`~rstore.storage.engine.wal_checkpoints.Checkpoints.prepare`).  Nothing is
        written yet, so a failure (a checkpoint's flush) fails the write as not stored."""
        try:
            self.checkpoints.prepare()
        except OSError as exc:
            raise translate_os(exc, self._store_path, "write the log of") from exc

    def begin(self, raw: Any, *, bulk: bool = False) -> Any:
        """Write transaction ``raw``, recording its changes (:meth:`wrap`; a ``bulk`` one as
        it is: its changes are not recorded), once this process holds a pin: without one (it
        went since :meth:`prepare`), a checkpoint of the last commit is made first, holding
        LMDB's lock, before anything is written."""
        self.checkpoints.ensure(raw)
        return raw if bulk else self.wrap(raw)

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
                    self.checkpoints.make_locked(raw)  # of the last commit: the barrier's or later
            position = wal_position.read(raw, meta)
        if position.offset > LOG_LIMIT:
            position = Position(position.generation + 1, wal_log.RECORDS_START, position.lsn, 0)
            self.checkpoints.make_locked(raw, position)
        return txnid, position, barrier is not None

    def append_barrier(self, raw: Any) -> Position:
        """The record of a bulk transaction, before LMDB's commit: a barrier, in place of its
        changes (the caller makes a checkpoint once it committed); its position."""
        txnid, position, _ = self._next_position(raw)
        after, self._allocated = wal_log.write_record(
            self._fd, position, txnid, wal_log.BARRIER_BODY, _ZEROS, self._allocated
        )
        meta = self._dbs[layout.DB_META]
        wal_position.write(raw, meta, after)
        self._last_txnid = txnid
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
            self._writer = wal_log.RecordWriter(self._fd, position, txnid, self._allocated)
        self._writer.add_encoded(body)

    def append(self, logged: wal_capture.LoggedTxn) -> Position | None:
        """Finish the transaction's record (before LMDB's commit) and move LMDB's position past
        it: the record's position, or ``None`` when the transaction changed nothing."""
        writer = self._writer
        if writer is None:
            if not logged.pending:
                return None
            txnid, at = self._begin(logged)  # nothing spilled: one write
            after, self._allocated = wal_log.write_record(
                self._fd, at, txnid, logged.take(), _ZEROS, self._allocated
            )
        else:
            self._writer = None
            txnid, at = writer.txnid, writer.position  # the id of the transaction it began in
            after = writer.finish(logged.take(), _ZEROS)
            self._allocated = writer.allocated
        wal_position.write(logged.raw, self._dbs[layout.DB_META], after)
        self._last_txnid = txnid
        self._appended = (txnid, after)
        return at

    def lmdb_committed(self) -> None:
        """Right after LMDB committed the last :meth:`append`'s transaction (before another)."""
        self._last_commit = self._appended

    def sync(self) -> None:
        """Flush the log: every commit that returned before this call is then durable."""
        os.fdatasync(self._fd)

    def mark(self, position: Position) -> None:
        """Right after LMDB's commit of a ``sync=False`` (or relaxed) record at ``position``:
        mark it committed, one ``pwrite``, no flush.  A record needs its mark while it is the
        log's last (the next one proves it), and the process may be killed right after the
        write returned -- after a clean restart the kernel has written the mark back, and
        recovery redoes the record."""
        try:
            wal_log.mark_committed(self._fd, position)
        except OSError as exc:
            raise StorageError(
                f"{self.path}: the write was committed but marking it in the log failed "
                f"({exc}); it may be lost if the machine crashes",
                hint="check the disk; the store stays consistent",
            ) from exc

    def make_durable(self, position: Position, readers_woken: bool) -> None:
        """After LMDB's commit of the record at ``position`` (``sync=True``), once the lead
        has passed on: mark it committed, flush the log or find it flushed (joining a flush
        another writer of any process makes), let the checkpointer look.  ``readers_woken``:
        readers were woken before the flush; one of their commits may cover it
        (:data:`~rstore.storage.engine.log_flush.READER_GRACE_S`).  A failure here is a
        failure after the commit: the writes are told they are stored but may not be on
        disk."""
        if faults.armed is not None:
            faults.crash_point("lmdb-committed")
        self.mark(position)
        if faults.armed is not None:
            faults.crash_point("record-marked")
        self.flusher.make_durable(position.lsn, READER_GRACE_S if readers_woken else 0.0)
        self.checkpoints.committed(self._last_txnid)

    def poke(self, readers_woken: bool = False) -> None:
        """After a ``sync=False`` (or relaxed) commit of this process: let the checkpointer
        look when one may be due (``readers_woken`` is not used: nothing is flushed)."""
        del readers_woken
        self.checkpoints.committed(self._last_txnid)

    def bulk_committed(self, readers_woken: bool) -> None:
        """After the commit of a bulk write (either ``sync``): its changes are in ``data.mdb``
        only, so it returns once a checkpoint covers it -- ``data.mdb`` flushed, the header
        naming it, the log flushed.  Until then no other record can follow its barrier (the
        next writer would make that checkpoint first)."""
        del readers_woken
        faults.crash_point("bulk-committed")
        self.checkpoints.checkpoint()

    def checkpoint(self) -> None:
        """Make a checkpoint of the last commit now (and pin it)."""
        self.checkpoints.checkpoint()

    def step(self) -> float | None:
        """One look of the checkpointer thread (:meth:`Checkpoints.step`)."""
        return self.checkpoints.step()

    def drop_pin(self) -> None:
        """Before the map is resized or the environment closed."""
        self.checkpoints.drop()

    def abandon(self) -> None:
        """In a forked child (:mod:`rstore.storage.forks`): let go of what was inherited
        without using it -- no flush, no mark, no lock (a parent thread may hold this
        object's), and no abort of the pins.  Only the child's copies of the descriptors are
        closed."""
        self.checkpoints.abandon()
        self.flusher.abandon()
        self._close_descriptors()

    def close(self) -> None:
        self.checkpoints.close()
        self.flusher.close()  # flushes the log
        self._close_descriptors()

    def _close_descriptors(self) -> None:
        """Once: a number closed may be another file's by the next call."""
        fds, self._fd, self._data_fd = (self._fd, self._data_fd), -1, -1
        for fd in fds:
            if fd >= 0:
                with suppress(OSError):
                    os.close(fd)
