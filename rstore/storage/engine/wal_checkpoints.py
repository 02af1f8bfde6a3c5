"""Checkpoints of a store written through the log, and the pin each writing process holds.

A checkpoint makes a state of ``data.mdb`` durable and names it in the log's header: after an
OS crash or a power loss, recovery starts from that tree (docs/durability.md, "Checkpoints").
Its pages must not be reused until a newer checkpoint is in the header, and LMDB reuses a page
freed by transaction T only once every reader's snapshot is newer than T.  So every process,
while it writes, holds a **pin**: a read transaction on a checkpoint at or before the header's.
Its own commits then never overwrite the header's tree, whatever other processes do (a pin of
another process may vanish with it).

But a pin also keeps every page freed after it from reuse: each commit made while it stays
writes fresh pages (~9 for a single XADD), so the file grows by the commits made since the
oldest pin of any process.  Hence, per process (one :class:`Checkpoints` per
:class:`~rstore.storage.engine.wal.WriteAheadLog`):

* **Checkpoints by count and age, of all processes' commits.**  The process's thread
  (:class:`~rstore.storage.engine.checkpointer.Checkpointer`, running :meth:`Checkpoints.step`)
  makes
  one when :data:`CHECKPOINT_COMMITS` commits of any process were made since the header's
  checkpoint, or when the header is :data:`CHECKPOINT_AGE_S` old and a commit came since; one
  process at a time (an ``flock`` of ``wal.shm``), the others' pins follow.
* **Pins follow the header.**  The thread opens a *candidate* (a read transaction on the latest
  commit) and swaps it in as the pin once the header names a checkpoint at or after it --
  whoever made that checkpoint -- then opens the next one: the pin lags the header by about one
  checkpoint, also in a process that only wrote a while ago.
* **An idle process lets go.**  After :data:`IDLE_S` without a commit of its own, the process
  drops its pin and candidate and its thread sleeps until the next write: a process that wrote
  once and stays open (a producer between bursts, a consumer blocked in XREADGROUP, a server)
  holds nothing.  Its next write first takes a pin (:meth:`Checkpoints.prepare`): the latest
  commit when the header names it, else after making a checkpoint of it (two flushes, once
  per burst).

So the file stays within the pages of a few times :data:`CHECKPOINT_COMMITS` commits of its
live data, however many processes hold the store open (measured: docs/durability.md).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from rstore import logs
from rstore.storage.engine import wal_log, wal_meta, wal_position
from rstore.storage.engine.checkpointer import Checkpointer
from rstore.storage.engine.faults import crash_point
from rstore.storage.engine.log_flush import LogFlusher
from rstore.storage.engine.wal_log import Position
from rstore.storage.records import layout

__all__ = ["BEHIND", "CHECKPOINT_AGE_S", "CHECKPOINT_COMMITS", "IDLE_S", "Checkpoints"]


#: A checkpoint is due once this many commits (of every process) were made since the header's
#: and it is CHECKPOINT_MIN_S old (each one flushes data.mdb and the log: a fast writer must not
#: spend its time on them) ...
CHECKPOINT_COMMITS = 32
CHECKPOINT_MIN_S = 0.01
#: ... or once the header is this old and a commit came since.
CHECKPOINT_AGE_S = 0.05
#: At most this many candidates wait for a checkpoint, each opened this many commits after the
#: one before: the pin moves to the newest one covered, so it lags the header by little.
CANDIDATES = 4
CANDIDATE_SPACING = 8
#: A writer whose commit is this many checkpoints past the header's makes one itself.
BEHIND = 8
#: A process looks again this soon after another process was making one.
RETRY_S = 0.002
#: A process that made no commit for this long lets its pin go.
IDLE_S = 0.1
#: Until then, while no commit came since its last look, its thread looks again this often.
FOLLOW_S = 0.01
#: A writer whose pin lags looks at the header itself at most this often (:meth:`_follow`).
FOLLOW_MIN_S = 0.002


class Checkpoints:
    """This process's checkpoints and pin on one store (see the module's docstring)."""

    def __init__(
        self,
        env: Any,
        dbs: dict[bytes, Any],
        log_fd: int,
        data_fd: int,
        flusher: LogFlusher,
        step: Callable[[], float | None],
        name: str,
    ) -> None:
        """``step``: what the thread runs (:meth:`step`, inside the environment's gate)."""
        self._env = env
        self._meta_db = dbs[layout.DB_META]
        self._fd = log_fd
        self._data_fd = data_fd
        self._flusher = flusher
        self._pin: Any = None  # a read transaction on a checkpoint at or before the header's
        self._pin_txnid = 0
        # Read transactions on later commits, oldest first, as (txnid, transaction): the
        # newest one a published checkpoint covers becomes the pin.
        self._candidates: list[tuple[int, Any]] = []
        #: The header's checkpoint when this process last read or wrote the header.
        self.header_txnid = 0
        self._last_write = 0.0  # time.monotonic() of this process's last commit
        self._last_txnid = 0  # ... and its transaction
        self._poked = 0.0  # when the thread was last poked
        self._seen = (0.0, 0)  # (time.monotonic(), LMDB's last commit) at the thread's last look
        self._followed = 0.0  # when a writer last looked at the header (_follow)
        self._lock = threading.Lock()  # the thread's steps and whole checkpoints, one at a time
        self._pin_lock = threading.Lock()  # the pin fields, held for no wait
        # The header's flock is taken on this process's one descriptor of data.mdb, which all
        # its threads share, so it excludes other processes only: this lock excludes threads.
        self._header_lock = threading.Lock()
        self.thread = Checkpointer(step, name)

    # ------------------------------------------------------------------ writers

    @property
    def pinned(self) -> bool:
        return self._pin is not None

    def prepare(self) -> None:
        """Before a write transaction of this process: hold a pin (the latest commit if the
        header names it, else after a checkpoint of it)."""
        self._last_write = time.monotonic()
        if self._pin is None:
            with self._lock:
                if self._pin is None:
                    self._pin_latest()

    def ensure(self, raw: Any) -> None:
        """Inside write transaction ``raw``, before it changes anything: a pin, made by a
        checkpoint of the last commit holding LMDB's lock if it went since :meth:`prepare`."""
        if self._pin is None:
            self.make_locked(raw)

    def committed(self, txnid: int) -> None:
        """After this process's commit of ``txnid``: wake the thread when a checkpoint may be
        due, or at most every ``CHECKPOINT_AGE_S`` (it may be asleep after an idle spell);
        waking it after every write would cost each write its share of the GIL.  The write is
        committed: nothing here may fail it (a failed look or checkpoint is logged, and the
        thread tries again)."""
        now = time.monotonic()
        self._last_write, self._last_txnid = now, txnid
        since = now - self._poked
        if since >= CHECKPOINT_AGE_S or (
            txnid - self.header_txnid >= CHECKPOINT_COMMITS and since >= CHECKPOINT_MIN_S
        ):
            self._poked = now
            self.thread.poke()
        try:
            if (
                txnid - self._pin_txnid >= CHECKPOINT_COMMITS
                and now - self._followed >= FOLLOW_MIN_S
            ):
                self._followed = now
                self._follow()
            if txnid - self.header_txnid >= BEHIND * CHECKPOINT_COMMITS:
                self._catch_up(txnid)
        except Exception as exc:  # after the commit: reported, never raised
            logs.warn(
                logs.STORAGE, "a checkpoint after a commit failed (%s); the thread tries again", exc
            )

    def _catch_up(self, txnid: int) -> None:
        """The threads (of every process) fell behind -- a loaded machine runs them late --
        and the header is ``BEHIND`` checkpoints old: the writer makes one itself, so the file
        stays bounded whatever the scheduler does."""
        with self._lock:
            header = wal_log.read_header(self._fd)
            if header is not None:
                self.header_txnid = header.checkpoint_txnid
            if txnid - self.header_txnid >= BEHIND * CHECKPOINT_COMMITS and self._pin is not None:
                self._checkpoint_shared()

    def _follow(self) -> None:
        """On the writer's path, when the pin lags: move it to the newest candidate the header
        covers (another process's checkpoint), and open another -- with many writer processes
        on few cores, their threads run late, and the file grows by every commit of the lag."""
        header = wal_log.read_header(self._fd)
        if header is None or self._pin is None:
            return
        self.header_txnid = header.checkpoint_txnid
        self._adopt(header.checkpoint_txnid)
        self._add_candidate(header.checkpoint_txnid, int(self._env.info()["last_txnid"]))

    # ------------------------------------------------------------------ the thread

    def step(self) -> float | None:
        """One look of the thread: move the pin, let it go after an idle spell, make a
        checkpoint when one is due; seconds until the next look, ``None`` to sleep until
        poked."""
        with self._lock:
            if self._pin is None:
                return None  # nothing held (idle, or the map is being resized)
            header = wal_log.read_header(self._fd)
            if header is None:
                return None
            self.header_txnid = header.checkpoint_txnid
            self._adopt(header.checkpoint_txnid)
            idle = time.monotonic() - self._last_write
            if idle >= IDLE_S:
                if self._last_txnid > header.checkpoint_txnid and not self._checkpoint_shared():
                    return RETRY_S  # its last writes flushed by a checkpoint first
                return None if self._release() else CHECKPOINT_AGE_S
            latest = int(self._env.info()["last_txnid"])
            since = latest - header.checkpoint_txnid
            age = (time.time_ns() - header.written_ns) / 1e9
            if (since >= CHECKPOINT_COMMITS and age >= CHECKPOINT_MIN_S) or (
                since > 0 and age >= CHECKPOINT_AGE_S
            ):
                return CHECKPOINT_AGE_S if self._checkpoint_shared() else RETRY_S
            self._add_candidate(header.checkpoint_txnid, latest)
            wait = min(self._until_next(latest), CHECKPOINT_AGE_S - age if since > 0 else 1.0)
            return max(CHECKPOINT_MIN_S, min(wait, IDLE_S - idle))

    def _until_next(self, latest: int) -> float:
        """About how long until the next checkpoint at the rate commits came since the last
        look (half of it: the pin then lags the header by little more than one checkpoint)."""
        now = time.monotonic()
        seen_at, seen = self._seen
        self._seen = (now, latest)
        if latest <= seen or not 0 < now - seen_at <= CHECKPOINT_AGE_S:
            return FOLLOW_S  # nothing to go by: no commit since, or no recent look
        rate = (latest - seen) / (now - seen_at)
        return CHECKPOINT_COMMITS / 2 / rate

    def _checkpoint_shared(self) -> bool:
        """Make a checkpoint unless another process is making one (then ``False``): one at a
        time across processes (an ``flock`` of ``wal.shm``), its pin serving everyone's."""
        lock = self._flusher.shared_fd  # -1: no shared file; every process checkpoints
        try:
            if lock >= 0:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        try:
            self._checkpoint()
        finally:
            if lock >= 0:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return True

    def _add_candidate(self, header_txnid: int, latest: int) -> None:
        """A read transaction on the latest commit (about ``latest``), when the newest held one
        is :data:`CANDIDATE_SPACING` commits older and fewer than :data:`CANDIDATES` wait: the
        pin at once if the header names it."""
        with self._pin_lock:
            newest = self._candidates[-1][0] if self._candidates else self._pin_txnid
            if len(self._candidates) >= CANDIDATES or latest - newest < CANDIDATE_SPACING:
                return
        candidate = self._env.begin(buffers=True)
        txnid = int(candidate.id())
        if header_txnid >= txnid:
            self._swap_pin(candidate)
            return
        with self._pin_lock:
            if self._pin is not None and (not self._candidates or self._candidates[-1][0] < txnid):
                self._candidates.append((txnid, candidate))
                return
        candidate.abort()  # another thread added a newer one, or the pin went meanwhile

    def _adopt(self, header_txnid: int) -> None:
        """The newest candidate the header's checkpoint covers becomes the pin."""
        with self._pin_lock:
            covered = [c for c in self._candidates if c[0] <= header_txnid]
            if not covered:
                return
            self._candidates = self._candidates[len(covered) :]
            old, (self._pin_txnid, self._pin) = self._pin, covered[-1]
        for txn in [old, *(t for _, t in covered[:-1])]:
            if txn is not None:
                with suppress(Exception):
                    txn.abort()

    def _release(self) -> bool:
        """Let the pin and the candidate go after an idle spell, holding LMDB's writer lock (so
        no write of this process is between its pin check and its commit); ``False`` when a
        write came meanwhile."""
        writer = self._env.begin(write=True, buffers=True)
        try:
            if time.monotonic() - self._last_write < IDLE_S:
                return False
            self.drop()
            return True
        finally:
            writer.abort()

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self) -> None:
        """Make a checkpoint of the last commit now (and pin it)."""
        with self._lock:
            self._checkpoint()

    def _pin_latest(self) -> None:
        """A pin for a process without one (holding ``_lock``): see :meth:`prepare`."""
        header = wal_log.read_header(self._fd)
        pin = self._env.begin(buffers=True)
        if header is not None and header.checkpoint_txnid >= int(pin.id()):
            self.header_txnid = header.checkpoint_txnid
            self._swap_pin(pin)
            return
        pin.abort()
        self._checkpoint()

    def _checkpoint(self) -> None:
        # Reader slots of dead processes pin old snapshots as well: clear them as the pin
        # moves (safe at any time: the pins that protect checkpoints belong to live writers).
        self._env.reader_check()
        writer = self._env.begin(write=True, buffers=True)  # LMDB's lock, briefly
        try:
            txnid = int(writer.id()) - 1
            meta = wal_meta.capture(self._data_fd, txnid)
            position = wal_position.read(writer, self._meta_db)
            pin = self._env.begin(buffers=True)
        finally:
            writer.abort()
        try:
            self._publish(txnid, meta, position)
        except BaseException:
            pin.abort()
            raise
        self._swap_pin(pin)

    def make_locked(self, raw: Any, restart: Position | None = None) -> None:
        """A checkpoint of the last commit, made inside write transaction ``raw`` (LMDB's
        lock); ``restart``: the log starts again there (the header names it)."""
        txnid = int(raw.id()) - 1
        meta = wal_meta.capture(self._data_fd, txnid)
        position = restart or wal_position.read(raw, self._meta_db)
        pin = self._env.begin(buffers=True)
        try:
            self._publish(txnid, meta, position, replace_equal=restart is not None)
        except BaseException:
            pin.abort()
            raise
        self._swap_pin(pin)

    def _publish(
        self, txnid: int, meta: bytes, position: Position, *, replace_equal: bool = False
    ) -> None:
        os.fdatasync(self._data_fd)  # every tree up to txnid, and its meta page
        crash_point("checkpoint-data-flushed")
        # The header's lock is a flock of data.mdb (LMDB never flocks it): taken while
        # LMDB's writer lock may be held, so never the lock of opening (wal.log), which is
        # held while waiting for LMDB's lock.
        written = False
        with self._header_lock:
            fcntl.flock(self._data_fd, fcntl.LOCK_EX)
            try:
                current = wal_log.read_header(self._fd)
                newer = current is None or current.checkpoint_txnid < txnid
                if newer or (
                    replace_equal and current is not None and current.checkpoint_txnid == txnid
                ):
                    wal_log.write_header(
                        self._fd, txnid, position, wal_log.boot_id(), meta, current
                    )
                    os.fdatasync(self._fd)
                    self.header_txnid, written = txnid, True
                elif current is not None:
                    self.header_txnid = current.checkpoint_txnid
            finally:
                fcntl.flock(self._data_fd, fcntl.LOCK_UN)
        if written:  # that flush put every record up to txnid's on disk (and maybe more)
            self._flusher.note_flushed(position.lsn - 1)

    # ------------------------------------------------------------------ the pin

    def _swap_pin(self, pin: Any) -> None:
        """``pin`` (on a checkpoint just published, or the latest commit the header names) is
        the pin now; the old one and the candidates not newer are aborted."""
        txnid = int(pin.id())
        with self._pin_lock:  # writers (log restart, prepare) and the thread all swap
            old, self._pin, self._pin_txnid = self._pin, pin, txnid
            dropped = [t for t_id, t in self._candidates if t_id <= txnid]
            self._candidates = [c for c in self._candidates if c[0] > txnid]
        for txn in [old, *dropped]:
            if txn is not None:
                with suppress(Exception):
                    txn.abort()

    def drop(self) -> None:
        """Before the map is resized, the environment closed, or after an idle spell."""
        with self._pin_lock:
            dropped = [self._pin, *(t for _, t in self._candidates)]
            self._pin, self._candidates = None, []
        for txn in dropped:
            if txn is not None:
                with suppress(Exception):
                    txn.abort()

    def held(self) -> list[int]:
        """The transactions this process holds open: its pin and candidates (tests)."""
        with self._pin_lock:
            pin = [] if self._pin is None else [self._pin_txnid]
            return pin + [txnid for txnid, _ in self._candidates]

    def abandon(self) -> None:
        """In a forked child: forget the pin and candidates without aborting them (their reader
        slots are the parent's; py-lmdb leaves a transaction freed in a child alone)."""
        self._pin, self._candidates = None, []

    def close(self) -> None:
        self.thread.close()
        self.drop()
