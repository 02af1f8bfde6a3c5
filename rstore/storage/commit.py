"""Running a batch of writes in one LMDB write transaction and committing it once.

Called by the environment's :class:`~rstore.storage.combine.Combiner` with the writes queued
by this process's threads.  One write runs directly in the transaction, as it always did.
Several run one after another, each in a nested transaction: one that raises is rolled back
alone and gets its exception; the others are committed together.  Outcomes are handed out only
once the commit has succeeded; if the map fills up, the whole batch is rolled back, the map
grows and every write runs again (write functions may run more than once).  Anything that
fails the commit itself fails every write of the batch: none of it was stored.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import lmdb

from rstore.storage.failures import translate, translate_os
from rstore.storage.faults import crash_point
from rstore.storage.log_flush import READER_GRACE_S
from rstore.storage.txn import Carry

if TYPE_CHECKING:
    from rstore.storage.combine import Request
    from rstore.storage.env import Env
    from rstore.storage.wal import WriteAheadLog
    from rstore.storage.wal_log import Position

log = logging.getLogger("rstore.storage")

__all__ = ["commit_batch"]


def commit_batch(env: Env, batch: list[Request]) -> Callable[[bool], None] | None:
    """Run ``batch`` in one write transaction and commit it; set each request's outcome.
    Raises (for the whole batch) when nothing could be committed.  Returns what is left to do
    before the writes may return -- flushing the log (``sync=True``) and letting the
    checkpointer look, or a bulk write's checkpoint -- for the caller to run after it has let
    the next batch start, telling it whether readers were woken meanwhile (whose own commit
    may then make the flush unnecessary)."""
    while True:
        for req in batch:
            req.committing = False
        env._gate.enter()
        action = None
        try:
            if env._forked:
                env._reopen_after_fork()
            wal = env._wal
            assert wal is not None  # a writable store is written through its log
            _prepare(env, wal)  # a pin before the transaction (docs/durability.md)
            raw = env._begin(True)
            txnid = int(raw.id())
            bulk = len(batch) == 1 and batch[0].bulk
            try:
                wal.ensure_pin(raw)  # before anything is written (docs/durability.md)
                # A bulk write alone: its changes are not recorded.
                work = raw if bulk else wal.wrap(raw)
                carry = env._take_carry(txnid)
                if len(batch) == 1:
                    txn = env._txn(work, True)
                    if carry is not None:
                        txn.adopt(carry)
                    outcomes: list[tuple[Any, BaseException | None]] = [(batch[0].fn(txn), None)]
                    txn.flush()
                    carry = txn.carry(txnid)
                else:
                    outcomes, carry = _run_nested(env, wal, work, txnid, batch, carry)
                position = wal.append_barrier(raw) if bulk else wal.append(work, txnid)
                crash_point("log-written")
            except OSError as exc:
                raw.abort()
                raise translate_os(exc, env.path, "write the log of") from exc
            except BaseException:
                raw.abort()
                raise
            for req in batch:
                req.committing = True  # from here an interrupt cannot tell whether it stored
            raw.commit()
            env._committed(txnid, carry)
            for req, (result, error) in zip(batch, outcomes):
                req.result, req.error, req.done = result, error, True
            if position is None:
                return None  # nothing was written
            if bulk:
                return functools.partial(_bulk_checkpoint, wal)
            wal.lmdb_committed()  # before the next write transaction of this process
            if not env.sync_mode:
                wal.committed(position, durable=False)
                return functools.partial(_checkpoint_after, wal)
            return functools.partial(_log_durable, wal, position)
        except lmdb.MapFullError:
            action = "grow"
        except lmdb.MapResizedError:
            action = "adopt"
        except lmdb.Error as exc:
            raise translate(exc, env.path, writing=True) from exc
        finally:
            env._gate.leave()
        if action == "grow":
            env._grow_map()
        else:
            env._adopt_map_size()


def _prepare(env: Env, wal: WriteAheadLog) -> None:
    """The log's pin, taken before the write transaction begins: nothing is written yet, so a
    failure (a checkpoint's flush) fails the write as not stored."""
    try:
        wal.prepare()
    except OSError as exc:
        raise translate_os(exc, env.path, "write the log of") from exc


def _log_durable(wal: WriteAheadLog, position: Position, readers_woken: bool) -> None:
    """After the commit of the record at ``position`` (``sync=True``): mark it committed,
    flush the log (or find it flushed), let the checkpointer look.  A failure here is a
    failure after the commit: the writes are told they are stored but may not be on disk."""
    wal.committed(position, durable=True)
    if readers_woken:
        wal.flusher.make_durable(position.lsn, READER_GRACE_S)
    else:
        wal.flusher.make_durable(position.lsn)
    wal.poke()


def _bulk_checkpoint(wal: WriteAheadLog, readers_woken: bool) -> None:
    """After the commit of a bulk write (either ``sync``): its changes are in ``data.mdb``
    only, so it returns once a checkpoint covers it -- ``data.mdb`` flushed, the header naming
    it, the log flushed.  Until then no other record can follow its barrier (the next writer
    would make that checkpoint first)."""
    del readers_woken
    crash_point("bulk-committed")
    wal.checkpoint()


def _checkpoint_after(wal: WriteAheadLog, readers_woken: bool) -> None:
    """``sync=False``: nothing to flush; the checkpointer thread moves the pin."""
    del readers_woken
    wal.poke()


def _run_nested(
    env: Env, wal: WriteAheadLog, raw: Any, txnid: int, batch: list[Request], carry: Carry | None
) -> tuple[list[tuple[Any, BaseException | None]], Carry | None]:
    """Each write in a nested transaction of ``raw``; ``(outcomes, carry for the next write
    transaction)``.  A nested transaction has its parent's id, so a write's records are
    carried to the next one of the batch as ``txnid - 1``; a write that failed may have
    changed the records it was handed, so the next one starts afresh."""
    outcomes: list[tuple[Any, BaseException | None]] = []
    for req in batch:
        child = env._env.begin(write=True, parent=getattr(raw, "raw", raw), buffers=True)
        child = wal.wrap(child, parent=raw)
        txn = env._txn(child, True)
        if carry is not None:
            txn.adopt(carry)
        try:
            result = req.fn(txn)
            txn.flush()
        except (lmdb.MapFullError, lmdb.MapResizedError):
            child.abort()
            raise  # the whole batch runs again after the map changed
        except lmdb.Error as exc:
            child.abort()
            outcomes.append((None, translate(exc, env.path, writing=True)))
            carry = None
            continue
        except Exception as exc:
            child.abort()
            outcomes.append((None, exc))
            carry = None
            continue
        except BaseException:
            child.abort()
            raise
        child.commit()
        outcomes.append((result, None))
        carry = txn.carry(txnid - 1)
    if carry is not None:
        carry.txnid = txnid  # valid for the transaction after this batch's commit
    return outcomes, carry
