"""The one exception tree of rstore, which is also redis-py's when redis-py is installed.

Every error rstore raises on purpose derives from :class:`RStoreError`:

* :class:`ResponseError` -- a command was refused.  ``err.line`` is exactly the error line
  Valkey 8.0 sends for the same command, without the leading ``-`` (``"ERR no such key"``);
  ``err.prefix`` is its first word (``ERR``, ``WRONGTYPE``, ``NOGROUP``, ...).  ``str(err)`` is
  the message redis-py shows for that line: redis-py drops the ``ERR `` prefix (and the other
  codes its parser knows, see :data:`REDIS_PY_STRIPPED`) but keeps ``WRONGTYPE``, ``NOGROUP``,
  ``BUSYGROUP`` and the like, so ``str(err)`` is ``"no such key"`` here.
* :class:`DataError` -- a redis-py-style method was called with arguments it cannot turn into a
  command (the same checks and texts as redis-py's client-side ``DataError``).
* :class:`StorageError` -- the store directory cannot be used (:class:`NotAStoreError`,
  :class:`UnsupportedFormatError`, :class:`StoreClosedError`) or LMDB failed.
* :class:`CorruptDataError` -- bytes that should hold a listpack, a stream node or a record do not;
  :class:`CorruptStoreError` when they were read from a store (naming the file, the sub-database,
  the key and the page where known).

Errors that are not Redis replies carry a ``hint``: what the user can do about it.

Absence is never an error: an empty range is ``[]``, a timed-out read is ``None``.

**redis-py.**  When redis-py is installed, the instance rstore raises is also an instance of
redis-py's matching class, so ``except redis.exceptions.ResponseError`` catches it as well as
``except rstore.ResponseError``:

=======================  ==================================================================
rstore                   also an instance of (``redis.exceptions``)
=======================  ==================================================================
``ResponseError``        ``ResponseError`` (``ReadOnlyError`` for a ``READONLY`` line, as
                         redis-py's parser chooses)
``DataError``            ``DataError``
``StorageError`` and     ``ConnectionError``: the store cannot be reached, the way a server
its subclasses           cannot -- the directory is missing or not a store, the store was
                         closed, LMDB failed.  Code written for redis-py already treats
                         ``ConnectionError`` as "the backend is unavailable".
=======================  ==================================================================

Nothing maps to redis-py's ``TimeoutError``: rstore has no socket timeouts, and a ``BLOCK``
that times out returns ``None`` / ``[]`` as it does on a server.  ``CorruptDataError`` and the
RDB errors have no redis-py counterpart and stay rstore's only.

The classes themselves stay rstore's own (``import rstore`` never imports redis-py); the
instance raised is of a subclass that also derives from redis-py's class, made once per class
when the first such error is created (that first error imports redis-py, if it is installed).
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any, ClassVar, TypeVar

__all__ = [
    "REDIS_PY_STRIPPED",
    "CorruptDataError",
    "CorruptRDBError",
    "CorruptStoreError",
    "DataError",
    "DiskFullError",
    "InconsistentSnapshotError",
    "KeyExistsError",
    "NotAStoreError",
    "RStoreError",
    "ReadOnlyStoreError",
    "ResponseError",
    "StorageError",
    "StoreClosedError",
    "StoreInUseError",
    "StoreNotFoundError",
    "UnsupportedFormatError",
    "UnsupportedRDBError",
    "in_file",
    "redis_py_message",
]

#: The error codes redis-py's reply parser removes, with the space after them, from the front of
#: an error line.  Any other code (``WRONGTYPE``, ``NOGROUP``, ``BUSYGROUP``, ``BUSYKEY``, ...)
#: stays in the message.
REDIS_PY_STRIPPED = frozenset(
    {
        "ERR", "OOM", "WRONGPASS", "EXECABORT", "LOADING", "NOSCRIPT", "READONLY", "NOAUTH",
        "NOPERM", "ASK", "TRYAGAIN", "MOVED", "CLUSTERDOWN", "CROSSSLOT", "MASTERDOWN",
    }
)  # fmt: skip

# The codes for which redis-py's parser raises a subclass of its ResponseError.  (The codes it
# turns into connection or cluster errors are for authentication, loading and redirections,
# which rstore never answers.)
_REDIS_PY_RESPONSE_CLASSES = {
    "OOM": "OutOfMemoryError",
    "EXECABORT": "ExecAbortError",
    "NOSCRIPT": "NoScriptError",
    "READONLY": "ReadOnlyError",
    "NOPERM": "NoPermissionError",
}

_loaded: dict[str, Any] = {}  # "redis.exceptions": the module, or None without redis-py
_hybrids: dict[tuple[type, str], type] = {}
_lock = threading.Lock()
_E = TypeVar("_E", bound="RStoreError")


def _redis_py_exceptions() -> Any:
    """``redis.exceptions``, imported on first use; ``None`` when redis-py cannot be imported."""
    name = "redis.exceptions"
    if name not in _loaded:
        with _lock:
            if name not in _loaded:
                try:
                    _loaded[name] = importlib.import_module(name)
                except Exception:  # not installed, or broken: rstore's own classes only
                    _loaded[name] = None
    return _loaded[name]


def _hybrid(cls: type, redis_name: str) -> type:
    """A subclass of ``cls`` and of ``redis.exceptions.<redis_name>`` (made once), or ``cls``
    itself when redis-py is not there."""
    found = _hybrids.get((cls, redis_name))
    if found is not None:
        return found
    module = _redis_py_exceptions()
    redis_cls = None if module is None else getattr(module, redis_name, None)
    if redis_cls is None:
        return cls
    with _lock:
        found = _hybrids.get((cls, redis_name))
        if found is None:
            namespace = {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__doc__": cls.__doc__,
                "_rstore_class": cls,
            }
            found = type(cls.__name__, (cls, redis_cls), namespace)
            _hybrids[(cls, redis_name)] = found
    return found


def show_key(key: bytes) -> str:
    """A key name as messages show it: quoted text, bytes that are not UTF-8 as ``\\xHH``."""
    return repr(key.decode("utf-8", "backslashreplace"))


def redis_py_message(line: str) -> str:
    """The message redis-py gives for the error line ``line`` (see :data:`REDIS_PY_STRIPPED`)."""
    code = line.split(" ", 1)[0]
    return line[len(code) + 1 :] if code in REDIS_PY_STRIPPED else line


class RStoreError(Exception):
    """Root of every error rstore raises on purpose."""

    #: The ``redis.exceptions`` class an instance also is when redis-py is installed.
    _redis_py_class: ClassVar[str | None] = None

    def __new__(cls: type[_E], *args: Any, **kwargs: Any) -> _E:
        made = cls
        name = cls._redis_py_name(args)
        if name is not None and "_rstore_class" not in cls.__dict__:
            made = _hybrid(cls, name)
        return super().__new__(made, *args)

    @classmethod
    def _redis_py_name(cls, args: tuple[Any, ...]) -> str | None:
        return cls._redis_py_class

    def __reduce__(self) -> Any:
        # Pickle as rstore's own class: the receiving process makes its own hybrid.
        plain = type(self).__dict__.get("_rstore_class", type(self))
        return plain, self._init_args(), self.__dict__ or None

    def _init_args(self) -> tuple[Any, ...]:
        return self.args

    # ``ResponseError('no such key')``, not redis-py's ``server:ResponseError``.
    __repr__ = BaseException.__repr__


class ResponseError(RStoreError):
    """A command refused.

    ``line`` is Valkey's exact error line (what ``rstore exec`` prints and what the oracle tests
    compare); ``str(err)`` is redis-py's message for it (``ERR `` and the like removed);
    ``prefix`` is the error code; ``status_code`` is the code redis-py reports (``None`` when
    redis-py keeps the code in the message).
    """

    _redis_py_class = "ResponseError"

    def __init__(self, line: str) -> None:
        super().__init__(redis_py_message(line))
        self.line = line
        code = self.prefix
        self.status_code: str | None = code if code in REDIS_PY_STRIPPED else None

    @classmethod
    def _redis_py_name(cls, args: tuple[Any, ...]) -> str | None:
        line = args[0] if args and isinstance(args[0], str) else ""
        return _REDIS_PY_RESPONSE_CLASSES.get(line.split(" ", 1)[0], "ResponseError")

    def _init_args(self) -> tuple[Any, ...]:
        return (self.line,)

    @property
    def prefix(self) -> str:
        """The error code: the first word of the line (``ERR``, ``WRONGTYPE``, ...)."""
        return self.line.split(" ", 1)[0]


class DataError(RStoreError):
    """Arguments a redis-py-style method cannot send (redis-py raises ``DataError`` here too)."""

    _redis_py_class = "DataError"


class StorageError(RStoreError):
    """The store cannot be opened or used (redis-py's ``ConnectionError`` too, see above).
    ``hint`` says what to do about it, when something can be done (it is also the end of the
    message)."""

    _redis_py_class = "ConnectionError"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(f"{message}; {hint}" if hint else message)
        self.hint = hint


class ReadOnlyStoreError(StorageError):
    """A write on a store opened read-only (``Store(readonly=True)``, or a store the user may
    not write, which the CLI's reading commands open read-only)."""


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


class StoreInUseError(StorageError):
    """An operation that needs the store to itself (:func:`rstore.compact_store`) found it open
    in other processes.  ``pids`` names them when the system says (``/proc/locks``); nothing
    was changed."""

    def __init__(self, message: str, hint: str | None = None, pids: tuple[int, ...] = ()):
        super().__init__(message, hint)
        self.pids = pids


class KeyExistsError(RStoreError):
    """Restoring would overwrite a key that exists (``Store.restore_file`` without ``replace``);
    nothing was restored.  ``key`` is the key's name."""

    def __init__(self, key: bytes, hint: str | None = "restore with replace=True to overwrite it"):
        message = f"key {show_key(key)} already exists in the store; nothing was restored"
        super().__init__(f"{message}; {hint}" if hint else message)
        self.key = key
        self.hint = hint

    def _init_args(self) -> tuple[Any, ...]:
        return (self.key, self.hint)


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
            where.append(f"key {show_key(key)}")
        text = f"{', '.join(where)}: {message}" if where else message
        super().__init__(f"{text}; {hint}" if hint else text)
        self.path = path
        self.db = db
        self.key = key
        self.page = page
        self.hint = hint


class InconsistentSnapshotError(CorruptDataError):
    """A stream being saved (RDB file or DUMP payload) holds other counts than its records
    declare -- the store's counters disagree with its data; nothing was written under the
    target name.  ``hint``: run ``rstore check``."""

    def __init__(self, message: str, hint: str | None = "`rstore check` shows what disagrees"):
        super().__init__(f"{message}; {hint}" if hint else message)
        self.hint = hint


class CorruptRDBError(CorruptDataError):
    """An RDB file or DUMP payload is damaged: truncated, a wrong checksum, a bad length, a
    malformed value.  ``offset`` is the byte offset in the file; ``key`` the key being read,
    when known; ``path`` the file, when one was read (the message then starts with it)."""

    path: str | None = None

    def __init__(self, message: str, offset: int | None = None, key: bytes | None = None):
        if key is not None:
            message = f"{message} (key {show_key(key)})"
        super().__init__(message, offset)
        self.key = key


class UnsupportedRDBError(RStoreError):
    """An RDB file or payload this rstore cannot read: a newer RDB version, another format
    (Valkey 9's VALKEY files), a newer stream type, a module type.  Never misread.  ``path``
    is the file, when one was read (the message then starts with it)."""

    path: str | None = None

    def __init__(self, message: str, offset: int | None = None, key: bytes | None = None):
        where = f" (at byte {offset})" if offset is not None else ""
        if key is not None:
            where += f" (key {show_key(key)})"
        super().__init__(message + where)
        self.offset = offset
        self.key = key


def in_file(exc: CorruptRDBError | UnsupportedRDBError, path: str | os.PathLike[str]) -> None:
    """Name the file ``exc`` was found in: its ``path``, and the message's start
    (``dump.rdb: not an RDB file (no REDIS header) (at byte 0)``); a named error is left as
    it is."""
    if exc.path is None:
        exc.path = os.fsdecode(path)
        exc.args = (f"{exc.path}: {exc.args[0]}", *exc.args[1:])
