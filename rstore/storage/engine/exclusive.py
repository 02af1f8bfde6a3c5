"""Holding a store directory for this process alone (what a compaction needs), and naming the
processes that hold it otherwise.

Two locks say that a process has a store open, or is opening it:

* **LMDB's.**  Every process with the environment open holds a POSIX read lock (``F_RDLCK``)
  on byte 0 of ``lock.mdb`` (LMDB's ``mdb_env_excl_lock`` and ``mdb_env_share_locks``).  An
  opener first asks for a write lock there (it is then the first opener and initialises the
  lock file's reader table), else waits (``F_SETLKW``) for the read lock.  So a write lock on
  that byte (:func:`lock_lmdb`) is granted only when no other process has LMDB open, and while
  it is held every new opener waits: a writable one before it opens ``data.mdb``, a read-only
  one after (``rstore.storage.opening`` makes that one look again once it gets in).
* **rstore's open lock** of a store with the write-ahead log: a writable opener holds an
  exclusive ``flock`` of ``wal.log`` from before LMDB opens until the store is created or
  recovered (``wal_recovery.open_lock``).

:func:`try_hold` takes both without waiting (the open lock first, in the order openers take
them): a process waiting for a lock never holds one another process waits for.  POSIX locks
belong to the process, and closing *any* descriptor of ``lock.mdb`` in the process drops them
all, so this process must not have the store open itself (``registry.reserve``).
"""

from __future__ import annotations

import errno
import fcntl
import os
from typing import NamedTuple

from rstore.storage.engine.wal import LOG_FILE
from rstore.storage.opening import LOCK_FILE, allocate_lock_file

__all__ = ["Held", "holders", "lock_lmdb", "release", "try_hold", "who_holds"]

_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)


class Held(NamedTuple):
    """A store directory held by this process: LMDB's lock byte, and the log's open lock."""

    path: str
    lock_fd: int
    log_fd: int


def lock_lmdb(store_path: str) -> int | None:
    """A descriptor of ``lock.mdb`` holding the write lock on its byte 0, or ``None`` when
    another process holds a lock there (has LMDB open).  A missing lock file is created as
    rstore's openers create it."""
    allocate_lock_file(store_path)
    fd = os.open(os.path.join(store_path, LOCK_FILE), os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
    except OSError as exc:
        os.close(fd)
        if exc.errno in _BUSY:
            return None
        raise
    return fd


def try_hold(store_path: str) -> Held | None:
    """Both locks of the store (see the module), or ``None`` when another process holds
    either; nothing is held then."""
    log_fd = os.open(os.path.join(store_path, LOG_FILE), os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(log_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(log_fd)
        if exc.errno in _BUSY:
            return None
        raise
    try:
        lock_fd = lock_lmdb(store_path)
    except BaseException:
        os.close(log_fd)
        raise
    if lock_fd is None:
        os.close(log_fd)
        return None
    return Held(store_path, lock_fd, log_fd)


def release(held: Held) -> None:
    """Give both locks back (LMDB's first, then the open lock that openers wait for first)."""
    os.close(held.lock_fd)
    os.close(held.log_fd)


def holders(store_path: str) -> tuple[int, ...]:
    """The other processes holding a lock of ``lock.mdb`` or ``wal.log`` in ``store_path``,
    read from ``/proc/locks`` (Linux); empty when it cannot be read."""
    files = set()
    for name in (LOCK_FILE, LOG_FILE):
        try:
            st = os.stat(os.path.join(store_path, name))
        except OSError:
            continue
        files.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ()
    pids = set()
    for line in lines:
        fields = line.split()  # "1: POSIX  ADVISORY  READ 1234 fe:00:5678 0 0"; "->" waits
        if len(fields) < 6 or fields[1] == "->" or not fields[4].isdigit():
            continue
        device, _, inode = fields[5].rpartition(":")
        major, _, minor = device.partition(":")
        try:
            found = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if found in files and int(fields[4]) != os.getpid():
            pids.add(int(fields[4]))
    return tuple(sorted(pids))


def who_holds(pids: tuple[int, ...]) -> str:
    """The processes of :func:`holders` in words, as every refusal names them: "another
    process", "another process (pid 12)", "3 other processes (pids 12, 13, 14)"."""
    listed = ", ".join(map(str, pids))
    if len(pids) > 1:
        return f"{len(pids)} other processes (pids {listed})"
    return f"another process (pid {listed})" if pids else "another process"
