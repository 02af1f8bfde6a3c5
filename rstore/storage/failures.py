"""The one place where LMDB's and the operating system's failures become rstore errors.

Each carries a hint where the user can do something.  A write that fails because the file
system is full is reported as such even when LMDB only says ``Input/output error`` (it turns a
short write into EIO): the free space is looked at when a write fails.
"""

from __future__ import annotations

import errno
import os

import lmdb

from rstore.errors import (
    CorruptStoreError,
    DiskFullError,
    NotAStoreError,
    ReadOnlyStoreError,
    StorageError,
)

__all__ = ["disk_is_full", "translate", "translate_os"]

#: Below this many free bytes a failed write is blamed on a full disk.
LOW_SPACE_BYTES = 4 << 20

_DISK_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG}
_ACCESS_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}


def disk_is_full(path: str) -> int | None:
    """The free bytes of the file system holding ``path`` when they are nearly gone, else
    ``None`` (also when they cannot be known)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    return free if free < LOW_SPACE_BYTES else None


def _errno_of(exc: BaseException) -> int | None:
    code = getattr(exc, "errno", None)
    if isinstance(code, int):
        return code
    text = str(exc)
    for number in _DISK_ERRNOS | _ACCESS_ERRNOS:
        if os.strerror(number) in text:
            return number
    return None


def translate(
    exc: lmdb.Error, path: str, *, writing: bool = False
) -> StorageError | CorruptStoreError:
    """The rstore error for an LMDB exception raised while using the store at ``path``."""
    text = str(exc)
    if isinstance(exc, lmdb.ReadersFullError):
        return StorageError(
            f"{path}: too many concurrent readers ({text})", hint="close idle stores or threads"
        )
    code = _errno_of(exc)
    if isinstance(exc, lmdb.DiskError) or code in _DISK_ERRNOS:
        free = disk_is_full(path)
        if code in (errno.ENOSPC, errno.EDQUOT) or free is not None:
            shown = f"{free} bytes free" if free is not None else text
            return DiskFullError(
                f"{path}: the disk is full ({shown}); the write was not stored",
                hint="free some space: the store is unchanged and usable again at once",
            )
        return StorageError(f"{path}: input/output error ({text})")
    if code in _ACCESS_ERRNOS:
        return refused_for_writing(path, code)
    if isinstance(exc, lmdb.CorruptedError | lmdb.PageNotFoundError):
        return CorruptStoreError(
            f"LMDB found a damaged page ({text})", path=path,
            hint="`rstore check` lists every damaged place",
        )  # fmt: skip
    if isinstance(exc, lmdb.InvalidError | lmdb.VersionMismatchError | lmdb.IncompatibleError):
        return NotAStoreError(f"{path}: not a readable rstore store ({text})")
    return StorageError(f"{path}: {text}")


def refused_for_writing(path: str, code: int) -> ReadOnlyStoreError:
    """The error for a store this user cannot open for writing (``code``: the errno)."""
    why = "it is on a read-only file system" if code == errno.EROFS else "permission denied"
    return ReadOnlyStoreError(
        f"{path}: cannot open it for writing: {why}",
        hint="open it read-only (Store(readonly=True), rstore --read-only) to read it",
    )


def translate_os(exc: OSError, path: str, doing: str) -> StorageError:
    """The rstore error for an ``OSError`` raised while ``doing`` something to the store."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return ReadOnlyStoreError(
            f"cannot {doing} {path}: permission denied",
            hint="it belongs to another user; ask for read access, or open it read-only "
            "(Store(readonly=True), rstore --read-only) if you may read it",
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(f"cannot {doing} {path}: the disk is full", hint="free some space")
    return StorageError(f"cannot {doing} {path}: {reason}")
