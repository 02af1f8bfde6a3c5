"""The LMDB environment behind a store directory -- the only module that runs transactions.

One :class:`Env` per directory per process (LMDB forbids two handles on one environment in a
process, so every :class:`rstore.Store` on the same path shares it, reference-counted by
:mod:`rstore.storage.registry`).

* **Transactions.** :meth:`Env.read` runs a function in a read-only snapshot; :meth:`Env.write`
  runs one in a write transaction and commits it.  LMDB serialises writers across threads and
  processes; readers never block writers.  Both pass the :class:`~rstore.storage.gate.Gate`.
* **Opening** (:mod:`rstore.storage.env_opening`, with :mod:`rstore.storage.opening`): the
  directory is checked; a writable open creates the store with its log, recovers it, or
  upgrades a store of an older format, under the log's lock; LMDB's trees are walked and
  verified before LMDB uses them.  Every writable store is written through its log.
* **Map growth.** The map starts large and sparse.  When a write finds it full, the transaction
  is aborted, the map doubled and the function run again; another process that grew the map is
  followed (``MDB_MAP_RESIZED``) the same way.  A growth that fails (an address-space limit)
  fails that write only: the environment is reopened in place at its old size.
* **Closing** waits for the transactions in flight and wakes this process's blocked readers;
  every later use raises :class:`~rstore.errors.StoreClosedError`.
* **Fork.** A child process must not use its parent's LMDB handle.  After a fork the handle is
  marked stale, kept but never used or closed (:mod:`rstore.storage.forks`), and the first use
  in the child opens a fresh one beside it.
* **After a commit** nothing may fail the write: waking blocked readers is best effort
  (:meth:`Env.notify`); a broken waiter table is reported once and readers poll instead.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import lmdb

from rstore import logs
from rstore.errors import CorruptStoreError, ReadOnlyStoreError, StorageError
from rstore.model import StoreUsage
from rstore.storage import forks
from rstore.storage.engine import faults, log_flush, wal_position
from rstore.storage.engine.combine import Combiner, Request
from rstore.storage.engine.wal import WriteAheadLog
from rstore.storage.engine.wal_log import Position
from rstore.storage.env_opening import open_store
from rstore.storage.failures import translate, translate_os
from rstore.storage.gate import Gate
from rstore.storage.records import layout
from rstore.storage.records.txn import Txn
from rstore.storage.waiting.notify import ALL, NOBODY
from rstore.storage.waiting.waiters import PollingWaiter, Waiter
from rstore.storage.waiting.wakeups import Wakeups

__all__ = ["DEFAULT_MAP_SIZE", "Env"]

T = TypeVar("T")
#: Each write's result or its exception, in the order of the batch.
Outcomes = list[tuple[Any, BaseException | None]]

DEFAULT_MAP_SIZE = 1 << 30
#: Reads of a store opened without its lock file retry this often on a damaged-looking record
#: (a writer elsewhere may have been reusing the pages under them).
UNLOCKED_READ_ATTEMPTS = 5


_all_envs: weakref.WeakSet[Env] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """The child has one thread: locks held by other parent threads would never be released,
    and transactions they had open are gone.  Fresh locks and gates; the inherited LMDB handle
    is abandoned, never closed (:mod:`rstore.storage.forks`), and so are the log's and the
    flusher's objects, whose locks a parent thread may hold; handles reopen lazily."""
    for env in list(_all_envs):
        env._forked = True
        if env.closed:
            continue  # its descriptors were closed: their numbers may be another file's now
        forks.abandon(getattr(env, "_env", None))
        log, env._wal = env._wal, None
        if log is not None:
            log.abandon()  # its flusher too
        env._gate = Gate(env.path)
        env._wakeups = Wakeups(env.path)  # the parent's table: its flock and fd are the parent's
        env._carry = None
        env._carry_lock = threading.Lock()
        env._combiner = Combiner(env.commit_batch)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Env:
    """A shared, process-local LMDB environment for one store directory."""

    def __init__(
        self,
        path: str,
        *,
        sync: bool,
        map_size: int,
        create: bool,
        readonly: bool = False,
        on_upgrade: Callable[[int, int], None] | None = None,
    ) -> None:
        """``on_upgrade(done, total)``: the progress of rewriting a format-1 store's records
        when this open brings it to the current format."""
        self.path = path
        self.sync_mode = sync
        self.readonly = readonly
        self._map_size = map_size
        self._create = create
        self._on_upgrade = on_upgrade
        self.upgraded: int | None = None  # records rewritten when this open upgraded the store
        self._gate = Gate(path)
        self._forked = False
        self._wakeups = Wakeups(path)
        # (id, transaction) of this process's last write transaction, committed: the next one
        # starts from what it knew if it follows it (Txn's ``prior``)
        self._carry: tuple[int, Txn] | None = None
        self._carry_lock = threading.Lock()
        self.format = layout.FORMAT_VERSION
        self._high_water = 0  # the last page number this process saw
        self._commits = 0
        self._combiner = Combiner(self.commit_batch)
        self._wal: WriteAheadLog | None = None
        self._open()
        _all_envs.add(self)

    def _open(self, *, verify: bool = True, inherited: bool = False) -> None:
        """Open the directory (:func:`rstore.storage.env_opening.open_store`); a reopen (after
        a fork, or a failed map growth) replaces the log it had."""
        if self._wal is not None:
            self._wal.close()
            self._wal = None
        opened = open_store(
            self.path, map_size=self._map_size, create=self._create, readonly=self.readonly,
            checkpoint_step=self._checkpoint_step, on_upgrade=self._on_upgrade, verify=verify,
            inherited=inherited,
        )  # fmt: skip
        self._env, self._dbs, self._data_path = opened.env, opened.dbs, opened.data_path
        self.format, self.sealed, self.locked = opened.format, opened.sealed, opened.locked
        self._wal = opened.log
        #: Whether a commit here is made durable after LMDB's commit (``sync=True``): readers
        #: flagged early may then be woken between the two (:meth:`notify`'s ``phase``).
        self.flushes_after_commit = self.sync_mode and self._wal is not None
        if opened.upgraded is not None:
            self.upgraded = opened.upgraded
        if not self.readonly and self.format < layout.FORMAT_VERSION:
            self._count_node_bytes()

    def _count_node_bytes(self) -> None:
        """Format 3 to 4: from now on stream records count their nodes' bytes; those written
        before say nothing of them (``StreamMeta.node_bytes`` is ``None``) and are counted when
        first asked for, so recording the format is the whole upgrade.  An older rstore that
        still has the store open refuses the records written since (their size is not its)."""
        self.write(lambda txn: txn.record_format(layout.FORMAT_VERSION))
        logs.info(logs.STORAGE, "%s: upgraded from store format %d to %d", self.path,
                  self.format, layout.FORMAT_VERSION)  # fmt: skip
        self.format = layout.FORMAT_VERSION

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

    @property
    def closed(self) -> bool:
        return self._gate.closed

    @property
    def writable(self) -> bool:
        """A store opened for writing is in the current format, with its write-ahead log."""
        return not self.readonly

    def refuse_write(self) -> ReadOnlyStoreError:
        return ReadOnlyStoreError(
            f"{self.path} is open read-only; the write was refused",
            hint="open it without readonly (and as a user who may write it) to write",
        )

    def _reopen_after_fork(self) -> None:
        # The inherited handle was abandoned at the fork (never closed: closing it would
        # release the parent's reader slots); open our own beside it.
        self._forked = False
        self._open(inherited=True)

    # ------------------------------------------------------------------ transactions

    def _begin(self, write: bool) -> Any:
        """LMDB's transaction (a write one waits for LMDB's writer lock; bench/writers.py
        times that wait by wrapping this method)."""
        return self._env.begin(write=write, buffers=True)  # views: Txn copies what it keeps

    def _txn(self, raw: Any, write: bool) -> Txn:
        return Txn(raw, self._dbs, write=write, sealed=self.sealed, path=self._data_path)

    def read(self, fn: Callable[[Txn], T]) -> T:
        """Run ``fn`` on a read-only snapshot."""
        attempts = 1 if self.locked else UNLOCKED_READ_ATTEMPTS
        while True:
            self._gate.enter()
            resized = False
            try:
                if self._forked:
                    self._reopen_after_fork()
                raw = self._begin(False)
                try:
                    return fn(self._txn(raw, False))
                finally:
                    raw.abort()
            except lmdb.MapResizedError:
                resized = True
            except lmdb.Error as exc:
                raise translate(exc, self.path) from exc
            except CorruptStoreError:
                attempts -= 1
                if attempts <= 0:
                    raise
            finally:
                self._gate.leave()
            if resized:
                self._adopt_map_size()

    def write(
        self,
        fn: Callable[[Txn], T],
        after_commit: Callable[[], bool] | None = None,
        bulk: bool = False,
    ) -> T:
        """Run ``fn`` in a write transaction and commit; all or nothing.

        ``fn`` may run more than once (after the map grows), so it must not have effects outside
        the transaction.  A write that returned is committed; one that raised left nothing.
        Writes of several threads that arrive together share one commit
        (:mod:`rstore.storage.engine.combine`); ``fn`` may then run on another thread.  With
        ``sync=True`` the call returns once the commit is durable; ``after_commit`` (which must
        not raise) runs as soon as it is committed, before it is made durable, and only if
        ``fn`` succeeded -- on whichever thread led the commit; it returns whether it woke
        readers (then the flush first waits briefly for one of their commits to cover it).
        ``bulk``: a large write, which a store with the log may commit unrecorded (and make
        durable with a checkpoint before returning, whatever ``sync``; docs/durability.md).
        """
        if self.readonly:
            raise self.refuse_write()
        return self._combiner.run(fn, after_commit, bulk)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ wake-ups

    def notify(self, keys: set[bytes] | None, phase: int = ALL) -> int:
        """Wake readers blocked on ``keys`` (``None``: every key) after a commit; how many of
        other processes were woken, or :data:`~rstore.storage.waiting.notify.NOBODY` when
        there is nobody to wake in this phase or a later one of the same commit.  Never
        raises (:meth:`Wakeups.notify`)."""
        if keys is not None and not keys:
            return NOBODY
        try:
            self._gate.enter()
        except StorageError:
            return NOBODY  # closed meanwhile: nobody of this process waits any more
        try:
            if self._forked:
                self._reopen_after_fork()
            return self._wakeups.notify(keys, phase)
        except Exception as exc:  # a reopen after a fork failed: the write has committed
            logs.warn(logs.STORAGE, "%s: blocked readers were not woken (%s)", self.path, exc)
            return 0
        finally:
            self._gate.leave()

    def waiter(self, kind: int, keys: list[bytes], group: int = 0) -> Waiter | PollingWaiter:
        """Something to block on until ``keys`` may have changed (:meth:`Wakeups.waiter`)."""
        self._gate.enter()
        try:
            if self._forked:
                self._reopen_after_fork()
            early = self.flushes_after_commit
            return self._wakeups.waiter(kind, keys, group, guard=self._gate, early=early)
        finally:
            self._gate.leave()

    # ------------------------------------------------------------------ the commit

    def commit_batch(self, batch: list[Request]) -> Callable[[bool], None] | None:
        """Run ``batch`` (the writes of this process's threads that arrived together, from
        :mod:`rstore.storage.engine.combine`) in one write transaction and commit it; set each
        request's outcome.  In order: the log's pin; LMDB's write transaction, recording its
        changes; the writes (one directly, several each in a nested transaction: one that
        raises is rolled back alone); the log's record; LMDB's commit; the outcomes.  If the
        map fills up, the whole batch is rolled back, the map grows and every write runs again
        (write functions may run more than once).  Raises (for the whole batch) when nothing
        could be committed.  Returns what is left to do before the writes may return --
        making the commit durable (``sync=True``: :meth:`WriteAheadLog.make_durable`), letting
        the checkpointer look, or a bulk write's checkpoint -- for the caller to run after it
        has let the next batch start, telling it whether readers were woken meanwhile (whose
        own commit may then make the flush unnecessary)."""
        while True:
            for req in batch:
                req.committing = False
            self._gate.enter()
            action = None
            try:
                if self._forked:
                    self._reopen_after_fork()
                wal = self._wal
                assert wal is not None  # a writable store is written through its log
                wal.prepare()  # a pin before the transaction (docs/durability.md)
                raw = self._begin(True)
                txnid = int(raw.id())
                bulk = len(batch) == 1 and batch[0].bulk
                try:
                    work = wal.begin(raw, bulk=bulk)  # a bulk write alone: not recorded
                    with self._carry_lock:
                        carried, self._carry = self._carry, None  # take it: never shared
                    prior = carried[1] if carried is not None and carried[0] + 1 == txnid else None
                    if len(batch) == 1:
                        txn = Txn(work, self._dbs, write=True, sealed=self.sealed,
                                  path=self._data_path, prior=prior)  # fmt: skip
                        outcomes: Outcomes = [(batch[0].fn(txn), None)]
                        txn.flush()
                        prior, relaxed = txn.carry(), txn.relaxed
                    else:
                        outcomes, prior, relaxed = self._run_nested(wal, work, batch, prior)
                    position = wal.append_barrier(raw) if bulk else wal.append(work)
                    if faults.armed is not None:
                        faults.crash_point("log-written")
                except OSError as exc:
                    raw.abort()
                    raise translate_os(exc, self.path, "write the log of") from exc
                except BaseException:
                    raw.abort()
                    raise
                for req in batch:
                    req.committing = True  # from here an interrupt cannot tell whether it stored
                raw.commit()
                after = self._after_commit(wal, position, bulk, relaxed, txnid, prior)
                for req, (result, error) in zip(batch, outcomes):
                    req.result, req.error, req.done = result, error, True
                return after
            except lmdb.MapFullError:
                action = "grow"
            except lmdb.MapResizedError:
                action = "adopt"
            except lmdb.Error as exc:
                raise translate(exc, self.path, writing=True) from exc
            finally:
                self._gate.leave()
            if action == "grow":
                self._grow_map()
            else:
                self._adopt_map_size()

    def _after_commit(
        self,
        wal: WriteAheadLog,
        position: Position | None,
        bulk: bool,
        relaxed: bool,
        txnid: int,
        carry: Txn | None,
    ) -> Callable[[bool], None] | None:
        """Right after LMDB's commit (nothing here may fail the write): what the commit knew
        kept for the next one, and what is left before the writes may return; a ``sync=False``
        record is marked here, and so is a relaxed one (:attr:`Txn.relaxed`: nothing in it
        waits for the disk)."""
        with self._carry_lock:
            self._carry = None if carry is None else (txnid, carry)
        self._commits += 1
        if not self._commits % 16:
            self._check_readers_on_growth()
        if position is None:
            return None  # nothing was written
        if bulk:
            return wal.bulk_committed
        wal.lmdb_committed()  # before the next write transaction of this process
        if self.sync_mode and not relaxed:
            return functools.partial(wal.make_durable, position)
        wal.mark(position)
        return wal.poke

    def _run_nested(
        self, wal: WriteAheadLog, raw: Any, batch: list[Request], prior: Txn | None
    ) -> tuple[Outcomes, Txn | None, bool]:
        """Each write in a nested transaction of ``raw``; ``(outcomes, the transaction the next
        write transaction may start from, whether every write stored is relaxed)``.  Each
        write starts from what the one before it knew; a write that failed may have changed
        the records it was handed, so the next one starts afresh."""
        outcomes: Outcomes = []
        relaxed = True
        for req in batch:
            child = self._env.begin(write=True, parent=getattr(raw, "raw", raw), buffers=True)
            child = wal.wrap(child, parent=raw)
            txn = Txn(child, self._dbs, write=True, sealed=self.sealed, path=self._data_path,
                      prior=prior)  # fmt: skip
            try:
                result = req.fn(txn)
                txn.flush()
            except (lmdb.MapFullError, lmdb.MapResizedError):
                child.abort()
                raise  # the whole batch runs again after the map changed
            except lmdb.Error as exc:
                child.abort()
                outcomes.append((None, translate(exc, self.path, writing=True)))
                prior = None
                continue
            except Exception as exc:
                child.abort()
                outcomes.append((None, exc))
                prior = None
                continue
            except BaseException:
                child.abort()
                raise
            child.commit()
            outcomes.append((result, None))
            relaxed = relaxed and txn.relaxed
            prior = txn.carry()
        return outcomes, prior, relaxed

    def _check_readers_on_growth(self) -> None:
        """After a commit that extended the file, free the reader slots of dead processes.

        A process killed inside a read transaction leaves a slot that pins its snapshot: until
        the slot is cleared no page freed after it can be reused, and every commit appends
        fresh pages to data.mdb.  LMDB clears such slots only when asked.  A
        commit extends the file rarely otherwise (new data), so the check is rare unless pages
        are not being reused -- exactly when it is needed.  Called at every 16th commit of this
        process (``info()`` costs ~2 us)."""
        with suppress(lmdb.Error):  # the commit is done: a failed check must not report it failed
            last = int(self._env.info()["last_pgno"])
            if last > self._high_water:
                self._high_water = last
                self._env.reader_check()

    def _grow_map(self) -> None:
        with self._gate.changing:
            self._gate.drain()
            self._drop_pin()
            current = int(self._env.info()["map_size"])
            try:
                self._env.set_mapsize(current * 2)
                return
            except lmdb.Error as exc:
                failure = exc
            self._reopen_in_place(current)
        raise StorageError(
            f"{self.path}: the store is full at {current} bytes of map and the map could not "
            f"grow to {current * 2} ({failure}); the write was not stored",
            hint="the process may be limited in address space (ulimit -v); the store is "
            "unchanged and stays usable",
        ) from failure

    def _reopen_in_place(self, map_size: int) -> None:
        """After a failed resize py-lmdb may have dropped the handle: open it again at the old
        size, so the store goes on working (called inside the exclusive gate).  The structure
        was verified when the store was opened and only this process's LMDB wrote it since: no
        second walk (which would need address space, the thing that just ran out)."""
        with suppress(lmdb.Error):
            self._env.close()
        self._map_size = map_size
        self._carry = None
        self._open(verify=False)

    def _drop_pin(self) -> None:
        """Resizing the map needs every transaction of the process closed, the log's pin too
        (the next write makes a checkpoint again)."""
        if self._wal is not None:
            self._wal.drop_pin()

    def _adopt_map_size(self) -> None:
        with self._gate.changing:
            self._gate.drain()
            self._drop_pin()
            try:
                self._env.set_mapsize(0)
            except lmdb.Error as exc:
                self._reopen_in_place(self._map_size)
                raise translate(exc, self.path) from exc

    # ------------------------------------------------------------------ misc

    @property
    def map_size(self) -> int:
        return int(self._env.info()["map_size"])

    def sync(self) -> None:
        """Flush committed transactions to disk (needed only with ``sync=False``)."""
        self._gate.enter()
        try:
            if self._forked:
                self._reopen_after_fork()
            if self._wal is not None:
                self._wal.sync()  # the log holds every commit: flushing it is enough
        except lmdb.Error as exc:
            raise translate(exc, self.path, writing=True) from exc
        except OSError as exc:
            raise translate_os(exc, self.path, "flush the log of") from exc
        finally:
            self._gate.leave()

    def durability(self) -> tuple[int, int]:
        """``(last commit, highest one known to be on disk)``, as log sequence numbers -- the
        second is 0 without ``sync=True`` (for tests and diagnostics); ``(0, 0)`` read-only."""
        if self._wal is None:
            return 0, 0
        last = wal_position.read_of(self).lsn - 1
        return last, self._wal.flusher.known_durable() if self.sync_mode else 0

    def lmdb_flags(self) -> dict[str, bool]:
        """LMDB's environment flags (for tests and diagnostics)."""
        return dict(self._env.flags())

    def lmdb_readers(self) -> str:
        """LMDB's reader table, as text (for tests and diagnostics)."""
        return str(self._env.readers())

    def disk_bytes(self) -> int:
        """Bytes the data file occupies on disk."""
        st = os.stat(self._data_path)
        return int(st.st_blocks) * 512

    def used_bytes(self) -> int:
        """Bytes of the data file in use by LMDB pages (last used page)."""
        info = self._env.info()
        stat = self._env.stat()
        return (int(info["last_pgno"]) + 1) * int(stat["psize"])

    def usage(self) -> StoreUsage:
        """The store's files now (:class:`rstore.StoreUsage`)."""
        psize = int(self._env.stat()["psize"])
        live = (self.read(lambda txn: txn.pages_in_use()) + 2) * psize  # + the two meta pages
        try:
            log_bytes = os.stat(self._wal.path).st_size if self._wal is not None else 0
            data_bytes = os.stat(self._data_path).st_size
        except OSError as exc:
            raise translate_os(exc, self.path, "read the size of") from exc
        return StoreUsage(data_bytes, live, log_bytes, log_flush.counters.flushes)

    def close(self) -> None:
        """Wait for transactions in flight, wake this process's blocked readers, close."""
        if not self._gate.close():
            return
        self._wakeups.interrupt_all()
        if not self._forked:
            self._drop_pin()
            self._env.close()
            self._wakeups.close()
        if self._wal is not None:
            self._wal.close()
