"""Waking blocked readers after a commit, and registering them, for one environment.

An :class:`~rstore.storage.env.Env` holds one :class:`Wakeups` (a fresh one in a forked
child): the waiter table (:mod:`rstore.storage.waiting.notify`) opened on first use, the notify
call a
writer makes after its commit (best effort: never raises), and the waiter a blocked read waits
on -- a polling one when the table cannot be used.  The environment runs both inside its gate.
"""

from __future__ import annotations

import threading
import weakref

from rstore import logs
from rstore.errors import StorageError
from rstore.storage.gate import Gate
from rstore.storage.waiting.notify import ALL, FLAG_EARLY, KIND_GROUP, NOBODY, Notifier, slot_hash
from rstore.storage.waiting.waiters import PollingWaiter, Waiter

__all__ = ["Wakeups"]


class Wakeups:
    """The waiter table of one store directory in this process, and its waiters."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._notifier: Notifier | None = None
        self._broken: str | None = None  # why blocking reads poll, once known
        self._polling_logged = False  # a call had to poll: said once
        self._lock = threading.Lock()
        self._waiters: weakref.WeakSet[Waiter | PollingWaiter] = weakref.WeakSet()

    def _table(self) -> Notifier | None:
        """The waiter table (opened on first use), or ``None`` when it cannot be used."""
        notifier = self._notifier
        if notifier is None and self._broken is None:
            with self._lock:
                if self._notifier is None and self._broken is None:
                    try:
                        self._notifier = Notifier(self.path)
                    except (OSError, StorageError) as exc:
                        self._failed(exc)
                notifier = self._notifier
        return notifier

    def _failed(self, exc: BaseException) -> None:
        if self._broken is None:
            self._broken = str(exc)
            logs.warn(
                logs.STORAGE,
                "%s: the waiter table cannot be used (%s); blocked reads in this process poll "
                "every %.0f ms instead of being woken", self.path, exc,
                PollingWaiter.INTERVAL_S * 1000,
            )  # fmt: skip

    def notify(self, keys: set[bytes] | None, phase: int = ALL) -> int:
        """Wake readers blocked on ``keys`` (``None``: on every key) after a commit; ``phase``
        (:mod:`rstore.storage.waiting.notify`) chooses the readers woken before the commit's log
        flush (``EARLY``) or after it (``LATE``), or all (``ALL``).

        Returns how many blocked calls of other processes were woken, or :data:`NOBODY` when
        no reader of the store was waiting (or none can be woken: the table cannot be used,
        and readers poll).  Never raises: the write has committed, so its caller must get its
        result whatever happens here; a failure is logged once and readers fall back to
        polling."""
        try:
            notifier = self._notifier or self._table()
            if notifier is None or not notifier.anyone_waiting():
                return NOBODY
            hashes = None if keys is None else {slot_hash(k) for k in keys}
            return notifier.notify(hashes, phase)
        except Exception as exc:
            self._failed(exc)
        return 0

    def waiter(
        self, kind: int, keys: list[bytes], group: int, *, guard: Gate, early: bool
    ) -> Waiter | PollingWaiter:
        """Something to block on until ``keys`` may have changed: a registered waiter, or a
        polling one when the waiter table cannot be used.  ``early``: the store flushes after
        its commits, so an XREADGROUP (whose reply follows its own durable commit, whose flush
        covers the writer's commit it read) may be woken before the writer's flush."""
        notifier = self._table()
        waiter: Waiter | PollingWaiter | None = None
        if notifier is not None and notifier.can_register:
            flags = FLAG_EARLY if early and kind == KIND_GROUP else 0
            try:
                waiter = Waiter(notifier, kind, keys, group, guard=guard, flags=flags)
            except (OSError, StorageError) as exc:  # e.g. the table is full: this call polls
                self._said_polling(f"a blocked read polls instead of waiting to be woken ({exc})")
        elif notifier is not None:
            self._said_polling("the waiter table is not writable by this user; blocked reads "
                               "in this process poll")  # fmt: skip
        if waiter is None:
            waiter = PollingWaiter()
        self._waiters.add(waiter)
        return waiter

    def _said_polling(self, why: str) -> None:
        if not self._polling_logged:
            self._polling_logged = True
            logs.warn(logs.STORAGE, "%s: %s", self.path, why)

    def interrupt_all(self) -> None:
        """Wake every blocked call of this process (the store is closing)."""
        for waiter in list(self._waiters):
            waiter.interrupt()

    def close(self) -> None:
        if self._notifier is not None:
            self._notifier.close()
