"""Waking blocked readers after a commit, and registering them: the wake-up half of an Env.

:class:`Wakeups` is a part of :class:`~rstore.storage.env.Env` (which inherits it), kept in its
own module: the waiter table (:mod:`rstore.storage.notify`) opened on first use, the notify
call a writer makes after its commit (best effort: never raises), and the waiter a blocked read
waits on -- a polling one when the table cannot be used.
"""

from __future__ import annotations

import logging
import threading
import weakref

from rstore.errors import StorageError
from rstore.storage.gate import Gate
from rstore.storage.notify import ALL, FLAG_EARLY, KIND_GROUP, Notifier, slot_hash
from rstore.storage.waiters import PollingWaiter, Waiter

__all__ = ["Wakeups"]

log = logging.getLogger("rstore.storage")


class Wakeups:
    """The wake-up state and calls of an environment (see the module's docstring)."""

    path: str
    _gate: Gate
    _forked: bool
    _notifier: Notifier | None
    _notifier_broken: str | None
    _notifier_lock: threading.Lock
    _polling_logged: bool
    _waiters: weakref.WeakSet[Waiter | PollingWaiter]

    def _reopen_after_fork(self) -> None:
        raise NotImplementedError

    @property
    def flushes_after_commit(self) -> bool:
        raise NotImplementedError

    def _get_notifier(self) -> Notifier | None:
        """The waiter table (opened on first use), or ``None`` when it cannot be used."""
        if self._forked:
            self._reopen_after_fork()
        notifier = self._notifier
        if notifier is None and self._notifier_broken is None:
            with self._notifier_lock:
                if self._notifier is None and self._notifier_broken is None:
                    try:
                        self._notifier = Notifier(self.path)
                    except (OSError, StorageError) as exc:
                        self._notifier_failed(exc)
                notifier = self._notifier
        return notifier

    def _notifier_failed(self, exc: BaseException) -> None:
        if self._notifier_broken is None:
            self._notifier_broken = str(exc)
            log.warning(
                "%s: the waiter table cannot be used (%s); blocked reads in this process poll "
                "every %.0f ms instead of being woken", self.path, exc,
                PollingWaiter.INTERVAL_S * 1000,
            )  # fmt: skip

    def notify(self, keys: set[bytes] | None, phase: int = ALL) -> int:
        """Wake readers blocked on ``keys`` (``None``: on every key) after a commit; ``phase``
        (:mod:`rstore.storage.notify`) chooses the readers woken before the commit's
        log flush (``EARLY``) or after it (``LATE``), or all (``ALL``).

        Returns how many blocked calls of other processes were woken.  Never raises: the
        write has committed, so its caller must get its result whatever happens here; a
        failure is logged once and readers fall back to polling."""
        if keys is not None and not keys:
            return 0
        try:
            self._gate.enter()
        except StorageError:
            return 0  # closed meanwhile: nobody of this process waits any more
        try:
            notifier = self._get_notifier()
            if notifier is not None and notifier.anyone_waiting():
                hashes = None if keys is None else {slot_hash(k) for k in keys}
                return notifier.notify(hashes, phase)
        except Exception as exc:
            self._notifier_failed(exc)
        finally:
            self._gate.leave()
        return 0

    def waiter(self, kind: int, keys: list[bytes], group: int = 0) -> Waiter | PollingWaiter:
        """Something to block on until ``keys`` may have changed: a registered waiter, or a
        polling one when the waiter table cannot be used."""
        self._gate.enter()
        try:
            notifier = self._get_notifier()
            waiter: Waiter | PollingWaiter | None = None
            if notifier is not None and notifier.can_register:
                # An XREADGROUP of a durable handle replies only after its own durable commit,
                # whose flush covers the writer's commit it read: it may be woken early.
                early = kind == KIND_GROUP and self.flushes_after_commit
                try:
                    waiter = Waiter(
                        notifier, kind, keys, group, guard=self._gate,
                        flags=FLAG_EARLY if early else 0,
                    )  # fmt: skip
                except (OSError, StorageError) as exc:  # e.g. the table is full: this call polls
                    if not self._polling_logged:
                        self._polling_logged = True
                        log.warning("%s: a blocked read polls instead of waiting to be woken "
                                    "(%s)", self.path, exc)  # fmt: skip
            elif notifier is not None and not self._polling_logged:
                self._polling_logged = True
                log.warning("%s: the waiter table is not writable by this user; blocked reads "
                            "in this process poll", self.path)  # fmt: skip
            if waiter is None:
                waiter = PollingWaiter()
            self._waiters.add(waiter)
            return waiter
        finally:
            self._gate.leave()
