"""Flushing the write-ahead log: one flush at a time across processes, each covering every
record marked before it started.

A :class:`~rstore.storage.durable.MetaFlusher` on ``wal.log`` (its word in ``wal.shm`` says
which log sequence number is known to be on disk) with two additions for many writer processes:

* **One flush at a time, across processes.**  A writer whose record is not covered yet takes a
  lock (``lockf`` of the first byte of ``wal.shm``; a lock of the process, released by the
  kernel if it dies) before it flushes.  Writers of other processes that arrive meanwhile wait
  for that flush instead of issuing theirs beside it (on one disk, flushes issued together run
  one after the other anyway), and most find their record covered once they get the lock.
* **A flush covers more than its own record.**  Each durable writer, once it has marked its
  record committed, raises a second word of ``wal.shm`` to its sequence number (*marked*).  A
  flush that starts after the mark of record m puts record m on disk, with its committed byte,
  and every record before it (each proven by its successor: they are all committed, so none of
  them can be overwritten any more, and all were written before m's commit).  So the flusher
  publishes the highest marked number it read before flushing, not only its own.

Racing writers may lower the marked word (read, compare and write are not atomic): that only
makes a flush claim less than it could, never more.  Both words are read with one ``pread``
(:meth:`LogFlusher._read_words`), and a flusher holding the lock publishes without reading the
durable word again: only a flush under the lock writes it.
"""

from __future__ import annotations

import fcntl
import os
import struct
from contextlib import suppress

from rstore.storage.durable import MetaFlusher, counters

__all__ = ["LogFlusher"]

_MARKED_AT = 64  # the marked word's offset in wal.shm (the durable word is at 0)
_MARKED = struct.Struct("<8sQQ")  # magic, sequence number, check
_WORDS = _MARKED_AT + _MARKED.size  # both words, read at once
_MAGIC = b"rsmarkd1"
_CHECK = 0x6D61_726B_6564_2121


class LogFlusher(MetaFlusher):
    """The flushes of ``wal.log`` for one process (see the module's docstring)."""

    _uncovered = 0  # the record whose note_marked found the durable word below it

    def note_marked(self, lsn: int) -> None:
        """After this process marked record ``lsn`` committed (durable writes only), before
        :meth:`make_durable` of ``lsn``: the durable word read here is not read again there."""
        if self._shared is None:
            return
        durable, marked = self._read_words()
        if durable >= lsn:  # a flush that started after a later record's mark covered it
            self._note_known(durable)
        else:
            self._uncovered = lsn
            if marked < lsn:
                with suppress(OSError):
                    os.pwrite(self._shared, _MARKED.pack(_MAGIC, lsn, lsn ^ _CHECK), _MARKED_AT)

    def _shared_covers(self, txnid: int) -> bool:
        # Not covered when note_marked just read the word for this record (another thread's
        # record in between only costs this read).
        return txnid != self._uncovered and super()._shared_covers(txnid)

    def _read_words(self) -> tuple[int, int]:
        """The durable and the marked sequence numbers (0 for a word not valid)."""
        if self._shared is None:
            return 0, 0
        try:
            data = os.pread(self._shared, _WORDS, 0)
        except OSError:
            return 0, 0
        if len(data) != _WORDS:
            return self._decode_shared(data), 0
        magic, lsn, check = _MARKED.unpack_from(data, _MARKED_AT)
        marked = int(lsn) if magic == _MAGIC and check == lsn ^ _CHECK else 0
        return self._decode_shared(data), marked

    def note_flushed(self, lsn: int) -> None:
        """A flush of the log made elsewhere -- a checkpoint's, after its header -- put every
        record up to ``lsn`` on disk: publish it (under the lock, as a flush would).  Writers
        waiting for a flush then find their records covered; and recovery knows that much of
        the log was on disk, also of a store written with ``sync=False``
        (:func:`rstore.storage.wal_recovery.check_loss`)."""
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

    def _flush_covering(self, txnid: int) -> None:
        """Flush the log, one process at a time, unless the flush waited for covered record
        ``txnid`` (a log sequence number); publish the highest record marked before it."""
        shared = self._shared
        if shared is not None:
            with suppress(OSError):
                fcntl.lockf(shared, fcntl.LOCK_EX, 1, 0)  # another process's flush first
        try:
            durable, marked = self._read_words()
            if txnid <= durable:  # the flush waited for covered it
                counters.skipped += 1
                self._note_known(durable)
                return
            covers = max(txnid, marked)
            self._flush()
            self._publish(covers, durable)  # under the lock, no other flush wrote the word
        finally:
            if shared is not None:
                with suppress(OSError):
                    fcntl.lockf(shared, fcntl.LOCK_UN, 1, 0)
