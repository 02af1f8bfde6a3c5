"""Making commits durable: flushes of the write-ahead log, after LMDB's writer lock is released,
one at a time across processes, each covering every record marked before it started.

A ``sync=True`` commit writes its record to ``wal.log`` before LMDB's commit and returns once the
record is on disk -- after any ``fdatasync`` of the log that starts after the record was marked
committed, whoever makes it.  Which records are known to be on disk is kept in ``wal.shm``
beside the store (read and written with ``pread``/``pwrite``, never mapped), so that:

* **a flush is skipped when another covered it.**  The *durable* word says up to which log
  sequence number the log is on disk.  It names the log file (device and inode), so a store
  replaced under the same path never inherits a stale claim; a torn or damaged word reads as
  "nothing is known durable", which only costs a flush.  The file is a cache of facts, never a
  promise: if it cannot be used, every writer flushes for itself.
* **One flush at a time, across processes.**  A writer whose record is not covered yet takes a
  lock (``lockf`` of the first byte of ``wal.shm``; a lock of the process, released by the
  kernel if it dies) before it flushes.  Writers of other processes that arrive meanwhile wait
  for that flush instead of issuing theirs beside it (on one disk, flushes issued together run
  one after the other anyway), and most find their record covered once they get the lock.
* **A flush covers more than its own record.**  Each durable writer, once it has marked its
  record committed, raises the *marked* word of ``wal.shm`` to its sequence number.  A flush
  that starts after the mark of record m puts record m on disk, with its committed byte, and
  every record before it (each proven by its successor: they are all committed, so none of them
  can be overwritten any more, and all were written before m's commit).  So the flusher
  publishes the highest marked number it read before flushing, not only its own.
* **A writer that woke blocked readers waits briefly** (``READER_GRACE_S``) for one of their
  commits' flushes to cover its record before it flushes itself (docs/durability.md, "Wake-ups
  before the flush").

Racing writers may lower either word (read, compare and write are not atomic): that only makes
a flush claim less than it could, never more.  Both words are read with one ``pread``, and a
flusher holding the lock publishes without reading the durable word again: only a flush under
the lock (or a checkpoint's, :meth:`LogFlusher.note_flushed`) writes it.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
from contextlib import suppress

from rstore.errors import StorageError

__all__ = ["READER_GRACE_S", "LogFlusher", "counters", "decode_word", "read_word"]

_DURABLE_MAGIC = b"rsdurab1"
# magic | device | inode | durable sequence number | check (the numbers xor-folded, a constant)
_DURABLE = struct.Struct("<8sQQQQ")
_DURABLE_CHECK = 0x5A17_C0DE_D00D_F00D
_MARKED_AT = 64  # the marked word's offset in wal.shm (the durable word is at 0)
_MARKED = struct.Struct("<8sQQ")  # magic, sequence number, check
_WORDS = _MARKED_AT + _MARKED.size  # both words, read at once
_MARKED_MAGIC = b"rsmarkd1"
_MARKED_CHECK = 0x6D61_726B_6564_2121
#: How long a writer that woke readers before its flush waits for one of their commits to
#: cover its own (their commit flushes the log) before it flushes itself.
READER_GRACE_S = 0.003
# How often it looks at wal.shm meanwhile.
_GRACE_POLL_S = 0.0001


class _Counters:
    """How many after-commit flushes this process made and skipped (tests read them);
    ``handed``: skipped after waiting for a woken reader's commit to cover them."""

    __slots__ = ("flushes", "handed", "skipped")

    def __init__(self) -> None:
        self.flushes = 0
        self.skipped = 0
        self.handed = 0


counters = _Counters()


def decode_word(data: bytes, identity: tuple[int, int]) -> int:
    """The sequence number a durable word's bytes say is on disk for the file ``identity``
    (device, inode); 0 for a word that is torn, damaged or another file's."""
    if len(data) < _DURABLE.size:
        return 0
    magic, dev, ino, lsn, check = _DURABLE.unpack_from(data)
    if (
        magic != _DURABLE_MAGIC
        or (dev, ino) != identity
        or check != dev ^ ino ^ lsn ^ _DURABLE_CHECK
    ):
        return 0
    return int(lsn)


def read_word(path: str, fd: int) -> int:
    """What the shared file at ``path`` says is durable of the log open as ``fd`` (0 when the
    word is missing, unreadable or not that file's)."""
    st = os.fstat(fd)
    try:
        word = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        return decode_word(os.pread(word, _DURABLE.size, 0), (st.st_dev, st.st_ino))
    except OSError:
        return 0
    finally:
        os.close(word)


class LogFlusher:
    """The flushes of ``wal.log`` for one process (see the module's docstring)."""

    def __init__(self, log_path: str, shared_path: str, fd: int) -> None:
        """``fd``: the log, open, owned by the caller; ``shared_path``: ``wal.shm``."""
        self._log_path = log_path
        self._fd = fd
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)
        self._lock = threading.Lock()
        # One flush at a time per process: a write whose commit a flush in progress may not
        # cover waits for it, then looks again (often covered by then), and closing waits.
        self._flush_lock = threading.Lock()
        self._closed = False
        self._close_failure: StorageError | None = None
        self._known = 0  # the highest sequence number this process knows is durable
        self._shared: int | None = None
        with suppress(OSError):
            shared = os.open(
                shared_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644
            )
            try:
                if os.fstat(shared).st_size < _WORDS:
                    os.posix_fallocate(shared, 0, 4096)  # a full disk fails here, not later
            except OSError:
                os.close(shared)
                raise
            self._shared = shared

    @property
    def shared_fd(self) -> int:
        """The descriptor of ``wal.shm`` (the checkpoints lock it); ``-1`` when there is none."""
        return -1 if self._shared is None else self._shared

    def _read_words(self) -> tuple[int, int]:
        """The durable and the marked sequence numbers (0 for a word not valid)."""
        if self._shared is None:
            return 0, 0
        try:
            data = os.pread(self._shared, _WORDS, 0)
        except OSError:
            return 0, 0
        durable = decode_word(data, self._identity)
        if len(data) != _WORDS:
            return durable, 0
        magic, lsn, check = _MARKED.unpack_from(data, _MARKED_AT)
        marked = int(lsn) if magic == _MARKED_MAGIC and check == lsn ^ _MARKED_CHECK else 0
        return durable, marked

    def _read_durable(self) -> int:
        return self._read_words()[0]

    def _publish(self, lsn: int, durable: int) -> None:
        """``lsn`` is on disk; ``durable``: the durable word's value the caller just read."""
        with self._lock:
            if lsn <= self._known:
                return
            self._known = lsn
        if self._shared is None or durable >= lsn:
            return
        dev, ino = self._identity
        word = _DURABLE.pack(_DURABLE_MAGIC, dev, ino, lsn, dev ^ ino ^ lsn ^ _DURABLE_CHECK)
        try:  # noqa: SIM105 -- every durable commit's path: suppress() is 3 Python calls
            os.pwrite(self._shared, word, 0)
        except OSError:
            pass

    def _note_known(self, lsn: int) -> None:
        """``lsn`` was read from the durable word: it is on disk."""
        with self._lock:
            self._known = max(self._known, lsn)

    def forget_if_ahead(self, last_lsn: int) -> None:
        """At open: words claiming records the store does not hold (``data.mdb`` and
        ``wal.log`` put back in place from a copy, which kept their inodes) are erased;
        trusted, they would let writes skip their flush.  Racing a writer that just published
        is harmless: erasing only costs a flush."""
        if self._shared is None:
            return
        durable, marked = self._read_words()
        with suppress(OSError):
            if durable > last_lsn:
                os.pwrite(self._shared, bytes(_DURABLE.size), 0)
            if marked > last_lsn:
                os.pwrite(self._shared, bytes(_MARKED.size), _MARKED_AT)

    def known_durable(self) -> int:
        """The highest sequence number this process, or ``wal.shm``, knows is on disk."""
        return max(self._known, self._read_durable())

    def make_durable(self, lsn: int, grace_s: float = 0.0) -> None:
        """After this process marked record ``lsn`` committed (durable writes only): return
        once it is on disk -- at once if a flush that started after a later record's mark
        covered it, else after raising the marked word to ``lsn`` and flushing (or finding,
        under the lock, that the flush it waited for covered it).

        With ``grace_s``, first wait up to that long for a later flush to cover it (a reader
        woken before this flush, whose own commit flushes the log), and flush only if none
        did."""
        if lsn <= self._known:
            counters.skipped += 1
            return
        durable, marked = self._read_words()
        if durable >= lsn:
            self._note_known(durable)
            counters.skipped += 1
            return
        if marked < lsn and self._shared is not None:
            word = _MARKED.pack(_MARKED_MAGIC, lsn, lsn ^ _MARKED_CHECK)
            try:  # noqa: SIM105 -- every durable commit's path: suppress() is 3 Python calls
                os.pwrite(self._shared, word, _MARKED_AT)
            except OSError:
                pass
        if grace_s > 0 and self._covered_within(lsn, grace_s):
            counters.skipped += 1
            counters.handed += 1
            return
        with self._flush_lock:
            if self._closed and self._close_failure is not None:
                raise self._close_failure
            if self._closed or lsn <= self._known:  # closing flushed it, or a flush did
                counters.skipped += 1
                return
            self._flush_covering(lsn)

    def _covered_within(self, lsn: int, grace_s: float) -> bool:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            time.sleep(_GRACE_POLL_S)
            if lsn <= self._known or lsn <= self._read_durable():
                return True
        return False

    def _flush_covering(self, lsn: int) -> None:
        """Flush the log, one process at a time, unless the flush waited for covered record
        ``lsn``; publish the highest record marked before it."""
        shared = self._shared
        if shared is not None:
            try:  # noqa: SIM105 -- every durable commit's path: suppress() is 3 Python calls
                fcntl.lockf(shared, fcntl.LOCK_EX, 1, 0)  # another process's flush first
            except OSError:
                pass
        try:
            durable, marked = self._read_words()
            if lsn <= durable:  # the flush waited for covered it
                counters.skipped += 1
                self._note_known(durable)
                return
            covers = max(lsn, marked)
            self._flush()
            self._publish(covers, durable)  # under the lock, no other flush wrote the word
        finally:
            if shared is not None:
                try:  # noqa: SIM105 -- every durable commit's path: suppress() is 3 Python calls
                    fcntl.lockf(shared, fcntl.LOCK_UN, 1, 0)
                except OSError:
                    pass

    def note_flushed(self, lsn: int) -> None:
        """A flush of the log made elsewhere -- a checkpoint's, after its header -- put every
        record up to ``lsn`` on disk: publish it (under the lock, as a flush would).  Writers
        waiting for a flush then find their records covered; and recovery knows that much of
        the log was on disk, also of a store written with ``sync=False``
        (:func:`rstore.storage.engine.wal_recovery.check_loss`)."""
        shared = self._shared
        if shared is None or lsn <= 0:
            return
        with suppress(OSError):
            fcntl.lockf(shared, fcntl.LOCK_EX, 1, 0)
        try:
            durable, _ = self._read_words()
            if lsn > durable:
                self._publish(lsn, durable)
        finally:
            with suppress(OSError):
                fcntl.lockf(shared, fcntl.LOCK_UN, 1, 0)

    def _flush(self) -> None:
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            raise StorageError(
                f"{self._log_path}: the write was committed but flushing it to disk failed "
                f"({exc}); it may be lost if the machine crashes",
                hint="check the disk; the store stays consistent",
            ) from exc
        counters.flushes += 1

    def abandon(self) -> None:
        """In a forked child: close the child's copy of ``wal.shm``, nothing else (no flush,
        and no lock: a parent thread may have held one at the fork)."""
        if self._closed:
            return  # closed already: the number may be another file's now
        self._closed = True
        if self._shared is not None:
            with suppress(OSError):
                os.close(self._shared)

    def close(self) -> None:
        """Flush what was committed (a write whose own flush has not run yet is covered by
        this one, and then returns without flushing), and close ``wal.shm`` (the log's
        descriptor is the caller's)."""
        with self._flush_lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._flush()
            except StorageError as exc:
                self._close_failure = exc
            if self._shared is not None:
                with suppress(OSError):
                    os.close(self._shared)
