"""The thread that moves a process's checkpoint pin forward, off the writers' path.

A store written through the log (:mod:`rstore.storage.engine.wal`) must make checkpoints while it
writes, or its file grows (a pin keeps pages from reuse).  Making one flushes ``data.mdb``,
which takes milliseconds: done by the writer after its write, it added that to one write in
every few dozen.  Instead each process that writes has one daemon thread, started on its
first write: a writer only pokes it (an Event), and the thread runs the step it was given --
:meth:`~rstore.storage.engine.wal_checkpoints.Checkpoints.step` inside the environment's gate -- and
looks again after the delay the step returns, until there is nothing left to do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rstore import logs

__all__ = ["Checkpointer"]

#: The longest the thread sleeps between two looks while a checkpoint is pending.
MAX_DELAY_S = 1.0


class Checkpointer:
    """One daemon thread running ``step`` after pokes (see the module's docstring)."""

    def __init__(self, step: Callable[[], float | None], name: str) -> None:
        self._step = step
        self._name = name
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def poke(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stopped:
                    thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    thread.start()
                    self._thread = thread
        self._wake.set()

    def _run(self) -> None:
        delay: float | None = None
        while True:
            self._wake.wait(None if delay is None else min(delay, MAX_DELAY_S))
            self._wake.clear()
            if self._stopped:
                return
            try:
                delay = self._step()
            except Exception as exc:  # a failed checkpoint is tried again; writes go on
                logs.warn(
                    logs.STORAGE, "%s: a checkpoint failed (%s); trying again", self._name, exc
                )
                delay = MAX_DELAY_S

    def close(self) -> None:
        """Stop the thread and wait for it (a step in progress finishes first)."""
        with self._lock:
            self._stopped = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)
