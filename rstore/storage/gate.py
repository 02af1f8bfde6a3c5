"""The gate every use of an environment passes: many at once, or one exclusive change.

LMDB forbids changing the map size while a transaction of the process is open, and closing an
environment while another thread is inside it is a use-after-free (a segfault, seen when
``Store.close()`` raced other threads).  So every transaction, and every use of the waiter table,
enters the gate and leaves it; a map resize waits until no one is inside and keeps new arrivals
out; closing waits the same way and then turns every later arrival away with
:class:`~rstore.errors.StoreClosedError`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rstore.errors import StoreClosedError

__all__ = ["Gate"]


class Gate:
    """Lets any number of users in, or one exclusive change with none inside."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._active = 0
        self._exclusive = False
        self._closed = False

    # enter/leave run around every transaction: plain lock calls, no context managers.
    def enter(self) -> None:
        """Come in; raises :class:`StoreClosedError` once the environment is closed."""
        self._lock.acquire()
        try:
            while self._exclusive:
                self._cond.wait()
            if self._closed:
                raise StoreClosedError(f"the store at {self._path} is closed")
            self._active += 1
        finally:
            self._lock.release()

    def leave(self) -> None:
        self._lock.acquire()
        try:
            self._active -= 1
            if self._active == 0 and (self._exclusive or self._closed):
                self._cond.notify_all()  # a resize or a close waits for the last one out
        finally:
            self._lock.release()

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Wait until no one is inside, keep everyone out while the block runs."""
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            if self._closed:
                raise StoreClosedError(f"the store at {self._path} is closed")
            self._exclusive = True
            while self._active:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    def close(self) -> bool:
        """Wait until no one is inside, then close for good.  ``False`` if already closed."""
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            if self._closed:
                return False
            self._closed = True  # new arrivals are turned away from now on
            while self._active:
                self._cond.wait()
            return True
