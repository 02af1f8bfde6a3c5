"""The thread that runs batches for ``--sync always`` (see :mod:`.server`).

The loop hands a batch over and goes on reading and parsing; the committer runs it with
:meth:`rstore.Store.execute_many` -- the transaction, the commit and the flushes -- and hands
the outcome to a callback, in its own thread (the server's callback passes it on to the event
loop).  One batch at a time: what arrives meanwhile forms the next one, so a commit carries
every client that sent something during the last flush (measured: letting a second batch
start during the first one's flush only made commits smaller and flushes more).  A plain
queue, not ``concurrent.futures``: the handoff is on every batch's path, and a future costs
several lock round trips more.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from rstore import BlockedCall, ResponseError, Store, messages

__all__ = ["Committer", "execute"]

log = logging.getLogger("rstore.server")

#: what the committer is given: the store, the batch, the parked reads it may serve, whom to tell
_Job = tuple[Store, list[list[bytes]], list[BlockedCall], Callable[[list[Any], float], object]]


def execute(
    store: Store, batch: list[list[bytes]], waiting: list[BlockedCall]
) -> tuple[list[Any], float]:
    """Run a batch, serving the parked reads ``waiting`` after the commands that write to
    their streams (:meth:`rstore.Store.execute_many`): the results (the batch's, then the
    reads'), and the time each command took on average.  A failure of the whole batch
    (nothing of it committed) is every command's reply; the reads then still wait."""
    started = time.perf_counter()
    try:
        results: list[Any] = store.execute_many(batch, streamed=True, waiting=waiting)
    except Exception as exc:
        log.error("a batch of %d commands failed: %s", len(batch), exc)
        failure = ResponseError(messages.INTERNAL.format(what=str(exc).splitlines()[0]))
        results = [failure] * len(batch) + list(waiting)
    return results, (time.perf_counter() - started) / len(batch)


class Committer:
    """A thread running the batches handed to :meth:`submit`, in the order given."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="rstore-batch", daemon=True)
        self._thread.start()

    def submit(
        self,
        store: Store,
        batch: list[list[bytes]],
        waiting: list[BlockedCall],
        done: Callable[[list[Any], float], object],
    ) -> None:
        """Run ``batch`` on ``store`` in the committer thread (:func:`execute`); then
        ``done(results, seconds_each)`` there."""
        self._jobs.put((store, batch, waiting, done))

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            store, batch, waiting, done = job
            done(*execute(store, batch, waiting))

    def stop(self) -> None:
        """Let the batches given so far finish, then end the thread."""
        self._jobs.put(None)
        self._thread.join()
