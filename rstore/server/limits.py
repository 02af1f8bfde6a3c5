"""The open-files limit of ``rstore serve``: maxclients fitted to it, and accept errors.

Valkey raises its soft ``RLIMIT_NOFILE`` at start-up to ``maxclients`` plus 32 descriptors of
its own and, when the system does not allow that, lowers ``maxclients`` to what the limit
holds, with three warnings (docs/server.md#limits).  rstore does the same with its own count:

* **32** for the process itself, as Valkey reserves: standard streams, the log file, the event
  loop's selector and wake-up pair, the listening sockets, the file a SAVE writes, the
  connection that is accepted only to be refused with ``max number of clients reached``, and
  room for what Python opens for a moment (a module loaded late, ``/proc/self/statm``);
* **8** per store (database) the server has: LMDB opens ``data.mdb`` three times and
  ``lock.mdb`` once, the write-ahead log ``wal.log`` and its flush word ``wal.shm``, the waiter
  table ``notify.shm`` and the socket that wakes blocked readers (8 measured); every database
  the store has
  (:meth:`rstore.Store.databases`) when the server starts is counted;
* **2** per client: its connection, and the socket of the waiter that watches its parked
  blocking read (XREAD / XREADGROUP with BLOCK), so that clients all blocked at once never
  leave the listening socket without a descriptor.

When ``accept`` fails all the same (``EMFILE``: databases first used after start-up, another
user of the process's descriptors; ``ENFILE``: the whole system), asyncio stops accepting
for a second and logs a traceback per failed attempt; :class:`AcceptErrors` makes that one
line per :data:`ACCEPT_LOG_INTERVAL_S`.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import time
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "ACCEPT_LOG_INTERVAL_S",
    "AcceptErrors",
    "FileLimit",
    "clients_allowed",
    "files_needed",
    "fit_open_files",
    "too_low",
]

RESERVED_FDS = 32
STORE_FDS = 8
CLIENT_FDS = 2
#: accept errors are logged at most once per this many seconds
ACCEPT_LOG_INTERVAL_S = 10.0
_ACCEPT_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def files_needed(maxclients: int, stores: int) -> int:
    """The descriptors ``maxclients`` clients need, with the server's own."""
    return RESERVED_FDS + STORE_FDS * stores + CLIENT_FDS * maxclients


def clients_allowed(limit: int, stores: int) -> int:
    """The most clients an open-files limit of ``limit`` holds (may be below 1)."""
    return (limit - RESERVED_FDS - STORE_FDS * stores) // CLIENT_FDS


class FileLimit(NamedTuple):
    """What :func:`fit_open_files` did: the maxclients to use, and the lines to log."""

    maxclients: int
    limit: int  # the soft limit now
    warnings: list[str]  # Valkey's three lines when maxclients was lowered
    notice: str | None  # the limit was raised


def _os_error(exc: Exception) -> str:
    """The OS's words for a failed ``setrlimit`` (Python turns EPERM and EINVAL into
    ``ValueError``s with texts of its own)."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return os.strerror(exc.errno)
    if "not allowed" in str(exc):
        return os.strerror(errno.EPERM)
    return os.strerror(errno.EINVAL)


def _set_soft(needed: int, soft: int, hard: int) -> tuple[int, str]:
    """Raise the soft limit to ``needed``, the hard one with it when that is allowed (a
    privileged process); else as far as the hard limit.  The soft limit now, and the OS's
    error when ``needed`` could not be had."""
    unlimited = hard == resource.RLIM_INFINITY
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard if unlimited or hard >= needed
                                                     else needed))  # fmt: skip
        return needed, ""
    except (OSError, ValueError) as exc:
        error = _os_error(exc)
    if not unlimited and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return hard, error
        except (OSError, ValueError):
            pass
    return soft, error


def fit_open_files(maxclients: int, stores: int) -> FileLimit:
    """Raise the open-files limit to what ``maxclients`` clients need, or lower maxclients to
    what the limit allows (below 1: the caller refuses to start)."""
    needed = files_needed(maxclients, stores)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError) as exc:
        allowed = min(maxclients, clients_allowed(1024, stores))
        line = (f"Unable to obtain the current NOFILE limit ({_os_error(exc)}), assuming 1024 "
                "and setting the max clients configuration accordingly.")  # fmt: skip
        return FileLimit(allowed, 1024, [line], None)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return FileLimit(maxclients, soft, [], None)
    limit, error = _set_soft(needed, soft, hard)
    if limit >= needed:
        notice = (f"Increased maximum number of open files to {needed} (it was originally "
                  f"set to {soft}).")  # fmt: skip
        return FileLimit(maxclients, limit, [], notice)
    allowed = clients_allowed(limit, stores)
    warnings = [
        f"You requested maxclients of {maxclients} requiring at least {needed} max file "
        "descriptors.",
        f"Server can't set maximum open files to {needed} because of OS error: {error}.",
        f"Current maximum open files is {limit}. maxclients has been reduced to {allowed} to "
        "compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.",
    ]
    return FileLimit(allowed, limit, warnings, None)


def too_low(limit: int, needed: int) -> str:
    """Valkey's last words when the limit leaves no room for a single client."""
    return (f"Your current 'ulimit -n' of {limit} is not enough for the server to start. "
            f"Please increase your open file limit to at least {needed}. Exiting.")  # fmt: skip


class AcceptErrors:
    """An event loop's exception handler that reports a listening socket's failed accepts
    (out of descriptors or memory) in one line per :data:`ACCEPT_LOG_INTERVAL_S`, with the
    count since the last line, instead of asyncio's traceback per attempt; anything else goes
    to the loop's default handler."""

    def __init__(self, log: logging.Logger, clock: Callable[[], float] = time.monotonic) -> None:
        self._log = log
        self._clock = clock
        self._last: float | None = None
        self._since = 0

    def __call__(self, loop: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if not ("socket" in context and isinstance(exc, OSError) and exc.errno in _ACCEPT_ERRNOS):
            loop.default_exception_handler(context)
            return
        self._since += 1
        now = self._clock()
        if self._last is not None and now - self._last < ACCEPT_LOG_INTERVAL_S:
            return
        self._last = now
        self._log.warning("cannot accept connections: %s (%d failed accepts since the last "
                          "report); new connections wait", os.strerror(exc.errno or 0),
                          self._since)  # fmt: skip
        self._since = 0
