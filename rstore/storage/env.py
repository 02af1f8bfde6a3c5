"""The LMDB environment behind a store directory -- the only module that opens LMDB.

One :class:`Env` per directory per process (LMDB forbids two handles on one environment in a
process, so every :class:`rstore.Store` on the same path shares it, reference-counted).

* **Transactions.** :meth:`Env.read` runs a function in a read-only snapshot; :meth:`Env.write`
  runs one in a write transaction and commits it.  LMDB serialises writers across threads and
  processes; readers never block writers.
* **Map growth.** The map starts large and sparse.  When a write finds it full, the transaction
  is aborted, the map doubled and the function run again; another process that grew the map is
  followed (``MDB_MAP_RESIZED``) the same way.  LMDB requires that no transaction of this process
  is open while the map changes, so transactions pass a gate that a resize closes.
* **Fork.** A child process must not use its parent's LMDB handle.  After a fork the handle is
  marked stale and the first use in the child closes it (py-lmdb knows it is inherited) and opens
  a fresh one.
* **Errors.** LMDB exceptions are turned into :class:`~rstore.errors.StorageError` here, and
  only here.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import lmdb

from rstore.errors import (
    NotAStoreError,
    StorageError,
    StoreNotFoundError,
    UnsupportedFormatError,
)
from rstore.storage import layout
from rstore.storage.layout import StoreConfig
from rstore.storage.notify import Notifier, key_hash
from rstore.storage.txn import Carry, Txn

T = TypeVar("T")

DEFAULT_MAP_SIZE = 1 << 30
MAX_READERS = 1024
_LMDB_FILES = ("data.mdb", "lock.mdb")


class _Registry:
    """The process's open environments by real path, and the lock guarding them."""

    def __init__(self) -> None:
        self.envs: dict[str, Env] = {}
        self.lock = threading.Lock()


_REGISTRY = _Registry()
_all_envs: weakref.WeakSet[Env] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """The child has one thread: locks held by other parent threads would never be released,
    and transactions they had open are gone.  Fresh locks and gates; handles reopen lazily
    (the Env stays registered, because py-lmdb still counts the inherited handle as open)."""
    _REGISTRY.lock = threading.Lock()
    for env in list(_all_envs):
        env._forked = True
        env._gate = _Gate()
        env._notifier_lock = threading.Lock()
        env._carry = None
        env._carry_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Gate:
    """Lets any number of transactions run, or one map resize with none running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._active = 0
        self._resizing = False

    # enter/leave run around every transaction: plain lock calls, no context managers.
    def enter(self) -> None:
        self._lock.acquire()
        try:
            while self._resizing:
                self._cond.wait()
            self._active += 1
        finally:
            self._lock.release()

    def leave(self) -> None:
        self._lock.acquire()
        try:
            self._active -= 1
            if self._active == 0 and self._resizing:
                self._cond.notify_all()
        finally:
            self._lock.release()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._resizing:
                self._cond.wait()
            self._resizing = True
            while self._active:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._resizing = False
                self._cond.notify_all()


def translate(exc: lmdb.Error, path: str) -> StorageError:
    """The one place an LMDB exception becomes an rstore error, with a hint where one helps."""
    text = str(exc)
    if isinstance(exc, lmdb.ReadersFullError):
        return StorageError(
            f"{path}: too many concurrent readers ({text}); close idle stores or threads"
        )
    if isinstance(exc, lmdb.DiskError) or "No space left" in text:
        return StorageError(f"{path}: the disk is full ({text})")
    if isinstance(
        exc,
        lmdb.InvalidError
        | lmdb.CorruptedError
        | lmdb.VersionMismatchError
        | lmdb.IncompatibleError,
    ):
        return NotAStoreError(f"{path}: not a readable rstore store ({text})")
    return StorageError(f"{path}: {text}")


def _check_directory(path: str, create: bool) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotAStoreError(f"{path} is a file, not a store directory")
    if not os.path.exists(path):
        if not create:
            raise StoreNotFoundError(f"no store at {path}")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create store directory {path}: {exc}") from exc
        return
    entries = set(os.listdir(path))
    if "data.mdb" not in entries:
        if entries - set(_LMDB_FILES):
            raise NotAStoreError(
                f"{path} is not an rstore store: it holds other files and no data.mdb"
            )
        if not create:
            raise StoreNotFoundError(f"no store at {path}")


class Env:
    """A shared, process-local LMDB environment for one store directory."""

    def __init__(self, path: str, *, sync: bool, map_size: int, create: bool) -> None:
        self.path = path
        self.sync_mode = sync
        self._map_size = map_size
        self._create = create
        self._refs = 0
        self._gate = _Gate()
        self._forked = False
        self._pid = os.getpid()
        self._notifier: Notifier | None = None
        self._notifier_lock = threading.Lock()
        self._carry: Carry | None = None  # what the last write transaction knew
        self._carry_lock = threading.Lock()
        self._high_water = 0  # PROTOTYPE (issue 8): the last page number this process saw
        self._commits = 0
        self._open()
        _all_envs.add(self)

    # ------------------------------------------------------------------ opening

    def _open(self) -> None:
        _check_directory(self.path, self._create)
        try:
            self._env = lmdb.open(
                self.path,
                map_size=self._map_size,
                max_dbs=len(layout.ALL_DBS) + 2,
                max_readers=MAX_READERS,
                sync=self.sync_mode,
                meminit=False,
                create=self._create,
            )
        except lmdb.Error as exc:
            raise translate(exc, self.path) from exc
        try:
            self._env.reader_check()  # free reader slots of processes that died
            while True:
                try:
                    self._dbs = self._open_dbs()
                    break
                except lmdb.MapResizedError:  # another process grew the map meanwhile
                    self._env.set_mapsize(0)
        except lmdb.Error as exc:
            self._env.close()
            raise translate(exc, self.path) from exc
        except BaseException:
            self._env.close()
            raise

    def _open_dbs(self) -> dict[bytes, Any]:
        env = self._env
        with env.begin() as txn:
            main = txn.cursor()
            names = [bytes(k) for k in main.iternext(values=False)]
        if names and layout.DB_META not in names:
            raise NotAStoreError(f"{self.path} is an LMDB environment but not an rstore store")
        fresh = not names
        if fresh and not self._create:
            raise StoreNotFoundError(f"no store at {self.path}")
        if not fresh:
            # Handles opened outside a write transaction stay valid for the environment's life
            # (a handle opened in a read-only transaction dies with it).
            dbs = {name: env.open_db(name, create=False) for name in layout.ALL_DBS}
            meta = dbs[layout.DB_META]
            with env.begin() as txn:
                raw = txn.get(layout.META_FORMAT, db=meta)
            version = layout.unpack_format(raw) if raw is not None else None
            if version is None:
                raise NotAStoreError(f"{self.path} has no rstore format record")
            if version > layout.FORMAT_VERSION:
                raise UnsupportedFormatError(
                    f"{self.path} was written in store format {version}; this rstore "
                    f"reads format {layout.FORMAT_VERSION} and older -- upgrade rstore"
                )
            return dbs
        with env.begin(write=True) as txn:
            dbs = {name: env.open_db(name, txn=txn, create=True) for name in layout.ALL_DBS}
            meta = dbs[layout.DB_META]
            # Another process may have created the store while we waited for the write lock.
            if txn.get(layout.META_FORMAT, db=meta) is None:
                txn.put(layout.META_FORMAT, layout.pack_format(), db=meta)
                txn.put(layout.META_CONFIG, StoreConfig().pack(), db=meta)
                txn.put(layout.META_NEXT_HANDLE, layout.pack_u64(1), db=meta)
        return dbs

    def _reopen_after_fork(self) -> None:
        # py-lmdb knows the handle was inherited: close() releases it without touching the
        # parent's locks or reader slots.  Then open our own.
        with suppress(lmdb.Error):
            self._env.close()
        self._pid = os.getpid()
        self._forked = False
        self._notifier = None  # its flock and mmap belong to the parent's open file
        self._open()

    # ------------------------------------------------------------------ transactions

    def _begin(self, write: bool) -> Any:
        if self._forked:
            self._reopen_after_fork()
        return self._env.begin(write=write)

    def read(self, fn: Callable[[Txn], T]) -> T:
        """Run ``fn`` on a read-only snapshot."""
        while True:
            self._gate.enter()
            resized = False
            try:
                raw = self._begin(False)
                try:
                    return fn(Txn(raw, self._dbs, write=False))
                finally:
                    raw.abort()
            except lmdb.MapResizedError:
                resized = True
            except lmdb.Error as exc:
                raise translate(exc, self.path) from exc
            finally:
                self._gate.leave()
            if resized:
                self._adopt_map_size()

    def write(self, fn: Callable[[Txn], T]) -> T:
        """Run ``fn`` in a write transaction and commit; all or nothing.

        ``fn`` may run more than once (after the map grows), so it must not have effects outside
        the transaction.
        """
        while True:
            self._gate.enter()
            action = None
            try:
                raw = self._begin(True)
                txnid = raw.id()
                try:
                    txn = Txn(raw, self._dbs, write=True)
                    with self._carry_lock:
                        carry, self._carry = self._carry, None  # take it: never shared
                    if carry is not None and carry.txnid + 1 == txnid:
                        txn.adopt(carry)
                    result = fn(txn)
                    txn.flush()
                except BaseException:
                    raw.abort()
                    raise
                raw.commit()
                with self._carry_lock:
                    self._carry = txn.carry(txnid)
                self._check_readers_on_growth()
                return result
            except lmdb.MapFullError:
                action = "grow"
            except lmdb.MapResizedError:
                action = "adopt"
            except lmdb.Error as exc:
                raise translate(exc, self.path) from exc
            finally:
                self._gate.leave()
            if action == "grow":
                self._grow_map()
            else:
                self._adopt_map_size()

    def _check_readers_on_growth(self) -> None:
        """PROTOTYPE (issue 8): after a commit that extended the file, free the reader slots of
        dead processes.  A process killed inside a read transaction leaves a slot that pins its
        snapshot: until the slot is cleared no page freed after it can be reused, and every
        commit appends fresh pages to data.mdb.  LMDB clears such slots only when asked.  A
        commit extends the file rarely otherwise (new data), so the check is rare unless pages
        are not being reused -- exactly when it is needed.  Looked at every 16th commit of this
        process (``info()`` costs ~2 us)."""
        self._commits += 1
        if self._commits % 16:
            return
        with suppress(lmdb.Error):  # the commit is done: a failed check must not report it failed
            last = int(self._env.info()["last_pgno"])
            if last > self._high_water:
                self._high_water = last
                self._env.reader_check()

    def _grow_map(self) -> None:
        with self._gate.exclusive():
            current = int(self._env.info()["map_size"])
            try:
                self._env.set_mapsize(current * 2)
            except lmdb.Error as exc:
                raise translate(exc, self.path) from exc

    def _adopt_map_size(self) -> None:
        with self._gate.exclusive():
            try:
                self._env.set_mapsize(0)
            except lmdb.Error as exc:
                raise translate(exc, self.path) from exc

    # ------------------------------------------------------------------ wake-ups

    @property
    def notifier(self) -> Notifier:
        """The waiter table of this store (opened on first use)."""
        if self._forked:
            self._reopen_after_fork()
        notifier = self._notifier
        if notifier is None:
            with self._notifier_lock:
                if self._notifier is None:
                    self._notifier = Notifier(self.path)
                notifier = self._notifier
        return notifier

    def notify(self, keys: set[bytes] | None) -> None:
        """Wake readers blocked on ``keys`` (``None``: on every key) after a commit."""
        if keys is not None and not keys:
            return
        notifier = self.notifier
        if notifier.anyone_waiting():
            notifier.notify(None if keys is None else {key_hash(k) for k in keys})

    # ------------------------------------------------------------------ misc

    @property
    def map_size(self) -> int:
        return int(self._env.info()["map_size"])

    def sync(self) -> None:
        """Flush committed transactions to disk (needed only with ``sync=False``)."""
        if self._forked:
            self._reopen_after_fork()
        try:
            self._env.sync(True)
        except lmdb.Error as exc:
            raise translate(exc, self.path) from exc

    def disk_bytes(self) -> int:
        """Bytes the data file occupies on disk."""
        st = os.stat(os.path.join(self.path, "data.mdb"))
        return int(st.st_blocks) * 512

    def used_bytes(self) -> int:
        """Bytes of the data file in use by LMDB pages (last used page)."""
        info = self._env.info()
        stat = self._env.stat()
        return (int(info["last_pgno"]) + 1) * int(stat["psize"])

    def _close(self) -> None:
        if not self._forked:
            self._env.close()
            if self._notifier is not None:
                self._notifier.close()


def acquire(path: str, *, sync: bool, map_size: int | None, create: bool) -> Env:
    """The process's Env for ``path``, opened on first use and reference-counted."""
    real = os.path.realpath(path)
    with _REGISTRY.lock:
        env = _REGISTRY.envs.get(real)
        if env is None:
            env = Env(real, sync=sync, map_size=map_size or DEFAULT_MAP_SIZE, create=create)
            _REGISTRY.envs[real] = env
        elif env.sync_mode != sync:
            raise StorageError(
                f"{path} is already open in this process with sync={env.sync_mode}; LMDB allows "
                "one handle per process, so every Store on one path must use the same sync setting"
            )
        env._refs += 1
        return env


def release(env: Env) -> None:
    """Drop one reference; the last one closes the environment."""
    with _REGISTRY.lock:
        env._refs -= 1
        if env._refs > 0:
            return
        if _REGISTRY.envs.get(env.path) is env:
            del _REGISTRY.envs[env.path]
        env._close()
