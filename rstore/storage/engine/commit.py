"""What a write does before and after its LMDB commit, besides the commit itself (which is
:meth:`rstore.storage.env.Env.commit_batch`, top to bottom).

* before the write transaction: :func:`pin` -- the log's pin (docs/durability.md);
* after the commit, run by the group commit's leader once it has let the next batch start
  (:mod:`rstore.storage.engine.combine`): :func:`log_durable` (``sync=True``: the record marked, the
  log flushed or found flushed, the checkpointer poked), :func:`checkpoint_after`
  (``sync=False``) or :func:`bulk_checkpoint` (a bulk write, made durable by a checkpoint).
  A failure there is a failure after the commit: the writes are told they are stored but may
  not be on disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rstore.storage.engine.faults import crash_point
from rstore.storage.engine.log_flush import READER_GRACE_S
from rstore.storage.failures import translate_os

if TYPE_CHECKING:
    from rstore.storage.engine.wal import WriteAheadLog
    from rstore.storage.engine.wal_log import Position

__all__ = ["bulk_checkpoint", "checkpoint_after", "log_durable", "pin"]


def pin(path: str, wal: WriteAheadLog) -> None:
    """The log's pin, taken before the write transaction begins: nothing is written yet, so a
    failure (a checkpoint's flush) fails the write as not stored."""
    try:
        wal.prepare()
    except OSError as exc:
        raise translate_os(exc, path, "write the log of") from exc


def log_durable(wal: WriteAheadLog, position: Position, readers_woken: bool) -> None:
    """After the commit of the record at ``position`` (``sync=True``): mark it committed,
    flush the log (or find it flushed), let the checkpointer look.  A failure here is a
    failure after the commit: the writes are told they are stored but may not be on disk."""
    wal.committed(position, durable=True)
    if readers_woken:
        wal.flusher.make_durable(position.lsn, READER_GRACE_S)
    else:
        wal.flusher.make_durable(position.lsn)
    wal.poke()


def bulk_checkpoint(wal: WriteAheadLog, readers_woken: bool) -> None:
    """After the commit of a bulk write (either ``sync``): its changes are in ``data.mdb``
    only, so it returns once a checkpoint covers it -- ``data.mdb`` flushed, the header naming
    it, the log flushed.  Until then no other record can follow its barrier (the next writer
    would make that checkpoint first)."""
    del readers_woken
    crash_point("bulk-committed")
    wal.checkpoint()


def checkpoint_after(wal: WriteAheadLog, readers_woken: bool) -> None:
    """``sync=False``: nothing to flush; the checkpointer thread moves the pin."""
    del readers_woken
    wal.poke()
