"""Opening a store directory: what an :class:`~rstore.storage.env.Env` holds once it is open.

:func:`open_store` checks the directory and opens LMDB, walking its trees before LMDB uses them,
and returns an :class:`Opened` record.  A writable open does it under the write-ahead log's open
lock, which it takes first: under it a compaction cut short is finished, the store is recovered
after a restart, created with its log, or brought from an older format (1 or 2, without the log)
to the current one (:mod:`rstore.storage.engine.upgrade`); then the log
(:mod:`rstore.storage.engine.wal`)
is started.  Every writable store is written through its log.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import lmdb

from rstore import logs
from rstore.errors import StorageError
from rstore.storage import forks, opening
from rstore.storage.compaction import compact_intent
from rstore.storage.engine import upgrade, wal, wal_log, wal_recovery
from rstore.storage.failures import refused_for_writing, translate, translate_os
from rstore.storage.records import layout

__all__ = ["Opened", "open_store"]


@dataclass(slots=True)
class Opened:
    """An open store: LMDB's environment and sub-databases, the store's format, whether
    readers are registered in LMDB's lock table (``locked``: false for a read-only store
    whose lock file this user cannot use), the records an upgrade at this open rewrote
    (``None``: no upgrade), and the write-ahead log of a writable store."""

    env: Any
    dbs: dict[bytes, Any]
    format: int
    locked: bool
    data_path: str
    upgraded: int | None = None
    log: wal.WriteAheadLog | None = None

    @property
    def sealed(self) -> bool:
        """Whether the store's records carry checksums (format 2 and later)."""
        return self.format >= layout.FIRST_SEALED_FORMAT


def open_store(
    path: str,
    *,
    map_size: int,
    create: bool,
    readonly: bool,
    checkpoint_step: Callable[[], float | None],
    on_upgrade: Callable[[int, int], None] | None = None,
    verify: bool = True,
    inherited: bool = False,
) -> Opened:
    """Open the store directory ``path`` (see the module).  ``checkpoint_step``: what the log's
    checkpointer thread runs; ``on_upgrade(done, total)``: the progress of an upgrade's
    rewrite; ``verify``: walk LMDB's trees; ``inherited``: in a forked child, beside the
    abandoned handle of its parent."""
    opener = _Opener(path, map_size, create, readonly, inherited, on_upgrade)
    opening.check_directory(path, create=create, readonly=readonly)
    if readonly:
        state, stale = opening.log_state(path)
        if stale:
            raise StorageError(
                f"{path}: the machine restarted since the store was last written; "
                "it must be recovered before it can be read",
                hint="open it once for writing (as a user who may write it)",
            )
        return opener.open_lmdb(verify=verify, log=state)
    lock = opener.take_open_lock()
    try:
        opened = opener.open_writable(lock, verify=verify)
    except BaseException:
        if lock.created:
            wal_recovery.remove_created(lock)  # the store is left as it was found
        raise
    finally:
        os.close(lock.fd)  # releases the lock
    try:
        opened.log = wal.WriteAheadLog(path, opened.data_path, opened.env, opened.dbs,
                                       checkpoint_step)  # fmt: skip
    except BaseException as exc:
        opened.env.close()
        if isinstance(exc, OSError):
            raise translate_os(exc, opened.data_path, "open") from exc
        raise
    return opened


class _Opener:
    """The settings of one open, and its steps (see :func:`open_store`)."""

    def __init__(
        self,
        path: str,
        map_size: int,
        create: bool,
        readonly: bool,
        inherited: bool,
        on_upgrade: Callable[[int, int], None] | None,
    ) -> None:
        self.path = path
        self.data_path = os.path.join(path, opening.DATA_FILE)
        self.map_size = map_size
        self.create = create
        self.readonly = readonly
        self.inherited = inherited
        self.on_upgrade = on_upgrade

    def take_open_lock(self) -> wal_recovery.OpenLock:
        try:
            return wal_recovery.open_lock(self.path)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise refused_for_writing(self.path, exc.errno) from exc
            raise translate_os(exc, self.path, "open the store for writing") from exc

    def open_writable(self, lock: wal_recovery.OpenLock, *, verify: bool) -> Opened:
        """Under the open lock: a compaction that was cut short finished, the store recovered
        after a restart, created, or brought from an older format to the current one."""
        header = wal_log.read_header(lock.fd)
        upgrading = header is None and os.path.exists(self.data_path)
        if upgrading:
            # An older format, or a creation or upgrade cut short: it changes to the current
            # format only when no other process has it open (an older rstore may write it).
            upgrade.hold_alone(self.path)
        else:
            compact_intent.finish_interrupted(self.path, lock.fd)
        recovering = header is not None and header.boot_id != wal_log.boot_id()
        if recovering:
            wal_recovery.check_loss(lock.fd, self.path, self.data_path)
            wal_recovery.restore_checkpoint(lock.fd, self.data_path)
        state = opening.LogState.PRESENT if header is not None else opening.LogState.HEADERLESS
        if lock.created and upgrading:
            state = opening.LogState.ABSENT  # a store without the log: an older format
        # An upgrade commits before the log has a checkpoint to recover from: LMDB flushes
        # its pages before it writes the meta page, as format 2 did (upgrade.py).
        opened = self.open_lmdb(verify=verify, log=state, durable=upgrading)
        try:
            self._attach_log(opened, lock.fd, recovering)
        except BaseException:
            opened.env.close()
            raise
        if upgrading:  # LMDB need not flush any more: the log does
            opened.env.close()
            upgraded = opened.upgraded
            opened = self.open_lmdb(verify=False, log=opening.LogState.PRESENT)
            opened.upgraded = upgraded
        return opened

    def open_lmdb(self, *, verify: bool, log: opening.LogState, durable: bool = False) -> Opened:
        """LMDB's environment, its trees walked (``verify``), its sub-databases and format
        checked against what the directory holds of the log; ``durable``: LMDB flushes its
        pages in every commit (see ``opening.open_lmdb``)."""
        with forks.beside_inherited() if self.inherited else nullcontext():
            env, locked = opening.open_lmdb(
                self.path, map_size=self.map_size, create=self.create,
                readonly=self.readonly, max_dbs=len(layout.ALL_DBS) + 2, durable=durable,
            )  # fmt: skip
        try:
            if not self.readonly:
                env.reader_check()  # free reader slots of processes that died
            while True:
                try:
                    if verify:
                        opening.verify_structure(env, self.path, pinned=locked)
                    dbs, version = opening.open_dbs(
                        env, self.path, create=self.create and not self.readonly, log=log
                    )
                    return Opened(env, dbs, version, locked, self.data_path)
                except lmdb.MapResizedError:  # another process grew the map meanwhile
                    env.set_mapsize(0)
        except lmdb.Error as exc:
            env.close()
            raise translate(exc, self.path) from exc
        except BaseException:
            env.close()
            raise

    def _attach_log(self, opened: Opened, lock_fd: int, recovering: bool) -> None:
        """Under the open lock: give a new store its log, bring a store of an older format to
        the current one (:mod:`rstore.storage.engine.upgrade`), or redo the log after a restart."""
        env, dbs = opened.env, opened.dbs
        try:
            opened.upgraded = wal_recovery.create(
                lock_fd, self.data_path, env, dbs, opened.format, self.on_upgrade
            )
            if opened.upgraded is not None:
                logs.info(logs.STORAGE, "%s: upgraded from store format %d to %d", self.path,
                          opened.format, layout.FORMAT_VERSION)  # fmt: skip
                opened.format = layout.FORMAT_VERSION
            if recovering:
                count = wal_recovery.recover(lock_fd, self.data_path, env, dbs)
                logs.warn(logs.STORAGE, "%s: recovered after a restart; %d logged commits redone",
                            self.path, count)  # fmt: skip
        except lmdb.Error as exc:
            raise translate(exc, self.path, writing=True) from exc
        except OSError as exc:
            raise translate_os(exc, wal.LOG_FILE, "recover") from exc
