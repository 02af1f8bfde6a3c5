"""The one exception tree of rstore.

Every error rstore raises on purpose derives from :class:`RStoreError`:

* :class:`ResponseError` -- a command was refused.  ``str(err)`` is exactly the error line
  Valkey 8.0 would send for the same command, without the leading ``-`` (for example
  ``"ERR no such key"``).  ``err.prefix`` is its first word (``ERR``, ``WRONGTYPE``, ...).
* :class:`DataError` -- a redis-py-style method was called with arguments it cannot turn into a
  command (the same checks redis-py makes on the client side).
* :class:`StorageError` -- the store directory cannot be used (:class:`NotAStoreError`,
  :class:`UnsupportedFormatError`, :class:`StoreClosedError`) or LMDB failed.
* :class:`CorruptDataError` -- bytes that should hold a listpack, a stream node or a record do not;
  :class:`CorruptStoreError` when they were read from a store (naming the file, the sub-database,
  the key and the page where known).

Errors that are not Redis replies carry a ``hint``: what the user can do about it.

Absence is never an error: an empty range is ``[]``, a timed-out read is ``None``.
"""

from __future__ import annotations

__all__ = [
    "CorruptDataError",
    "CorruptRDBError",
    "CorruptStoreError",
    "DataError",
    "DiskFullError",
    "NotAStoreError",
    "RStoreError",
    "ReadOnlyStoreError",
    "ResponseError",
    "StorageError",
    "StoreClosedError",
    "StoreNotFoundError",
    "UnsupportedFormatError",
    "UnsupportedRDBError",
]


class RStoreError(Exception):
    """Root of every error rstore raises on purpose."""


class ResponseError(RStoreError):
    """A command refused, with Redis's exact error line as its message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def prefix(self) -> str:
        """The error code: the first word of the message (``ERR``, ``WRONGTYPE``, ...)."""
        return self.message.split(" ", 1)[0]

    def __str__(self) -> str:
        return self.message


class DataError(RStoreError):
    """Arguments a redis-py-style method cannot send (redis-py raises ``DataError`` here too)."""


class StorageError(RStoreError):
    """The store cannot be opened or used.  ``hint`` says what to do about it, when something
    can be done (it is also the end of the message)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(f"{message}; {hint}" if hint else message)
        self.hint = hint


class ReadOnlyStoreError(StorageError):
    """A write on a store opened read-only (``Store(readonly=True)``, a store the user may not
    write, or a store in an older format that must be upgraded before it is written)."""


class DiskFullError(StorageError):
    """A write failed because the file system holding the store has no space left.  Nothing of
    that write was stored; the store stays consistent and writable once space is freed."""


class NotAStoreError(StorageError):
    """The directory exists and holds files, but not an rstore store."""


class StoreNotFoundError(NotAStoreError):
    """No store exists at the path and creating one was not asked for."""


class UnsupportedFormatError(StorageError):
    """The store was written by a newer rstore whose on-disk format this version cannot read."""


class StoreClosedError(StorageError):
    """The store was used after :meth:`rstore.Store.close`."""


class CorruptDataError(RStoreError):
    """Bytes that should hold a listpack, a stream node or a record are malformed.

    ``offset`` is the byte offset inside the buffer where the problem was found (or ``None``).
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        if offset is not None:
            message = f"{message} (at byte {offset})"
        super().__init__(message)
        self.offset = offset


class CorruptStoreError(CorruptDataError):
    """A store's files are damaged: a record or node whose checksum does not match, a file
    shorter than the pages in use, a page of LMDB's tree that is not what it should be.

    ``path`` is the damaged file, ``db`` the sub-database (``nodes``, ``pel``, ... or LMDB's own
    ``free``/``main`` trees), ``key`` the affected key (a stream name when known), ``page`` the
    page number.  Nothing is read from a damaged place: the store refuses it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        db: str | None = None,
        key: bytes | None = None,
        page: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(path)
        if db is not None:
            where.append(f"sub-database {db}")
        if page is not None:
            where.append(f"page {page}")
        if key is not None:
            where.append(f"key {key.decode('utf-8', 'backslashreplace')!r}")
        text = f"{', '.join(where)}: {message}" if where else message
        super().__init__(f"{text}; {hint}" if hint else text)
        self.path = path
        self.db = db
        self.key = key
        self.page = page
        self.hint = hint


class CorruptRDBError(CorruptDataError):
    """An RDB file or DUMP payload is damaged: truncated, a wrong checksum, a bad length, a
    malformed value.  ``offset`` is the byte offset in the file; ``key`` the key being read,
    when known."""

    def __init__(self, message: str, offset: int | None = None, key: bytes | None = None):
        if key is not None:
            message = f"{message} (key {key!r})"
        super().__init__(message, offset)
        self.key = key


class UnsupportedRDBError(RStoreError):
    """An RDB file or payload this rstore cannot read: a newer RDB version, another format
    (Valkey 9's VALKEY files), a newer stream type, a module type.  Never misread."""

    def __init__(self, message: str, offset: int | None = None, key: bytes | None = None):
        where = f" (at byte {offset})" if offset is not None else ""
        if key is not None:
            where += f" (key {key!r})"
        super().__init__(message + where)
        self.offset = offset
        self.key = key
