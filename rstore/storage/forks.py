"""What a forked child does with the LMDB handle it inherited: keeps it, untouched, for good.

After ``fork()`` the child has its parent's LMDB environment object, but not its locks (POSIX
locks belong to a process) nor the threads that held its write transaction.  py-lmdb 3.0 does
not guard against using or closing it there (read in its ``cpython.c``):

* closing the inherited environment -- or letting it be freed -- aborts every transaction it
  holds, and aborting a read transaction writes its reader slot in ``lock.mdb``, which is
  shared memory: the *parent's* slot.  Its snapshots (the write-ahead log's pin, a read in
  progress) stop protecting their pages, which a commit may then reuse;
* it also waits for a write transaction or an LMDB call that a parent thread had in progress
  at the fork, which never ends in the child: the child hangs.

So the child never closes, aborts or frees what it inherited: :func:`abandon` keeps a
reference that is never released (not even when the interpreter exits), and the child opens
its own environment beside it.  py-lmdb refuses to open files it already has open in the
process (LMDB's locks are per process, so a second handle would share and, closing, drop the
first one's); the inherited handle holds no lock in the child and is never closed, so
:func:`beside_inherited` lifts that check for the child's own open.  Transactions freed in the
child are left alone by py-lmdb (it compares the process id).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["abandon", "beside_inherited"]

_guard_lock = threading.Lock()


def abandon(handle: Any) -> None:
    """Keep ``handle`` (an inherited LMDB environment) alive for the rest of the process."""
    if handle is not None:
        import ctypes  # noqa: PLC0415 -- only in a forked child: not loaded at every start-up

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(handle))


@contextmanager
def beside_inherited() -> Iterator[None]:
    """Let py-lmdb open an environment whose files an abandoned, inherited handle has open
    (only in a child, for its own handle on the store it inherited)."""
    try:
        from lmdb import _envid  # noqa: PLC0415  # py-lmdb 3: the files' identities it checks
    except ImportError:  # another py-lmdb: its own check stays (the reopen may be refused)
        yield
        return
    with _guard_lock:
        keys = _envid.env_keys
        _envid.env_keys = lambda path, subdir: ()
        try:
            yield
        finally:
            _envid.env_keys = keys
