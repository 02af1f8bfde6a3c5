"""Group commit across the threads of a process: writes that arrive together share one commit.

LMDB runs one write transaction at a time, and with ``sync=True`` each commit pays for its
flushes.  When several threads of one process write at once, the first becomes the *leader*:
it takes every write queued so far and runs them in one LMDB write transaction, each in its own
nested transaction (so one that raises leaves nothing and does not disturb the others), then
commits once.  The threads that queued meanwhile (while the leader waited for LMDB's lock or
for the disk) wait; the leader hands each its result or its exception and passes the lead to
the first write that arrived after its batch was taken.  So N threads writing at once pay about
one commit per batch instead of N, and a lone writer runs exactly as before (a batch of one
runs directly in the write transaction, no nested one).

:class:`Combiner` is only the queue and the hand-over; the transaction work is the ``commit``
function it is given (:func:`rstore.storage.commit.commit_batch`), which sets every request's
outcome or raises for the whole batch (nothing of it was committed), and may return a second
step -- making the commit durable (:mod:`rstore.storage.durable`) -- that runs after the lead
has been passed on, so the next batch's transaction overlaps this batch's wait for the disk.
A request is woken only after that step: a durable write returns once it is on disk.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from rstore.errors import StorageError

__all__ = ["Combiner", "Request"]


class Request:
    """One write waiting to be run: its function and, once done, its outcome."""

    __slots__ = ("after_commit", "committing", "done", "error", "fn", "lead", "result", "wake")

    def __init__(
        self, fn: Callable[[Any], Any], after_commit: Callable[[], bool] | None = None
    ) -> None:
        self.fn = fn
        # Run by the leader once the write is committed, before the commit is flushed (waking
        # the readers that may run before the flush; true if it woke any); must not raise.
        self.after_commit = after_commit
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False  # the outcome is final (committed, or failed)
        self.lead = False  # asked to lead the next batch
        self.committing = False  # its batch reached LMDB's commit: it may be stored
        # For a thread that waits: a lock held from the start and released once to wake it (a
        # bare lock is much cheaper to make than an Event).  A leader's own write has none.
        self.wake: threading.Lock | None = None

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class Combiner:
    """The write queue of one environment in one process."""

    def __init__(self, commit: Callable[[list[Request]], Callable[[bool], None] | None]) -> None:
        self._commit = commit
        self._lock = threading.Lock()
        self._queue: list[Request] = []
        self._leading = False
        #: Batches committed (or failed) and writes run, by this process (tests read them).
        self.batches = 0
        self.writes = 0

    def run(self, fn: Callable[[Any], Any], after_commit: Callable[[], bool] | None = None) -> Any:
        """Run ``fn`` in a write transaction, alone or with the writes of other threads;
        return its result or raise its exception once its batch has been committed (and made
        durable).  ``after_commit`` runs once ``fn``'s write is committed and before it is
        made durable, only if it succeeded; it returns whether it woke readers (the flush then
        first waits briefly for one of their commits to cover it)."""
        req = Request(fn, after_commit)
        wake = None
        with self._lock:
            leading = not self._leading
            if leading:  # nobody leads, so nobody is queued: a batch of one, no queue
                self._leading = True
            else:
                wake = req.wake = threading.Lock()
                wake.acquire()
                self._queue.append(req)
        interrupted: BaseException | None = None
        if wake is None:
            self._lead(req, [req])
        else:
            # Wait to be served or to be asked to lead.  An interrupt (KeyboardInterrupt) must
            # not abandon the queue: the write may be committing, and if this thread was made
            # leader the others wait for it.  It is raised once the write is settled.
            while True:
                try:
                    wake.acquire()
                    break
                except BaseException as exc:
                    interrupted = exc
            if not req.done:
                self._lead(req, None)
        if interrupted is not None:
            raise interrupted
        return req.outcome()

    def _lead(self, own: Request, batch: list[Request] | None) -> None:
        if batch is None:
            with self._lock:
                batch, self._queue = self._queue, []
        finish: Callable[[bool], None] | None = None
        try:
            try:
                finish = self._commit(batch)
            except Exception as exc:
                _fail(batch, own, exc)
            except BaseException as exc:  # KeyboardInterrupt in the leader: it gets it ...
                own.error, own.done = exc, True
                unsure = [r for r in batch if not r.done and r.committing]
                _fail(unsure, own, _interrupted("while its commit ran"))
                with self._lock:  # ... and the others, never run, go back to the front
                    self._queue[:0] = [r for r in batch if not r.done]
                batch = [own, *unsure]
        finally:
            self.batches += 1
            self.writes += len(batch)
            self._hand_over()
        # The lead is passed on before this batch's flush: the next batch runs meanwhile.
        woken = False
        for r in batch:
            if r.after_commit is not None and r.done and r.error is None:
                with suppress(Exception):  # the write is committed; waking is best effort
                    woken = r.after_commit() or woken
        try:
            if finish is not None:
                finish(woken)
        except Exception as exc:
            _fail(batch, own, exc, committed=True)
        except BaseException as exc:  # an interrupt during the flush: the others get told
            _fail(batch, own, _interrupted("after its commit, during the flush"), committed=True)
            own.error = exc
        finally:
            for r in batch:
                if r is not own and r.wake is not None:
                    r.wake.release()

    def _hand_over(self) -> None:
        with self._lock:
            if self._queue:
                nxt = self._queue[0]
                nxt.lead = True
                assert nxt.wake is not None  # every queued write waits on its lock
                nxt.wake.release()
            else:
                self._leading = False


def _fail(batch: list[Request], own: Request, exc: Exception, *, committed: bool = False) -> None:
    for r in batch:
        if committed or not r.done:
            r.result = None
            r.error = exc if r is own else _copied(exc)
            r.done = True


def _interrupted(when: str) -> StorageError:
    return StorageError(
        f"the write was interrupted {when} (a KeyboardInterrupt or exit in the thread that "
        "ran it with other threads' writes); it may or may not be stored, and may not be on "
        "disk",
        hint="read the store to see whether it is there before writing it again",
    )


def _copied(exc: Exception) -> Exception:
    """Each waiting thread raises its own exception object (one object raised in several
    threads at once would have its traceback rewritten under them)."""
    try:
        return copy.copy(exc)
    except Exception:
        return exc
