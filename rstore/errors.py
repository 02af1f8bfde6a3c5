"""The one exception tree of rstore.

Every error rstore raises on purpose derives from :class:`RStoreError`:

* :class:`ResponseError` -- a command was refused.  ``str(err)`` is exactly the error line
  Valkey 8.0 would send for the same command, without the leading ``-`` (for example
  ``"ERR no such key"``).  ``err.prefix`` is its first word (``ERR``, ``WRONGTYPE``, ...).
* :class:`DataError` -- a redis-py-style method was called with arguments it cannot turn into a
  command (the same checks redis-py makes on the client side).
* :class:`StorageError` -- the store directory cannot be used (:class:`NotAStoreError`,
  :class:`UnsupportedFormatError`, :class:`StoreClosedError`) or LMDB failed.
* :class:`CorruptDataError` -- bytes that should hold a listpack, a stream node or a record do not.

Absence is never an error: an empty range is ``[]``, a timed-out read is ``None``.
"""

from __future__ import annotations

__all__ = [
    "CorruptDataError",
    "CorruptRDBError",
    "DataError",
    "NotAStoreError",
    "RStoreError",
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
    """The store cannot be opened or used."""


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
