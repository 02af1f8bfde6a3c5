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
function it is given (:meth:`rstore.storage.env.Env.commit_batch`), which sets every request's
outcome or raises for the whole batch (nothing of it was committed), and may return a second
step -- making the commit durable (:meth:`rstore.storage.engine.wal.WriteAheadLog.make_durable`)
-- that runs after the lead
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

    __slots__ = ("after_commit", "bulk", "committing", "done", "error", "fn", "lead", "queued",
                 "result", "settled", "wake")  # fmt: skip

    def __init__(
        self,
        fn: Callable[[Any], Any],
        after_commit: Callable[[], bool] | None = None,
        bulk: bool = False,
    ) -> None:
        self.fn = fn
        # A large write that a store with the log commits without recording its changes, made
        # durable by a checkpoint before it returns -- when it runs alone (Env.commit_batch).
        self.bulk = bulk
        # Run by the leader once the write is committed, before the commit is flushed (waking
        # the readers that may run before the flush; true if it woke any); must not raise.
        self.after_commit = after_commit
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False  # the outcome is final (committed, or failed)
        self.lead = False  # leads (or is asked to lead) a batch
        self.queued = False  # in the queue, for a leader to take
        self.committing = False  # its batch reached LMDB's commit: it may be stored
        self.settled = False  # done and, with sync=True, flushed: its thread may return
        # For a thread that waits: a lock held from the start and released once to wake it (a
        # bare lock is much cheaper to make than an Event).  A leader's own write has none.
        self.wake: threading.Lock | None = None


class Combiner:
    """The write queue of one environment in one process.

    Interrupts: a signal handler's exception (``KeyboardInterrupt``) can be raised in the main
    thread after any call of a C function.  Once a write is queued or leads, it is the
    business of every writing thread of the process (a queue with no leader waits forever), so
    :meth:`run` and :meth:`_lead` hold such an exception until the write is settled and raise
    it then; their steps are numbered, and each step's end is marked with no such call between
    its last effect and the mark, so a step interrupted is either redone (when redoing it is
    harmless) or finished by the code for an interrupted step.
    """

    def __init__(self, commit: Callable[[list[Request]], Callable[[bool], None] | None]) -> None:
        self._commit = commit
        self._lock = threading.Lock()
        self._queue: list[Request] = []
        self._leading = False
        #: Batches committed (or failed) and writes run, by this process (tests read them).
        self.batches = 0
        self.writes = 0

    def run(
        self,
        fn: Callable[[Any], Any],
        after_commit: Callable[[], bool] | None = None,
        bulk: bool = False,
    ) -> Any:
        """Run ``fn`` in a write transaction, alone or with the writes of other threads;
        return its result or raise its exception once its batch has been committed (and made
        durable).  ``after_commit`` runs once ``fn``'s write is committed and before it is
        made durable, only if it succeeded; it returns whether it woke readers (the flush then
        first waits briefly for one of their commits to cover it).  An interrupt raised in
        this thread meanwhile is raised once the write is settled (it may be stored)."""
        req = Request(fn, after_commit, bulk)
        interrupted: BaseException | None = None
        try:
            with self._lock:
                if self._leading:
                    req.wake = wake = threading.Lock()
                    wake.acquire()
                    self._queue += (req,)
                    req.queued = True
                else:  # nobody leads, so nobody is queued: a batch of one, no queue
                    self._leading = req.lead = True
        except BaseException as exc:
            if not (req.lead or req.queued):
                raise  # nothing was done
            interrupted = exc
        leading: _Leading | None = None
        while not req.settled:  # (the inner loop's back edge, where an interrupt can land
            try:  # too, is inside this try: two signals in a row are held as well)
                while not req.settled:
                    try:
                        if req.lead:
                            if leading is None:
                                leading = _Leading(req)
                            self._lead(leading)
                        else:  # wait to be served or asked to lead (set before the release)
                            assert req.wake is not None
                            req.wake.acquire()
                    except BaseException as exc:
                        interrupted = exc
            except BaseException as exc:
                interrupted = exc
        if leading is not None and leading.held is not None:
            interrupted = leading.held
        if interrupted is not None:
            raise interrupted
        if req.error is not None:
            raise req.error
        return req.result

    def _lead(self, s: _Leading) -> None:
        """Run a batch (the leader's write and, if it was queued, every queued write), pass
        the lead on, settle the batch.  Resumes where it was if called again (after an
        interrupt between its steps); interrupts inside a step are held in ``s.held``."""
        own = s.own
        while s.step != _OVER:
            try:
                while s.step != _OVER:
                    self._steps(s, own)
            except BaseException as exc:
                s.held = exc
                if s.step == 1:
                    own.error, own.done = exc, True
                    s.step = 10
        own.settled = True

    def _steps(self, s: _Leading, own: Request) -> None:
        """The steps from ``s.step`` on, in order (one call when nothing interrupts)."""
        if s.step == 0:  # take the batch
            if own.queued:
                with self._lock:
                    s.batch, self._queue = self._queue, []
                    s.step = 1
            else:
                s.step = 1
        if s.step == 1:  # run it: every request gets its outcome
            try:
                s.finish = self._commit(s.batch)
            except Exception as exc:
                s.step = 2
                _fail(s.batch, own, exc)
            s.step = 2
        if s.step == 10:  # the commit was interrupted: those it did not run go back
            rest = [r for r in s.batch if not (r.done or r.committing)]
            # The others stay in the batch and are settled with it: those that reached the
            # commit (done or not: the interrupt may have come after it, before their flush)
            # and those whose own write failed.
            kept = [r for r in s.batch if r is not own and (r.done or r.committing)]
            with self._lock:
                self._queue[:0] = rest
                s.batch = [own, *kept]
                s.step = 11
        if s.step == 11:  # those that may be stored cannot tell whether they are on disk
            unsure = [r for r in s.batch if r is not own and (not r.done or r.error is None)]
            _fail(unsure, own, _interrupted("while its commit ran"), committed=True)
            s.step = 2
        if s.step == 2:  # pass the lead on: the next batch runs during this one's flush
            n = len(s.batch)
            with self._lock:
                s.next = nxt = self._queue[0] if self._queue else None
                if nxt is None:
                    self._leading = False
                else:
                    nxt.lead = True
                self.batches += 1
                self.writes += n
                s.step = 3
        if s.step == 3:
            s.step = 4
            if s.next is not None and s.next.wake is not None:
                s.next.wake.release()
        if s.step == 4:  # wake readers (best effort; one may be woken twice)
            while s.i < len(s.batch):
                r = s.batch[s.i]
                if r.after_commit is not None and r.done and r.error is None:
                    with suppress(Exception):  # the write is committed
                        s.woken = r.after_commit() or s.woken
                s.i += 1
            s.step, s.i = 5, 0
        if s.step == 5:  # make the batch durable (interrupted, it is flushed again)
            if s.finish is not None:
                try:
                    s.finish(s.woken)
                except Exception as exc:
                    _fail(s.batch, own, exc, committed=True)
            s.step = 6
        if s.step == 6:  # settle the batch: each waiting thread may return
            while s.i < len(s.batch):
                r = s.batch[s.i]
                if not r.done:  # left so by an interrupt: it may be stored
                    _fail([r], own, _interrupted("while its commit ran"))
                s.i += 1
                if r is not own and r.wake is not None:
                    r.settled = True
                    r.wake.release()
            s.step = _OVER


class _Leading:
    """Where a leader is in leading its batch (kept across interrupts)."""

    __slots__ = ("batch", "finish", "held", "i", "next", "own", "step", "woken")

    def __init__(self, own: Request) -> None:
        self.own = own
        self.batch = [own]
        self.step = 0
        self.i = 0
        self.finish: Callable[[bool], None] | None = None
        self.next: Request | None = None
        self.woken = False
        self.held: BaseException | None = None


def _fail(batch: list[Request], own: Request, exc: Exception, *, committed: bool = False) -> None:
    for r in batch:
        if committed or not r.done:
            r.result = None
            r.error = exc if r is own else _copied(exc)
            r.done = True


_OVER = 99  # the last step of leading a batch


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
