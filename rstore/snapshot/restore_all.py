"""Restoring every database of an RDB file (``Store.restore_file(path, db=None)``): database N
of the file into ``Store.database(N)``.

All or nothing for what the file holds, in two steps:

1. ONE write transaction of database 0 reads the whole file: the streams of database 0 are
   imported for real, the streams of every other database are imported in the same
   transaction and discarded again -- checked exactly as their real import will check them --
   and their names gathered.  Before it commits, the stores of the other databases that
   exist are asked whether any of those names is taken (without ``replace``).  A damaged
   file, an unsupported value, streams in a database above 15 or a name taken anywhere
   raises here, and then no database has changed (no database store is even created).
2. Then each other database holding streams, in ascending order, is restored in ONE write
   transaction of its own (the file read again, that database's keys imported).

What is not promised: the databases are separate stores, so their commits are not one.  A
failure in step 2 -- a stream created meanwhile under a name of the file by another writer,
the disk filling up, the process dying -- leaves the databases committed before it restored
and the rest unchanged; the error then says which databases were restored.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator

from rstore.errors import KeyExistsError, UnsupportedRDBError
from rstore.model import DATABASES
from rstore.rdb.reader import Event, KeyStart, open_rdb
from rstore.snapshot.restore import RestoreReport, load_keys, records_of_key, restore_file
from rstore.snapshot.save import Progress
from rstore.storage.env import Env
from rstore.storage.records.txn import Txn
from rstore.streams.dump import import_stream
from rstore.streams.keyspace import discard_stream, lookup_stream

__all__ = ["restore_all"]

#: ``open_db(n, create)``: the env of database ``n``; ``None`` when it does not exist and
#: ``create`` is false.
OpenDB = Callable[[int, bool], "Env | None"]


def restore_all(
    open_db: OpenDB,
    path: str,
    *,
    replace: bool = False,
    now_ms: int,
    progress: Progress | None = None,
) -> RestoreReport:
    """Import every database of the file at ``path`` (see the module docstring)."""
    started = time.monotonic()
    path = os.fspath(path)
    env0 = open_db(0, True)
    assert env0 is not None
    others: dict[int, RestoreReport] = {}  # the other databases as checked in step 1
    first = env0.write(
        functools.partial(
            _restore_first,
            open_db=open_db,
            path=path,
            replace=replace,
            now_ms=now_ms,
            progress=progress,
            others=others,
        )
    )
    first.seconds = time.monotonic() - started
    if first.streams:
        env0.notify(set(first.streams))
    databases = {0: first} if first.streams or first.skipped or first.expired else {}
    _restore_others(
        open_db, path, replace=replace, now_ms=now_ms, progress=progress, first=first, others=others
    )
    databases.update((db, sub) for db, sub in others.items() if db not in databases)
    return _total(path, first, dict(sorted(databases.items())), time.monotonic() - started)


def _restore_first(
    txn: Txn,
    *,
    open_db: OpenDB,
    path: str,
    replace: bool,
    now_ms: int,
    progress: Progress | None,
    others: dict[int, RestoreReport],
) -> RestoreReport:
    """Step 1 in ``txn``, database 0's write transaction: database 0's streams imported, the
    other databases' checked (their reports in ``others``) and, without ``replace``, their
    names looked up in the stores of those databases that exist."""
    others.clear()  # the transaction may run again (the map grew)
    seen: dict[int, set[bytes]] = {}  # the stream names of each other database
    report = RestoreReport(path, 0)

    def other(db: int, start: KeyStart, events: Iterator[Event]) -> None:
        sub = others.setdefault(db, RestoreReport(path, db))
        if start.type_name != "stream":
            sub.skipped[start.type_name] = sub.skipped.get(start.type_name, 0) + 1
            return
        if start.expire_ms is not None and start.expire_ms <= now_ms:
            for _ in records_of_key(events, None):
                pass
            sub.expired.append(start.key)
            return
        if db >= DATABASES:
            raise UnsupportedRDBError(
                f"the file holds streams in database {db}; rstore has databases 0 to "
                f"{DATABASES - 1} (import that database alone, into a store of its own)",
                key=start.key,
            )
        names = seen.setdefault(db, set())
        if start.key in names and not replace:
            raise _exists(start.key, db, _twice(db))
        stream = import_stream(txn, start.key, records_of_key(events, sub))
        discard_stream(txn, stream.handle)
        names.add(start.key)
        sub.streams.append(start.key)

    with open_rdb(path) as f:
        load_keys(txn, f, report, replace=replace, now_ms=now_ms, progress=progress, other=other)
    if not replace:
        for db, sub in sorted(others.items()):
            env = open_db(db, False) if sub.streams else None
            if env is not None:
                taken = env.read(functools.partial(_first_taken, keys=sub.streams))
                if taken is not None:
                    raise _exists(taken, db, _taken(db))
    return report


def _restore_others(
    open_db: OpenDB,
    path: str,
    *,
    replace: bool,
    now_ms: int,
    progress: Progress | None,
    first: RestoreReport,
    others: dict[int, RestoreReport],
) -> None:
    """Step 2: each other database holding streams restored in one write transaction of its
    own, in ascending order, its report replacing step 1's in ``others``; an error says which
    databases were restored before it.  The progress goes on from step 1's (``first``): one
    more pass over the file for each database."""
    pending = [db for db, sub in sorted(others.items()) if sub.streams]
    passes = 1 + len(pending)
    size = first.bytes
    committed = [0] if first.streams else []  # databases changed so far
    for i, db in enumerate(pending, 1):
        env = open_db(db, True)
        assert env is not None

        def step(offset: int, total: int | None, i: int = i) -> None:
            if progress is not None:
                progress(i * size + offset, passes * size if total is not None else None)

        try:
            others[db] = restore_file(
                env, path, db=db, replace=replace, now_ms=now_ms, progress=step
            )
            others[db].other_dbs = {}  # restored too, or checked in step 1
        except BaseException as exc:
            _note(exc, committed)
            raise
        committed.append(db)


def _exists(key: bytes, db: int, hint: str) -> KeyExistsError:
    exc = KeyExistsError(key, hint=hint)
    exc.db = db  # type: ignore[attr-defined]  # which database, for the CLI's message
    return exc


def _first_taken(txn: Txn, keys: list[bytes]) -> bytes | None:
    return next((k for k in keys if lookup_stream(txn, k) is not None), None)


def _twice(db: int) -> str:
    return f"the file holds it twice in database {db}; restore with replace=True to keep the last"


def _taken(db: int) -> str:
    return f"it is in database {db}; restore with replace=True to overwrite it"


def _note(exc: BaseException, committed: list[int]) -> None:
    """Say on the error which databases were restored before it (Python 3.11+)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        names = ", ".join(str(db) for db in committed) or "none"
        add_note(f"databases restored before this error: {names}; the others are unchanged")


def _total(
    path: str, first: RestoreReport, databases: dict[int, RestoreReport], seconds: float
) -> RestoreReport:
    total = RestoreReport(path, None, first.rdb_version, seconds=seconds, bytes=first.bytes)
    total.databases = databases
    for sub in databases.values():
        total.streams += sub.streams
        total.replaced += sub.replaced
        total.expired += sub.expired
        total.ttl_dropped += sub.ttl_dropped
        total.entries += sub.entries
        for kind, n in sub.skipped.items():
            total.skipped[kind] = total.skipped.get(kind, 0) + n
    return total
