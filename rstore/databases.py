"""The databases of a store (``SELECT``): :meth:`Store.database` and :meth:`Store.databases`,
and the methods that move all of them to and from an RDB file, :meth:`Store.save` and
:meth:`Store.restore_file` (a part of :class:`rstore.Store`, kept apart for its size).

Database 0 is the store itself; database N (1 to 15) the store in the directory
``<path>/db<N>``: an ordinary store any process may open, which ``rstore serve`` uses for
``SELECT N`` and which ``save`` / ``restore`` write under ``SELECTDB N``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rstore.commands.executor import now_ms
from rstore.model import DATABASES
from rstore.storage.env import Env

if TYPE_CHECKING:
    from rstore.client.shapes import Decoder
    from rstore.snapshot.restore import RestoreReport
    from rstore.snapshot.save import Progress, SaveReport
    from rstore.store import Store

__all__ = ["DATABASES", "Databases", "database_path"]


def database_path(path: str | os.PathLike[str], n: int) -> str:
    """The directory of database ``n`` of the store at ``path``: ``path`` itself for 0,
    ``<path>/db<n>`` for 1 to 15 (:class:`ValueError` for any other number)."""
    root = os.fspath(path)
    return root if _database_number(n) == 0 else os.path.join(root, f"db{n}")


class Databases:
    """The database, save and restore methods of :class:`rstore.Store` (a mixin: the store
    gives the attributes below)."""

    _path: str
    _sync: bool
    _readonly: bool
    _decode: Decoder | None
    _databases: dict[int, Store]
    _databases_lock: threading.Lock

    def _live_env(self) -> Env:
        raise NotImplementedError  # Store's

    def database(self, n: int) -> Store:
        """The store of database ``n`` (``SELECT n``): 0 is this store, 1 to 15 the store in
        the directory ``<path>/db<n>``, opened on first use with this store's ``sync``,
        ``readonly`` and ``decode_responses`` settings (created when missing, unless this
        store is read-only: then a missing database raises :class:`StoreNotFoundError`).

        The store returned belongs to this one: it is the same object on every call (from any
        thread) and closes with :meth:`close`.  Closing it yourself is allowed; the next call
        opens it again.  ``rstore serve`` and ``rstore save`` / ``restore`` use this layout,
        and any process may open ``<path>/db<n>`` as a store of its own."""
        if _database_number(n) == 0:
            self._live_env()
            return self  # type: ignore[return-value]  # a Store
        with self._databases_lock:
            self._live_env()
            child = self._databases.get(n)
            if child is None or child.closed:
                from rstore.store import Store  # noqa: PLC0415 - store.py imports this module

                child = Store(
                    database_path(self._path, n), sync=self._sync,
                    readonly=self._readonly, create=not self._readonly,
                )  # fmt: skip
                child._decode = self._decode
                self._databases[n] = child
            return child

    def databases(self) -> list[int]:
        """The databases present: 0, and each N from 1 to 15 whose store ``<path>/db<N>``
        exists on disk (or was opened by :meth:`database`), in ascending order.  Present does
        not mean holding keys."""
        self._live_env()
        with self._databases_lock:
            opened = set(self._databases)
        return [0] + [
            n for n in range(1, DATABASES)
            if n in opened or os.path.isfile(os.path.join(database_path(self._path, n), "data.mdb"))
        ]  # fmt: skip

    def save(
        self,
        path: str | os.PathLike[str],
        rdb_version: int = 11,
        *,
        compress: bool = True,
        progress: Progress | None = None,
        databases: Iterable[int] | None = None,
    ) -> SaveReport:
        """Write the store to an RDB file that Redis and Valkey load: database 0 and every
        database :meth:`databases` lists (``databases=[0, 3]`` saves only those), each that
        holds keys under its SELECTDB, in ascending order.

        Version 11 (stream type 21) loads in Redis 7.2+ and Valkey 7.2+; 10 (type 19) in
        Redis 7.0+; 9 (type 15) in Redis 5.0+ (older versions lose stream fields added
        later).  ``compress`` is Redis's ``rdbcompression``.  Each database is saved as one
        consistent point in time while writers go on; the snapshots of the databases are
        taken one after another before anything is written, not at one instant (each database
        is its own store).  The file appears atomically (written to a temporary name, fsynced,
        renamed).  ``progress(keys_done, keys_total)`` counts the keys of all of them.
        """
        from rstore.snapshot.save import save_file  # noqa: PLC0415 - loaded on first use

        numbers = self.databases()
        if databases is not None:
            wanted = {_database_number(n) for n in databases}
            numbers = [n for n in numbers if n in wanted]  # one not on disk holds no keys
        envs = [(n, self.database(n)._live_env()) for n in numbers]
        return save_file(
            envs, os.fspath(path), rdb_version=rdb_version, compress=compress, progress=progress
        )

    def restore_file(
        self,
        path: str | os.PathLike[str],
        db: int | None = 0,
        replace: bool = False,
        *,
        progress: Progress | None = None,
    ) -> RestoreReport:
        """Import the streams of database ``db`` of an RDB file into this store, in one
        transaction; with ``db=None``, those of every database N of the file into
        :meth:`database` N (the report's ``databases`` holds one report per database).

        All or nothing: a damaged or unsupported file, or a key that already exists (unless
        ``replace``), leaves the store unchanged -- with ``db=None`` every database, the
        whole file and every name being checked before the first commit; the databases then
        commit one after another (see ``docs/snapshots.md`` for the window that leaves).
        Other value types are counted in the report and skipped.  Raises CorruptRDBError /
        UnsupportedRDBError naming the byte offset, KeyExistsError naming the key.
        """
        if db is None:
            from rstore.snapshot.restore_all import restore_all  # noqa: PLC0415

            return restore_all(
                self._database_env, os.fspath(path), replace=replace,
                now_ms=now_ms(), progress=progress,
            )  # fmt: skip
        from rstore.snapshot.restore import restore_file  # noqa: PLC0415 - loaded on first use

        return restore_file(
            self._live_env(), os.fspath(path), db=db, replace=replace,
            now_ms=now_ms(), progress=progress,
        )  # fmt: skip

    def _database_env(self, n: int, create: bool) -> Env | None:
        """The env of :meth:`database` ``n``; ``None`` when not on disk and not ``create``."""
        if not create and n not in self.databases():
            return None
        return self.database(n)._live_env()


def _database_number(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < DATABASES:
        raise ValueError(f"databases are numbered 0 to {DATABASES - 1}, not {n!r}")
    return n
