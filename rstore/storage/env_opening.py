"""Opening a store directory: the opening half of an Env.

:class:`Opening` is a part of :class:`~rstore.storage.env.Env` (which inherits it), kept in its
own module.  A read-only open checks the directory and opens LMDB, walking its trees before
LMDB uses them.  A writable open does the same under the write-ahead log's open lock, which
it takes first: under it a compaction cut short is finished, the store is recovered after a
restart, created with its log, or brought from an older format (1 or 2, without the log) to
the current one (:mod:`rstore.storage.upgrade`); then the log (:mod:`rstore.storage.wal`) is
started.  Every writable store is written through the log.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import lmdb

from rstore.errors import StorageError
from rstore.storage import forks, layout, opening, upgrade, wal, wal_log, wal_recovery
from rstore.storage.compaction import compact_intent
from rstore.storage.failures import refused_for_writing, translate, translate_os
from rstore.storage.gate import Gate

__all__ = ["Opening"]

log = logging.getLogger("rstore.storage")


class Opening:
    """How an environment opens its store (see the module's docstring)."""

    path: str
    readonly: bool
    locked: bool
    format: int
    sealed: bool
    upgraded: int | None
    _map_size: int
    _create: bool
    _on_upgrade: Callable[[int, int], None] | None
    _data_path: str
    _env: Any
    _dbs: dict[bytes, Any]
    _gate: Gate
    _forked: bool
    _wal: wal.WriteAheadLog | None

    def _open(self, *, verify: bool = True, inherited: bool = False) -> None:
        """``inherited``: in a forked child, beside the abandoned handle of its parent."""
        opening.check_directory(self.path, create=self._create, readonly=self.readonly)
        self._data_path = os.path.join(self.path, opening.DATA_FILE)
        if self.readonly:
            state = opening.log_state(self.path)
            if state is opening.LogState.PRESENT and opening.log_needs_recovery(self.path):
                raise StorageError(
                    f"{self.path}: the machine restarted since the store was last written; "
                    "it must be recovered before it can be read",
                    hint="open it once for writing (as a user who may write it)",
                )
            self._open_lmdb(verify=verify, log=state, inherited=inherited)
            return
        lock = self._take_open_lock()
        try:
            self._open_writable(lock, verify=verify, inherited=inherited)
        except BaseException:
            if lock.created:
                wal_recovery.remove_created(lock)  # the store is left as it was found
            raise
        finally:
            os.close(lock.fd)  # releases the lock
        self._start_log()

    def _take_open_lock(self) -> wal_recovery.OpenLock:
        try:
            return wal_recovery.open_lock(self.path)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise refused_for_writing(self.path, exc.errno) from exc
            raise translate_os(exc, self.path, "open the store for writing") from exc

    def _open_writable(self, lock: wal_recovery.OpenLock, *, verify: bool, inherited: bool) -> None:
        """Under the open lock: a compaction that was cut short finished, the store recovered
        after a restart, created, or brought from an older format to the current one."""
        header = wal_log.read_header(lock.fd)
        upgrading = header is None and os.path.exists(self._data_path)
        if upgrading:
            # An older format, or a creation or upgrade cut short: it changes to the current
            # format only when no other process has it open (an older rstore may write it).
            upgrade.hold_alone(self.path)
        else:
            compact_intent.finish_interrupted(self.path, lock.fd)
        recovering = header is not None and header.boot_id != wal_log.boot_id()
        if recovering:
            wal_recovery.check_loss(lock.fd, self.path, self._data_path)
            wal_recovery.restore_checkpoint(lock.fd, self._data_path)
        state = opening.LogState.PRESENT if header is not None else opening.LogState.HEADERLESS
        if lock.created and upgrading:
            state = opening.LogState.ABSENT  # a store without the log: an older format
        # An upgrade commits before the log has a checkpoint to recover from: LMDB flushes
        # its pages before it writes the meta page, as format 2 did (upgrade.py).
        self._open_lmdb(verify=verify, log=state, inherited=inherited, durable=upgrading)
        try:
            self._attach_log(lock.fd, recovering)
        except BaseException:
            self._env.close()
            raise
        if upgrading:  # LMDB need not flush any more: the log does
            self._env.close()
            self._open_lmdb(verify=False, log=opening.LogState.PRESENT, inherited=inherited)

    def _open_lmdb(
        self, *, verify: bool, log: opening.LogState, inherited: bool, durable: bool = False
    ) -> None:
        """``durable``: LMDB flushes its pages in every commit (see ``opening.open_lmdb``)."""
        with forks.beside_inherited() if inherited else nullcontext():
            self._env, self.locked = opening.open_lmdb(
                self.path, map_size=self._map_size, create=self._create,
                readonly=self.readonly, max_dbs=len(layout.ALL_DBS) + 2, durable=durable,
            )  # fmt: skip
        try:
            if not self.readonly:
                self._env.reader_check()  # free reader slots of processes that died
            while True:
                try:
                    if verify:
                        opening.verify_structure(self._env, self.path, pinned=self.locked)
                    self._dbs, self.format = opening.open_dbs(
                        self._env, self.path, create=self._create and not self.readonly, log=log
                    )
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
        """Under the open lock: give a new store its log, bring a store of an older format to
        the current one (:mod:`rstore.storage.upgrade`), or redo the log after a restart."""
        try:
            self.upgraded = wal_recovery.create(
                lock_fd, self._data_path, self._env, self._dbs, self.format, self._on_upgrade
            )
            if self.upgraded is not None:
                log.info("%s: upgraded from store format %d to %d", self.path,
                         self.format, layout.FORMAT_VERSION)  # fmt: skip
                self.format, self.sealed = layout.FORMAT_VERSION, True
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

    def _start_log(self) -> None:
        """The write-ahead log of a writable store (a reopen replaces the one it had)."""
        if self._wal is not None:
            self._wal.close()
        self._wal = None
        try:
            self._wal = wal.WriteAheadLog(
                self.path, self._data_path, self._env, self._dbs, self._checkpoint_step
            )
        except BaseException as exc:
            self._env.close()
            if isinstance(exc, OSError):
                raise translate_os(exc, self._data_path, "open") from exc
            raise
