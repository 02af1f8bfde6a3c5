"""Compacting a store: ``data.mdb`` rewritten with only the pages in use, and swapped in.

LMDB never gives pages back to the file system: a file that grew to 41 MB for a million
entries stays 41 MB once they are deleted (its free pages are reused by later writes).  Its
compacting copy (``mdb_env_copyfd1``) writes only the pages in use, renumbered from the front.
A store's file can only shrink by being replaced with such a copy, and other processes keep
using the file they mapped, so a compaction needs the store to itself: it **refuses** while any
other process has the store open (or **waits** for them, up to ``wait`` seconds); processes
that open the store while it runs wait until it is done
(:mod:`~rstore.storage.engine.exclusive`).  Online compaction is not possible: LMDB has no
way to move the live pages of a file that others have mapped.

For each store directory (database 0, then each ``db<N>`` that exists), all held at once:

1. a leftover of an interrupted compaction is finished or removed; the trees are walked
   (``pagecheck``: a damaged store is refused); a store whose log needs a recovery (the
   machine restarted), or of an older format (which upgrades it), was opened normally once
   beforehand;
2. the copy is written beside ``data.mdb``, checked, fixed up (the log starts a new
   generation; the transaction ids go on) and flushed
   (:mod:`~rstore.storage.compaction.compact_copy`);
3. an intent record, then the rename, the log's header naming the copy's checkpoint and the
   log cut back
   (:mod:`~rstore.storage.compaction.compact_intent`, which every writable opener also runs);
4. LMDB is opened once in this process, read-only, while the hold is still its own: it is then
   the first opener and rebuilds ``lock.mdb``'s table for the new file before any waiting
   opener gets in.  Closing it drops the hold.

A SIGKILL or a power loss at any point leaves the old store or the new one, never a mix
(``rstore.storage.engine.faults`` names each step's crash point; ``tests/processes/test_compact*``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import lmdb

from rstore.errors import StorageError, StoreInUseError
from rstore.model import DATABASES
from rstore.storage import opening, registry
from rstore.storage.compaction import compact_copy, compact_intent
from rstore.storage.engine import exclusive, wal, wal_log
from rstore.storage.engine.faults import crash_point
from rstore.storage.failures import translate, translate_os

__all__ = ["CompactReport", "CompactedDatabase", "compact_store"]

#: ``progress(bytes_copied, bytes_to_copy)``, over every database of the store.
Progress = Callable[[int, int], None]
_POLL_S = 0.05  # how often a waiting compaction looks again; how often progress is reported


@dataclass(frozen=True, slots=True)
class CompactedDatabase:
    """One store directory compacted: database ``db`` (0, or N for ``<path>/db<N>``), its
    format, ``data.mdb``'s size and LMDB's pages in it (in use and free) before and after, and
    ``wal.log``'s size before and after."""

    db: int
    path: str
    format: int
    bytes_before: int
    bytes_after: int
    pages_before: int
    pages_after: int
    log_bytes_before: int
    log_bytes_after: int


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What :func:`rstore.compact_store` did: each database, and the seconds it took."""

    databases: tuple[CompactedDatabase, ...]
    seconds: float

    @property
    def bytes_before(self) -> int:
        """``data.mdb`` and ``wal.log`` of every database, before."""
        return sum(d.bytes_before + d.log_bytes_before for d in self.databases)

    @property
    def bytes_after(self) -> int:
        return sum(d.bytes_after + d.log_bytes_after for d in self.databases)


class _Plan:
    """A store directory to compact: its database number, path, (once held) its hold, and
    (once inspected) its format and the bytes of its pages in use."""

    __slots__ = ("db", "format", "held", "live_bytes", "path")

    def __init__(self, db: int, path: str) -> None:
        self.db = db
        self.path = path
        self.held: exclusive.Held | None = None
        self.format = 0
        self.live_bytes = 0


def compact_store(
    path: str | os.PathLike[str],
    *,
    wait: float = 0.0,
    progress: Progress | None = None,
) -> CompactReport:
    """Rewrite the store's files with only the pages in use, so that they give back to the
    file system the space that deleted and trimmed entries left (LMDB reuses free pages but
    never shrinks its file): ``data.mdb`` of database 0 and of every database directory
    (``<path>/db<N>``) becomes a compacted copy, renamed over it, and ``wal.log`` is cut back to
    its first record.  Nothing else changes: every entry, group, consumer and pending entry
    stays as it was.  Safe against a crash or a power loss at any point: the store is then the
    old one or the new one (a compaction interrupted after its point of no return is finished
    by the next process that opens the store for writing).

    It needs the store to itself: when another process has it open it raises
    :class:`~rstore.StoreInUseError` naming them, having changed nothing -- or with ``wait``
    (seconds) it waits up to that long for them to close it.  A process that opens the store
    meanwhile waits until the compaction is done.  The store must not be open in this process
    either.  The disk needs room for the copy (about the size of the live data) until it
    replaces the old file.  ``progress(bytes_copied, bytes_to_copy)`` reports the copying,
    from the calling thread.  Returns a :class:`CompactReport`: sizes and pages before and
    after, per database."""
    if not isinstance(wait, int | float) or isinstance(wait, bool) or not wait >= 0:
        raise ValueError(f"wait must be a number of seconds >= 0, not {wait!r}")
    return _compact(os.fspath(path), float(wait), progress)


def _compact(path: str, wait_s: float, progress: Progress | None) -> CompactReport:
    """:func:`compact_store` (see the module)."""
    started = time.monotonic()
    plans = _plan(path)
    for plan in plans:  # a recovery or an upgrade opens the store normally: before the hold
        state, stale = opening.log_state(plan.path)
        if state is not opening.LogState.PRESENT or stale:
            registry.release(registry.acquire(plan.path, sync=True, map_size=None, create=False))
    reals = registry.reserve([plan.path for plan in plans])
    try:
        _hold_all(plans, wait_s)
        try:
            for plan in plans:
                _inspect(plan)
            meter = _Meter(progress, sum(plan.live_bytes for plan in plans))
            done = []
            for plan in plans:
                done.append(_compact_held(plan, meter.part(plan.live_bytes)))
                _release(plan)  # its lock table rebuilt: openers of it may go on
        finally:
            for plan in plans:
                _release(plan)
    finally:
        registry.unreserve(reals)
    return CompactReport(tuple(done), time.monotonic() - started)


def _plan(path: str) -> list[_Plan]:
    opening.check_directory(path, create=False, readonly=True)
    plans = [_Plan(0, path)]
    for n in range(1, DATABASES):
        sub = os.path.join(path, f"db{n}")
        if os.path.isfile(os.path.join(sub, opening.DATA_FILE)):
            plans.append(_Plan(n, sub))
    return plans


def _hold_all(plans: list[_Plan], wait_s: float) -> None:
    """Hold every directory, or none: look again every ``_POLL_S`` until ``wait_s`` passed."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            busy = next((plan for plan in plans if not _hold(plan)), None)
        except BaseException:
            for plan in plans:
                _release(plan)
            raise
        if busy is None:
            return
        for plan in plans:
            _release(plan)
        if time.monotonic() >= deadline:
            raise _in_use(busy.path, wait_s)
        time.sleep(_POLL_S)


def _hold(plan: _Plan) -> bool:
    try:
        plan.held = exclusive.try_hold(plan.path)
    except OSError as exc:
        raise translate_os(exc, plan.path, "compact") from exc
    return plan.held is not None


def _in_use(path: str, wait_s: float) -> StoreInUseError:
    pids = exclusive.holders(path)
    who = exclusive.who_holds(pids)
    waited = f" (waited {wait_s:g} s)" if wait_s > 0 else ""
    return StoreInUseError(
        f"{path} is open in {who}{waited}; compacting needs the store to itself",
        hint="close it there first, or wait for that with --wait SECONDS "
        "(compact_store(path, wait=SECONDS))",
        pids=pids,
    )


def _release(plan: _Plan) -> None:
    if plan.held is not None:
        held, plan.held = plan.held, None
        exclusive.release(held)


class _Meter:
    """Progress over every database: bytes copied, of all the bytes in use."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.total = total
        self.done = 0

    def part(self, size: int) -> Callable[[int], None] | None:
        """The callback of one database's copy, ``size`` bytes in use: bytes written so far."""
        if self.progress is None:
            return None
        base, self.done = self.done, self.done + size
        progress, total = self.progress, self.total
        return lambda written: progress(base + min(written, size), total)


def _inspect(plan: _Plan) -> None:
    """Step 1 of the module, and the source checked before anything is copied: its leftovers
    finished or removed, its log's header, its trees walked (a damaged store is refused), its
    format (format 1 is not written), the bytes of its pages in use."""
    path, held = plan.path, plan.held
    assert held is not None
    try:
        compact_intent.finish_interrupted(path, held.log_fd)
        header = wal_log.read_header(held.log_fd)
        if header is None or header.boot_id != wal_log.boot_id():
            raise StorageError(
                f"{path}: the write-ahead log has no valid header, or needs a recovery",
                hint="open the store once (`rstore check` says what is wrong)",
            )
        env = compact_copy.open_source(path)
        try:
            opening.verify_structure(env, path, pinned=True)
            _, plan.format = opening.open_dbs(env, path, create=False)
            plan.live_bytes = compact_copy.live_pages(env) * int(env.stat()["psize"])
        finally:
            env.close()
    except lmdb.Error as exc:
        raise translate(exc, path) from exc
    except OSError as exc:
        raise translate_os(exc, path, "compact") from exc


def _sizes(path: str) -> tuple[int, int]:
    """``data.mdb``'s and ``wal.log``'s sizes (0 when there is no log)."""
    log = os.path.join(path, wal.LOG_FILE)
    return (
        os.path.getsize(os.path.join(path, opening.DATA_FILE)),
        os.path.getsize(log) if os.path.exists(log) else 0,
    )


def _compact_held(plan: _Plan, progress: Callable[[int], None] | None) -> CompactedDatabase:
    """Steps 2 to 4 of the module for one held, inspected store directory."""
    path, held = plan.path, plan.held
    assert held is not None
    try:
        data_before, log_before = _sizes(path)
        copied = compact_copy.write_copy(path, plan.format, progress)
        intent = compact_intent.Intent(copied.txnid, copied.position, copied.meta)
        _write_intent(path, intent)
        crash_point("compact-intent-written")
        compact_intent.complete(path, held.log_fd, intent)
        _rebuild_lock_table(path)
    except lmdb.Error as exc:
        raise translate(exc, path, writing=True) from exc
    except OSError as exc:
        raise translate_os(exc, path, "compact") from exc
    data_after, log_after = _sizes(path)
    return CompactedDatabase(
        plan.db, path, plan.format, data_before, data_after, copied.pages_before,
        copied.pages_after, log_before, log_after,
    )  # fmt: skip


def _write_intent(path: str, intent: compact_intent.Intent) -> None:
    """The intent, or on failure neither the intent nor the copy (the store is untouched)."""
    try:
        compact_intent.write_intent(path, intent)
    except BaseException:
        compact_intent.remove_leftovers(path)
        raise


def _rebuild_lock_table(path: str) -> None:
    """Step 4 of the module: LMDB's lock of this process is the hold's, so LMDB's own request
    for it succeeds and it initialises ``lock.mdb`` for the new file (its transaction id read
    from the new meta page), then shares the lock; closing it drops every lock this process
    had on ``lock.mdb``."""
    env = lmdb.open(os.fsencode(path), readonly=True, create=False, map_size=0)
    env.close()
