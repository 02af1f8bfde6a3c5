"""The second half of a durable commit, made outside LMDB's writer lock and shared.

A ``sync=True`` environment is opened with LMDB's ``MDB_NOMETASYNC``: a commit writes its pages,
flushes the data file (``fdatasync``) and then writes its meta page *without* flushing it, and
releases the writer lock.  The commit is durable once that meta page is on disk too -- after
any ``fdatasync`` of ``data.mdb`` that starts after the commit returned, whoever makes it:

* the writer flushes the file itself, after the lock is released, so the next writer (of any
  process) already runs while it waits for the disk;
* a flush by another writer (of any process) that began after this commit covers it too --
  including the flush LMDB makes inside every later ``sync=True`` commit, before that
  commit's own meta page (:meth:`MetaFlusher.committed`).  A writer that woke blocked
  XREADGROUP readers before its flush waits briefly for one of their commits to cover it
  (``READER_GRACE_S``) instead of flushing at once (docs/durability.md, "Wake-ups before the
  flush").

Which commits are known durable is kept in ``durable.shm`` beside the store (read and written
with ``pread``/``pwrite``, never mapped): a writer whose commit is already covered by another's
flush skips its own.  The word names the data file (device and inode), so a store replaced
under the same path never inherits a stale claim; a torn or damaged word reads as "nothing is
known durable", which only costs a flush.  The file is a cache of facts, never a promise: if it
cannot be used, every writer flushes for itself.

Why this keeps LMDB's integrity after an OS crash or power loss: ``MDB_NOMETASYNC`` is a mode
LMDB documents as integrity-preserving (a crash may only undo the last commits whose meta page
was not flushed) -- the data pages of a commit are on disk before its meta page is written, and
a commit never reuses a page of the two trees its meta pages may point to.  The flush here only
adds what ``sync=True`` promises on top: a call returns after its meta page is on disk.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from contextlib import suppress

from rstore.errors import StorageError

__all__ = ["FILE_NAME", "READER_GRACE_S", "MetaFlusher", "counters", "decode_word", "read_word"]

FILE_NAME = "durable.shm"
_MAGIC = b"rsdurab1"
# magic | device | inode | durable txnid | check (the three numbers xor-folded with a constant)
_RECORD = struct.Struct("<8sQQQQ")
_CHECK = 0x5A17_C0DE_D00D_F00D
#: How long a writer that woke readers before its flush waits for one of their commits to
#: cover its own (their commit flushes the data file) before it flushes itself.
READER_GRACE_S = 0.003
# How often it looks at durable.shm meanwhile.
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
    """The transaction id (or log sequence number) a shared word's bytes say is durable for the
    file ``identity`` (device, inode); 0 for a word that is torn, damaged or another file's."""
    if len(data) < _RECORD.size:
        return 0
    magic, dev, ino, txnid, check = _RECORD.unpack_from(data)
    if magic != _MAGIC or (dev, ino) != identity or check != dev ^ ino ^ txnid ^ _CHECK:
        return 0
    return int(txnid)


def read_word(path: str, fd: int) -> int:
    """What the shared word at ``path`` says is durable of the file open as ``fd`` (0 when the
    word is missing, unreadable or not that file's)."""
    st = os.fstat(fd)
    try:
        word = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        return decode_word(os.pread(word, _RECORD.size, 0), (st.st_dev, st.st_ino))
    except OSError:
        return 0
    finally:
        os.close(word)


class MetaFlusher:
    """Makes commits of one store durable after LMDB committed them with ``MDB_NOMETASYNC``."""

    def __init__(
        self, store_path: str, data_path: str, shared_name: str = FILE_NAME, fd: int = -1
    ) -> None:
        """``fd``: a descriptor of ``data_path`` to flush through, owned by the caller (the
        write-ahead log's); by default the flusher opens its own."""
        self._data_path = data_path
        self._own_fd = fd < 0
        self._fd = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC) if fd < 0 else fd
        st = os.fstat(self._fd)
        self._identity = (st.st_dev, st.st_ino)
        self._lock = threading.Lock()
        # One flush at a time per process: a write whose commit a flush in progress may not
        # cover waits for it, then looks again (often covered by then), and closing waits.
        self._flush_lock = threading.Lock()
        self._closed = False
        self._close_failure: StorageError | None = None
        self._known = 0  # the highest txnid this process knows is durable
        self._shared: int | None = None
        with suppress(OSError):
            path = os.path.join(store_path, shared_name)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            try:
                if os.fstat(fd).st_size < _RECORD.size:
                    os.posix_fallocate(fd, 0, 4096)  # a full disk fails here, not later
            except OSError:
                os.close(fd)
                raise
            self._shared = fd

    @property
    def shared_fd(self) -> int:
        """The descriptor of the shared word's file (the write-ahead log locks it for its
        checkpoints); ``-1`` when there is none."""
        return -1 if self._shared is None else self._shared

    def _read_shared(self) -> int:
        if self._shared is None:
            return 0
        try:
            data = os.pread(self._shared, _RECORD.size, 0)
        except OSError:
            return 0
        return self._decode_shared(data)

    def _decode_shared(self, data: bytes) -> int:
        """The durable txnid in the word's bytes (``data`` may run past them); 0 if invalid."""
        if len(data) < _RECORD.size:
            return 0
        return decode_word(data, self._identity)

    def _publish(self, txnid: int, shared: int | None = None) -> None:
        """``shared``: the word's value if the caller has just read it (no second read)."""
        with self._lock:
            if txnid <= self._known:
                return
            self._known = txnid
        if self._shared is None:
            return
        if (self._read_shared() if shared is None else shared) >= txnid:
            return
        dev, ino = self._identity
        # Racing writers may overwrite a higher value with a lower one: that costs a flush
        # later, never a skipped one (the word only ever holds a txnid that was durable).
        with suppress(OSError):
            record = _RECORD.pack(_MAGIC, dev, ino, txnid, dev ^ ino ^ txnid ^ _CHECK)
            os.pwrite(self._shared, record, 0)

    def forget_if_ahead(self, last_txnid: int) -> None:
        """At open: a word claiming more than the store has committed (left by a store that
        was replaced at this path and whose data file got the same inode) is erased.  Racing
        a writer that just published is harmless: erasing only costs flushes."""
        if self._shared is not None and self._read_shared() > last_txnid:
            with suppress(OSError):
                os.pwrite(self._shared, bytes(_RECORD.size), 0)

    def known_durable(self) -> int:
        """The highest transaction id this process, or ``durable.shm``, knows is on disk."""
        return max(self._known, self._read_shared())

    def committed(self, txnid: int) -> None:
        """After this process's commit ``txnid`` changed pages: every earlier commit is on disk.

        LMDB's commit (without ``MDB_NOSYNC``) flushes the data file *before* writing its own
        meta page (``mdb_txn_commit``: ``mdb_page_flush``, ``mdb_env_sync0``, then
        ``mdb_env_write_meta``), and the meta page of every earlier commit was written before
        that commit released the writer lock this one then took: that flush put them on disk.
        Published, it lets a writer whose own flush has not started skip it."""
        self._publish(txnid - 1)

    def _note_known(self, txnid: int) -> None:
        """``txnid`` was read from the shared word: it is durable."""
        with self._lock:
            self._known = max(self._known, txnid)

    def _shared_covers(self, txnid: int) -> bool:
        """Whether the shared word says commit ``txnid`` is on disk."""
        return txnid <= self._read_shared()

    def make_durable(self, txnid: int, grace_s: float = 0.0) -> None:
        """Return once commit ``txnid`` is on disk: at once if another flush covered it.

        With ``grace_s``, first wait up to that long for a later commit to cover it (a reader
        woken before this flush, whose own commit flushes the file; :meth:`committed`), and
        flush only if none did."""
        if txnid <= self._known or self._shared_covers(txnid):
            counters.skipped += 1
            return
        if grace_s > 0 and self._covered_within(txnid, grace_s):
            counters.skipped += 1
            counters.handed += 1
            return
        with self._flush_lock:
            if self._closed and self._close_failure is not None:
                raise self._close_failure
            if self._closed or txnid <= self._known:  # closing flushed it, or a flush did
                counters.skipped += 1
                return
            self._flush_covering(txnid)

    def _flush_covering(self, txnid: int) -> None:
        """Flush (holding this process's flush lock) and publish that ``txnid`` is on disk."""
        self._flush()
        self._publish(txnid)

    def _covered_within(self, txnid: int, grace_s: float) -> bool:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            time.sleep(_GRACE_POLL_S)
            if txnid <= self._known or txnid <= self._read_shared():
                return True
        return False

    def _flush(self) -> None:
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            raise StorageError(
                f"{self._data_path}: the write was committed but flushing it to disk failed "
                f"({exc}); it may be lost if the machine crashes",
                hint="check the disk; the store stays consistent",
            ) from exc
        counters.flushes += 1

    def abandon(self) -> None:
        """In a forked child: close the child's copies of the descriptors, nothing else (no
        flush, and no lock: a parent thread may have held one at the fork)."""
        if self._closed:
            return  # closed already: the numbers may be another file's now
        self._closed = True
        fds = [self._fd] if self._own_fd else []
        if self._shared is not None:
            fds.append(self._shared)
        for fd in fds:
            with suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        """Flush what was committed (a write whose own flush has not run yet is covered by
        this one, and then returns without flushing), and close."""
        with self._flush_lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._flush()
            except StorageError as exc:
                self._close_failure = exc
            if self._own_fd:
                with suppress(OSError):
                    os.close(self._fd)
            if self._shared is not None:
                with suppress(OSError):
                    os.close(self._shared)
