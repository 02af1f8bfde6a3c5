"""Opening a store directory: the opening half of an Env.

:class:`Opening` is a part of :class:`~rstore.storage.env.Env` (which inherits it), kept in its
own module: the directory checked, the write-ahead log's open lock taken (a store with the log
is created, or recovered after a restart, under it), LMDB opened and its trees walked, the
sub-databases opened, and the flushing set up -- the log's (:mod:`rstore.storage.wal`) or
``data.mdb``'s (:mod:`rstore.storage.durable`).
"""

from __future__ import annotations

import errno
import logging
import os
from contextlib import nullcontext
from typing import Any

import lmdb

from rstore.errors import StorageError
from rstore.storage import forks, layout, opening, wal, wal_recovery
from rstore.storage.compaction import compact_intent
from rstore.storage.durable import MetaFlusher
from rstore.storage.failures import refused_for_writing, translate, translate_os
from rstore.storage.gate import Gate

__all__ = ["Opening"]

log = logging.getLogger("rstore.storage")


class Opening:
    """How an environment opens its store (see the module's docstring)."""

    path: str
    readonly: bool
    sync_mode: bool
    locked: bool
    format: int
    sealed: bool
    _map_size: int
    _create: bool
    _want_log: bool | None
    _data_path: str
    _env: Any
    _dbs: dict[bytes, Any]
    _gate: Gate
    _forked: bool
    _wal: wal.WriteAheadLog | None
    _flusher: MetaFlusher | None

    def _open(self, *, verify: bool = True, inherited: bool = False) -> None:
        """``inherited``: in a forked child, beside the abandoned handle of its parent."""
        opening.check_directory(self.path, create=self._create, readonly=self.readonly)
        self._data_path = os.path.join(self.path, opening.DATA_FILE)
        logged = opening.uses_log(
            self.path, readonly=self.readonly, create_logged=self._want_log is not False
        )
        if self._want_log is not None and logged != self._want_log and not self.readonly:
            raise opening.wal_mismatch(self.path, logged=logged)
        lock_fd = None
        if logged and not self.readonly:
            try:
                lock_fd = wal_recovery.open_lock(self.path)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise refused_for_writing(self.path, exc.errno) from exc
                raise translate_os(exc, self.path, "open the store for writing") from exc
        try:
            if not self.readonly:
                compact_intent.finish_interrupted(self.path, lock_fd)
            recovering = lock_fd is not None and wal_recovery.needs_recovery(lock_fd)
            if recovering:
                assert lock_fd is not None
                wal_recovery.check_loss(lock_fd, self.path, self._data_path)
                wal_recovery.restore_checkpoint(lock_fd, self._data_path)
            elif logged and self.readonly and opening.log_needs_recovery(self.path):
                raise StorageError(
                    f"{self.path}: the machine restarted since the store was last written; "
                    "it must be recovered before it can be read",
                    hint="open it once for writing (as a user who may write it)",
                )
            self._open_lmdb(verify=verify, logged=logged, inherited=inherited)
            if lock_fd is not None:
                try:
                    self._attach_log(lock_fd, recovering)
                except BaseException:
                    self._env.close()
                    raise
        finally:
            if lock_fd is not None:
                os.close(lock_fd)  # releases the lock
        self._start_flushing(logged)

    def _open_lmdb(self, *, verify: bool, logged: bool, inherited: bool) -> None:
        with forks.beside_inherited() if inherited else nullcontext():
            self._env, self.locked = opening.open_lmdb(
                self.path, sync=self.sync_mode and not logged, map_size=self._map_size,
                create=self._create, readonly=self.readonly, max_dbs=len(layout.ALL_DBS) + 2,
            )  # fmt: skip
        try:
            if not self.readonly:
                self._env.reader_check()  # free reader slots of processes that died
            while True:
                try:
                    if verify:
                        opening.verify_structure(self._env, self.path, pinned=self.locked)
                    self._dbs, self.format = opening.open_dbs(
                        self._env, self.path, create=self._create and not self.readonly,
                        logged=logged,
                    )  # fmt: skip
                    break
                except lmdb.MapResizedError:  # another process grew the map meanwhile
                    self._env.set_mapsize(0)
        except lmdb.Error as exc:
            self._env.close()
            raise translate(exc, self.path) from exc
        except BaseException:
            self._env.close()
            raise
        self.sealed = self.format >= layout.FIRST_SEALED_FORMAT

    def _attach_log(self, lock_fd: int, recovering: bool) -> None:
        """Create the log of a new store, or redo it after a restart (under the open lock)."""
        try:
            wal_recovery.create(lock_fd, self._data_path, self._env, self._dbs)
            if recovering:
                count = wal_recovery.recover(lock_fd, self._data_path, self._env, self._dbs)
                log.warning("%s: recovered after a restart; %d logged commits redone",
                            self.path, count)  # fmt: skip
        except lmdb.Error as exc:
            raise translate(exc, self.path, writing=True) from exc
        except OSError as exc:
            raise translate_os(exc, wal.LOG_FILE, "recover") from exc

    def _checkpoint_step(self) -> float | None:
        """One look of the checkpointer thread (inside the gate: a close or a map resize
        waits for it, and it stops once the store is closed)."""
        try:
            self._gate.enter()
        except StorageError:
            return None
        try:
            current = self._wal
            return None if current is None or self._forked else current.step()
        except lmdb.Error as exc:
            raise translate(exc, self.path, writing=True) from exc
        finally:
            self._gate.leave()

    def _start_flushing(self, logged: bool) -> None:
        if self._wal is not None:
            self._wal.close()
        elif self._flusher is not None:
            self._flusher.close()
        self._wal = self._flusher = None
        if self.readonly:
            return
        try:
            if logged:
                self._wal = wal.WriteAheadLog(
                    self.path, self._data_path, self._env, self._dbs, self._checkpoint_step
                )
                if self.sync_mode:
                    self._flusher = self._wal.flusher
                return
            if self.sync_mode:
                self._flusher = MetaFlusher(self.path, self._data_path)
                # A writer killed between its commit and its flush (or the store's creation
                # just now) may have left a commit that is visible but not yet on disk.
                last = int(self._env.info()["last_txnid"])
                self._flusher.forget_if_ahead(last)
                self._flusher.make_durable(last)
        except BaseException as exc:
            if self._wal is not None:
                self._wal.close()
            elif self._flusher is not None:
                self._flusher.close()
            self._wal = self._flusher = None
            self._env.close()
            if isinstance(exc, OSError):
                raise translate_os(exc, self._data_path, "open") from exc
            raise
