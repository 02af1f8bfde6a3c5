"""The gate every use of an environment passes: many at once, or one exclusive change.

LMDB forbids changing the map size while a transaction of the process is open, and closing an
environment while another thread is inside it is a use-after-free (a segfault, seen when
``Store.close()`` raced other threads).  So every transaction, and every use of the waiter table,
enters the gate and leaves it; a map resize waits until no one is inside and keeps new arrivals
out; closing waits the same way and then turns every later arrival away with
:class:`~rstore.errors.StoreClosedError`.

**Interrupts.**  A signal handler (Ctrl-C's ``KeyboardInterrupt``) runs in the main thread
between two bytecodes, and CPython checks for one after every call of a C function -- also
right after ``lock.acquire()`` returned, before a ``try`` that would release it
(bpo-29988).  A lock or a count left behind that way hangs the next ``close()``.  So the gate
never needs code of its own to run for it to stay right:

* ``enter`` counts itself in with no such check between the count and its return (a ``with``
  on a plain lock takes it in one step; ``+=`` on a list is no call), and a caller that does
  ``gate.enter()`` and then ``try: ... finally: gate.leave()`` has none either (returning from
  a Python function is not a check).  An interrupt anywhere else in ``enter`` leaves it
  uncounted.
* ``leave`` *is* ``list.pop``: one C call that is over before any handler runs.
* an exclusive change holds a plain lock (``with gate.changing: gate.drain()``), released by
  C code however its block ends; the ones waiting for the last one out look again every
  millisecond or so instead of being woken (a wake-up is code ``leave`` would have to run).
"""

from __future__ import annotations

import threading
import time

from rstore.errors import StoreClosedError

__all__ = ["Gate"]

_ONE = (None,)  # what ``enter`` adds to the list of those inside
_POLL_S = (0.00005, 0.0002, 0.001, 0.002)  # the waits of one waiting for the last one out


class Gate:
    """Lets any number of users in, or one exclusive change with none inside."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()  # guards the flags and the entries into ``_inside``
        self._inside: list[None] = []  # one item per user inside
        #: Leave the gate (after :meth:`enter` returned): a C call, so never half done.
        self.leave = self._inside.pop
        #: Held by an exclusive change, from before :meth:`drain` to its end.
        self.changing = threading.Lock()
        self._shut = False  # closed, or a change started: ``enter`` takes the slow way
        self._closed = False
        self._torn = False  # a close returned True: the owner closed what is behind the gate

    def enter(self) -> None:
        """Come in; raises :class:`StoreClosedError` once the environment is closed.  Either
        it returns counted in, or it raises not counted (an interrupt included)."""
        entered = False
        try:
            while True:
                with self._lock:
                    if not self._shut:
                        self._inside += _ONE
                        entered = True
                        break
                    if self._closed:
                        raise StoreClosedError(f"the store at {self._path} is closed")
                    if not self.changing.locked():
                        self._shut = False  # the last change is over
                        continue
                with self.changing:  # wait for the change to end
                    pass
        except BaseException:
            if entered:  # interrupted as the lock was let go, after counting in
                self._inside.pop()
            raise

    @property
    def closed(self) -> bool:
        return self._closed

    def drain(self) -> None:
        """Inside ``with gate.changing:`` -- keep new arrivals out and wait until no one is
        inside (raises :class:`StoreClosedError` once closed)."""
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"the store at {self._path} is closed")
            self._shut = True
        self._wait_empty()

    def close(self) -> bool:
        """Turn every later arrival away, wait until no one is inside; ``True`` when the
        caller is to close what is behind the gate, ``False`` if a close already returned
        ``True``.  Interrupted while it waits, the gate stays closed and the next call waits
        again."""
        with self.changing, self._lock:
            if self._torn:
                return False
            self._closed = self._shut = True
        self._wait_empty()
        claimed = False
        try:
            with self._lock:
                claimed, self._torn = not self._torn, True
        except BaseException:
            if claimed:  # interrupted as the lock was let go: not claimed after all
                with self._lock:
                    self._torn = False
            raise
        return claimed

    def _wait_empty(self) -> None:
        polls = 0
        while self._inside:
            time.sleep(_POLL_S[min(polls, len(_POLL_S) - 1)])
            polls += 1
