"""Opening a store directory: what is refused, how read-only stores are opened, and the check of
LMDB's structures that runs before LMDB walks them.

In order:

1. the directory: a file where a directory should be, a directory holding other things, a
   ``data.mdb`` or ``lock.mdb`` that is not a regular file (a symlink to ``/dev/null`` once let
   writes "succeed" into nothing), a directory the user may not enter -- each refused with a
   clear error;
2. LMDB's environment, read-only when asked; a read-only store whose lock file cannot be used
   (another user's store, read-only media) is opened without locking (see ``docs/durability.md``);
   a read-only opener whose ``data.mdb`` was replaced by a compaction while LMDB waited for its
   lock opens again;
3. the structure (:mod:`rstore.storage.checks.pagecheck`): every tree of the current snapshot walked
   from the file, with the snapshot pinned by a read transaction so no writer reuses its pages
   meanwhile; a damaged or truncated file is refused with :class:`CorruptStoreError`;
4. the sub-databases and the format record, checked against what the directory holds of the
   write-ahead log (format 3 has one; formats 2 and 1, written by older rstore, are read, and
   brought to format 3 by the first writable open: :mod:`rstore.storage.engine.upgrade`).
"""

from __future__ import annotations

import contextlib
import enum
import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any

import lmdb

from rstore.errors import (
    CorruptStoreError,
    NotAStoreError,
    StorageError,
    StoreNotFoundError,
    UnsupportedFormatError,
)
from rstore.storage.checks import pagecheck
from rstore.storage.failures import translate, translate_os
from rstore.storage.records import layout
from rstore.storage.records.layout import StoreConfig

__all__ = [
    "DATA_FILE", "LOCK_FILE", "LogState", "allocate_lock_file", "check_directory", "log_state",
    "open_dbs", "open_lmdb", "verify_structure",
]  # fmt: skip

DATA_FILE = "data.mdb"
LOCK_FILE = "lock.mdb"
MAX_READERS = 1024
#: The size LMDB gives ``lock.mdb`` for MAX_READERS readers on Linux x86-64: its 192-byte
#: header, then 64 bytes per reader slot after the first.
LOCK_FILE_BYTES = 192 + (MAX_READERS - 1) * 64
#: How many times a read-only opener looks again when ``data.mdb`` was replaced (compacted)
#: while LMDB waited for its lock.
_REPLACED_ATTEMPTS = 3
_LMDB_FILES = (DATA_FILE, LOCK_FILE)
_CHECK_HINT = "the store was not opened; `rstore check` lists every damaged place"


def check_directory(path: str, *, create: bool, readonly: bool) -> None:
    """Refuse what is not (and cannot become) a store directory."""
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a parent directory this user may not enter, ...
        raise translate_os(exc, path, "open the store") from exc
    if mode is not None and not stat.S_ISDIR(mode):
        raise NotAStoreError(f"{path} is a file, not a store directory")
    if mode is None:
        if not create or readonly:
            raise StoreNotFoundError(f"no store at {path}")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise translate_os(exc, path, "create the store directory") from exc
        return
    try:
        entries = set(os.listdir(path))
    except OSError as exc:
        raise translate_os(exc, path, "open the store") from exc
    for name in _LMDB_FILES:
        if name in entries:
            full = os.path.join(path, name)
            try:
                mode = os.stat(full).st_mode
            except OSError as exc:
                raise translate_os(exc, full, "read") from exc
            if not stat.S_ISREG(mode):
                raise NotAStoreError(
                    f"{full} is not a regular file; a store's files must be regular files "
                    "(a device, a pipe or a directory there would swallow or refuse writes)"
                )
    if DATA_FILE not in entries:
        if entries - set(_LMDB_FILES):
            raise NotAStoreError(
                f"{path} is not an rstore store: it holds other files and no {DATA_FILE}"
            )
        if not create or readonly:
            raise StoreNotFoundError(f"no store at {path}")


def open_lmdb(
    path: str, *, map_size: int, create: bool, readonly: bool, max_dbs: int, durable: bool = False
) -> tuple[Any, bool]:
    """Open LMDB's environment; ``(environment, locked)``.  ``locked`` is false for a
    read-only store whose lock file this user cannot open: readers then do not register, so a
    writer in another process may reuse pages under them (reads retry, see Env.read).
    ``durable``: every commit flushes its pages before it writes its meta page (LMDB's
    ``MDB_NOMETASYNC``), for a commit no checkpoint covers yet (an upgrade's)."""
    options: dict[str, Any] = {
        "map_size": map_size, "max_dbs": max_dbs, "max_readers": MAX_READERS,
        # meminit: LMDB clears the unused part of each page it writes; without it whatever the
        # process's memory held there (secrets included) would reach the file.
        "meminit": True,
        # Commits are made durable by the write-ahead log's flush, and data.mdb is flushed by
        # the log's checkpoints (docs/durability.md): LMDB itself never flushes.
        "sync": durable, "metasync": False,
    }  # fmt: skip
    target = os.fsencode(path)  # a name that is not UTF-8 must reach LMDB byte for byte
    if not readonly:
        allocate_lock_file(path)
        try:
            return lmdb.open(target, create=create, **options), True
        except lmdb.Error as exc:
            raise translate(exc, path) from exc
    try:
        return _open_current(
            path, lambda: lmdb.open(target, readonly=True, create=False, **options)
        ), True
    except lmdb.Error as exc:
        first = exc
    try:  # the lock file is not ours to use: another user's store, or read-only media
        return lmdb.open(target, readonly=True, create=False, lock=False, **options), False
    except lmdb.Error as exc:
        raise translate(first, path) from exc


def _open_current(path: str, open_env: Callable[[], Any]) -> Any:
    """A read-only environment on the ``data.mdb`` the directory holds once LMDB's lock is
    taken.  A read-only LMDB opens the data file *before* it takes its lock (it may wait
    there): a compaction holding that lock meanwhile (``storage.compaction``) replaces the
    file, and the opener would read the old one forever.  So the file is looked at before and
    after: held open before (its inode cannot be reused), the same file afterwards means LMDB
    opened it, and no compaction can replace it while LMDB's lock is held."""
    data = os.path.join(path, DATA_FILE)
    for _ in range(_REPLACED_ATTEMPTS):
        try:
            held = os.open(data, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return open_env()  # LMDB says what is wrong with it
        try:
            env = open_env()
            try:
                same = _same_file(os.fstat(held), os.stat(data))
            except OSError:
                same = False
            if same:
                return env
            env.close()  # replaced while LMDB waited for its lock: open the new one
        finally:
            os.close(held)
    raise StorageError(f"{path}: data.mdb was replaced while it was being opened; try again")


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def allocate_lock_file(path: str) -> None:
    """Create ``lock.mdb`` with its space allocated, before LMDB maps it.

    LMDB sizes a new lock file with ``ftruncate`` (a sparse file) and writes into it through
    a shared mapping: on a full file system the first write to an unbacked page kills the
    process with SIGBUS.  Allocated here first, a full disk is an error instead.  An existing
    lock file is left alone: other processes may have it mapped at its current size.
    """
    lock = os.path.join(path, LOCK_FILE)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        return
    except OSError as exc:
        raise translate_os(exc, lock, "create") from exc
    try:
        os.posix_fallocate(fd, 0, LOCK_FILE_BYTES)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise translate_os(exc, path, "create the store in") from exc
    os.close(fd)


def verify_structure(env: Any, path: str, *, pinned: bool) -> pagecheck.Report:
    """Walk LMDB's trees of the current snapshot; raise :class:`CorruptStoreError` naming the
    first damaged place.  The snapshot is held by a read transaction while it is walked."""
    data = os.path.join(path, DATA_FILE)
    report = _walk_snapshot(env, path, data)
    # an unlocked reader: a writer may have been reusing pages under the walk; look again
    for _ in range(0 if pinned else UNLOCKED_WALKS - 1):
        if not report.problems:
            break
        time.sleep(0.01)
        report = _walk_snapshot(env, path, data)
    if report.problems:
        first = report.problems[0]
        more = len(report.problems) - 1
        what = first.what + (f" (and {more} more problems)" if more else "")
        raise CorruptStoreError(what, path=data, db=first.tree, page=first.page, hint=_CHECK_HINT)
    return report


#: Walks of an unlocked reader's snapshot before its problems are believed.
UNLOCKED_WALKS = 8
#: How long a walk may be retried because writers overwrote its snapshot's meta page.
STALE_RETRY_S = 2.0


def _walk_snapshot(env: Any, path: str, data: str) -> pagecheck.Report:
    """One walk of a snapshot taken right after the file is mapped.  A writer that commits
    twice between the two overwrites the snapshot's meta page: another snapshot is taken then,
    at once (each try is a fraction of a millisecond: under a writer committing tens of
    thousands of times a second a few tries fail), for up to :data:`STALE_RETRY_S`."""

    @contextlib.contextmanager
    def snapshot() -> Iterator[int]:
        with env.begin() as txn:
            yield int(txn.id())

    deadline = time.monotonic() + STALE_RETRY_S
    while True:
        try:
            return pagecheck.verify_pinned(data, snapshot)
        except pagecheck.StaleSnapshot:
            if time.monotonic() > deadline:
                raise StorageError(
                    f"{path}: the store changed too fast to be checked; try again"
                ) from None
        except lmdb.MapResizedError:
            raise  # the caller adopts the new size and comes back
        except lmdb.Error as exc:
            raise translate(exc, path) from exc
        except OSError as exc:
            raise translate_os(exc, data, "read") from exc


class LogState(enum.Enum):
    """What a store directory holds of the write-ahead log, before LMDB opens."""

    ABSENT = "absent"  # no wal.log: a store of an older format (or a new store)
    HEADERLESS = "headerless"  # its creation, or an upgrade to the log, was cut short
    PRESENT = "present"  # a log with its header


def log_state(path: str) -> tuple[LogState, bool]:
    """What ``path`` holds of the write-ahead log (see :class:`LogState`), and whether its
    header predates this boot -- the store then needs a recovery, which only a writable open
    makes -- read with one open of the file."""
    from rstore.storage.engine import wal, wal_log  # noqa: PLC0415 -- they import its neighbours

    try:
        fd = os.open(os.path.join(path, wal.LOG_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return LogState.ABSENT, False
    except OSError as exc:
        raise translate_os(exc, os.path.join(path, wal.LOG_FILE), "read") from exc
    try:
        header = wal_log.read_header(fd)
    finally:
        os.close(fd)
    if header is None:
        return LogState.HEADERLESS, False
    return LogState.PRESENT, header.boot_id != wal_log.boot_id()


def open_dbs(
    env: Any, path: str, *, create: bool, log: LogState = LogState.PRESENT
) -> tuple[dict[bytes, Any], int]:
    """The sub-database handles and the store's format version; creates them in a new store."""
    try:
        with env.begin() as txn:
            names = [bytes(k) for k in txn.cursor().iternext(values=False)]
        if names and layout.DB_META not in names:
            raise NotAStoreError(f"{path} is an LMDB environment but not an rstore store")
        if not names:
            if not create:
                raise StoreNotFoundError(f"no store at {path}")
            return _create(env, layout.FORMAT_VERSION), layout.FORMAT_VERSION
        # Handles opened outside a write transaction stay valid for the environment's life.
        missing = [n.decode() for n in layout.ALL_DBS if n not in names]
        if missing:
            raise NotAStoreError(f"{path} lacks the sub-databases {', '.join(missing)}")
        dbs = {name: env.open_db(name, create=False) for name in layout.ALL_DBS}
        with env.begin() as txn:
            raw = txn.get(layout.META_FORMAT, db=dbs[layout.DB_META])
    except lmdb.Error as exc:
        raise translate(exc, path) from exc
    version = layout.unpack_format(raw) if raw is not None else None
    if version is None:
        raise NotAStoreError(f"{path} has no rstore format record")
    logged = version >= layout.FIRST_LOGGED_FORMAT
    # A log without its header is a creation or an upgrade that was cut short: either format.
    if (
        log is not LogState.HEADERLESS
        and logged != (log is LogState.PRESENT)
        and (version <= layout.FORMAT_VERSION)
    ):
        what = "has no write-ahead log (wal.log)" if logged else "has a stray wal.log"
        raise CorruptStoreError(
            f"{path} is in store format {version} but {what}",
            path=path, hint="restore it from a snapshot; `rstore check` lists what it finds",
        )  # fmt: skip
    if version > layout.FORMAT_VERSION:
        raise UnsupportedFormatError(
            f"{path} was written in store format {version}; this rstore reads format "
            f"{layout.FORMAT_VERSION} and older",
            hint="upgrade rstore",
        )
    return dbs, version


def _create(env: Any, version: int) -> dict[bytes, Any]:
    with env.begin(write=True) as txn:
        dbs = {name: env.open_db(name, txn=txn, create=True) for name in layout.ALL_DBS}
        meta = dbs[layout.DB_META]
        # Another process may have created the store while we waited for the write lock.
        if txn.get(layout.META_FORMAT, db=meta) is None:
            txn.put(layout.META_FORMAT, layout.pack_format(version), db=meta)
            for key, payload in (
                (layout.META_CONFIG, StoreConfig().pack()),
                (layout.META_NEXT_HANDLE, layout.pack_u64(1)),
            ):
                txn.put(key, layout.seal(key, payload), db=meta)
    return dbs
