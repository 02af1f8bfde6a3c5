"""A blocked call's side of the waiter table: its socket, its slots, its wait.

A :class:`Waiter` binds a Unix datagram socket named by the store, its pid and a token, takes
its slots in the table (:class:`~rstore.storage.waiting.notify.Notifier`), and waits in ``select``
on
the socket until a writer sends it a byte, a timeout, or :meth:`Waiter.interrupt` (a close of
the store).  A :class:`PollingWaiter` stands in when the table cannot be used: it only sleeps,
and the caller looks again.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import threading
from typing import Protocol

from rstore.errors import StorageError
from rstore.storage.waiting.notify import KIND_GROUP, Notifier, slot_hash

__all__ = ["PollingWaiter", "Waiter"]

_tokens = itertools.count(1)


class _Guard(Protocol):
    """What a waiter enters before touching the table (the Env's gate): ``enter`` raises once
    the store is closed."""

    def enter(self) -> None: ...

    def leave(self) -> None: ...


class Waiter:
    """One blocked call: a socket to be woken on, and its slots in the table."""

    def __init__(
        self,
        notifier: Notifier,
        kind: int,
        keys: list[bytes],
        group: int = 0,
        guard: _Guard | None = None,
        flags: int = 0,
    ) -> None:
        self._notifier = notifier
        self._guard = guard
        self._token = next(_tokens)
        self._registered = False
        import socket  # noqa: PLC0415 -- loaded by the first blocking call, not at start-up

        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._sock.bind(notifier.address(os.getpid(), self._token))
            self._sock.setblocking(False)
            self._kind = kind
            self._group = group
            self._hashes = {slot_hash(k) for k in keys}
            self.arrival, self._slots = notifier.register(
                kind, self._hashes, group, self._token, flags
            )
            self._registered = True
        except BaseException:
            self._sock.close()
            raise

    def wait(self, timeout_s: float) -> bool:
        """Sleep until woken or ``timeout_s`` passes; ``True`` when woken."""
        ready, _, _ = select.select([self._sock], [], [], max(timeout_s, 0.0))
        if not ready:
            return False
        with contextlib.suppress(BlockingIOError):
            while self._sock.recv(64):
                pass
        return True

    def fileno(self) -> int | None:
        """The socket a wake-up arrives on (for an event loop to watch)."""
        return self._sock.fileno()

    def drain(self) -> bool:
        """Take the wake-ups that arrived, without waiting; whether there was one."""
        woken = False
        with contextlib.suppress(BlockingIOError):
            while self._sock.recv(64):
                woken = True
        return woken

    def pass_baton(self) -> None:
        """After running, let the next reader of the same group run (FIFO serving).  Best
        effort: a failure only means the next reader runs at its next re-check."""
        if self._kind != KIND_GROUP or not self._registered or not self._enter():
            return
        try:
            self._notifier.wake_next(self._hashes, self._group, self.arrival)
        except (OSError, StorageError):
            pass
        finally:
            self._leave()

    def first_in_line(self, across_processes: bool = False) -> bool:
        """Whether no older reader of the same group waits on all of its streams: a group
        reader that was not woken (its periodic re-check) runs only then, so that readers are
        served in arrival order.  ``across_processes``: only the readers of other processes
        count (a server orders its own).  Best effort: ``True`` when the table cannot be
        read."""
        if self._kind != KIND_GROUP or not self._registered or not self._enter():
            return True
        other_than = os.getpid() if across_processes else 0
        try:
            return not self._notifier.older_waiting(
                self._hashes, self._group, self.arrival, other_than
            )
        except (OSError, StorageError):
            return True
        finally:
            self._leave()

    def others_waiting(self) -> bool:
        """Whether readers of other processes wait on this store (best effort: ``True`` when
        the table cannot be read)."""
        if not self._enter():
            return True
        try:
            return self._notifier.others_waiting()
        except (OSError, StorageError):
            return True
        finally:
            self._leave()

    def interrupt(self) -> None:
        """The store is closing (called by its owner, with no one else in the table): give the
        slots back and wake the blocked call, which then finds the store closed."""
        if self._registered:
            self._registered = False
            with contextlib.suppress(OSError, StorageError):
                self._notifier.unregister(self._slots, os.getpid(), self._token)
        with contextlib.suppress(OSError):
            self._notifier.wake_socket(self._sock.getsockname())

    def _enter(self) -> bool:
        if self._guard is None:
            return True
        try:
            self._guard.enter()
        except StorageError:  # closed: interrupt() already gave the slots back
            return False
        return True

    def _leave(self) -> None:
        if self._guard is not None:
            self._guard.leave()

    def close(self) -> None:
        if self._registered and self._enter():
            try:
                self._registered = False
                with contextlib.suppress(OSError, StorageError):
                    self._notifier.unregister(self._slots, os.getpid(), self._token)
            finally:
                self._leave()
        self._sock.close()
        self._notifier.release_address(os.getpid(), self._token)

    def __enter__(self) -> Waiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PollingWaiter:
    """Waiting without the table: sleep a short while and let the caller look again.  Used when
    the waiter table cannot be used (the caller logs why, once); wake-ups then take up to
    :attr:`INTERVAL_S` instead of a fraction of a millisecond."""

    INTERVAL_S = 0.05

    def __init__(self) -> None:
        self._woken = threading.Lock()  # released by interrupt() (Event.wait: not Ctrl-C safe)
        self._woken.acquire()

    def wait(self, timeout_s: float) -> bool:
        """Sleep ``min(timeout_s, INTERVAL_S)``; ``True`` when interrupted, so the caller looks
        at once (it re-checks after every wait anyway)."""
        if not self._woken.acquire(timeout=max(min(timeout_s, self.INTERVAL_S), 0.0)):
            return False
        with contextlib.suppress(RuntimeError):  # and stays released for the next wait
            self._woken.release()
        return True

    def fileno(self) -> int | None:
        """None: nothing to watch; the caller looks again every :attr:`INTERVAL_S`."""
        return None

    def drain(self) -> bool:
        return False

    def pass_baton(self) -> None:
        pass

    def first_in_line(self, across_processes: bool = False) -> bool:
        """Always: without the table, readers are not ordered."""
        return True

    def others_waiting(self) -> bool:
        """Not known without the table: ``False`` (readers are not ordered)."""
        return False

    def interrupt(self) -> None:
        with contextlib.suppress(RuntimeError):  # already released
            self._woken.release()

    def close(self) -> None:
        pass

    def __enter__(self) -> PollingWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
