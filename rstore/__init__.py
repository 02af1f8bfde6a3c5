"""rstore: a durable, embedded log store with Redis Streams semantics, on LMDB.

>>> import rstore
>>> store = rstore.Store("rstore-data")          # doctest: +SKIP
>>> store.xadd("events", {"user": "42"})         # doctest: +SKIP
b'1732191234567-0'
"""

from rstore.commands.reply import NIL_ARRAY
from rstore.errors import (
    CorruptDataError,
    CorruptRDBError,
    CorruptStoreError,
    DataError,
    DiskFullError,
    NotAStoreError,
    ReadOnlyStoreError,
    ResponseError,
    RStoreError,
    StorageError,
    StoreClosedError,
    StoreNotFoundError,
    UnsupportedFormatError,
    UnsupportedRDBError,
)
from rstore.ids import StreamID
from rstore.inspect import RDBSummary, StreamSummary, inspect_rdb, read_rdb_range
from rstore.pipeline import Pipeline
from rstore.store import DEFAULT_PATH, Store, check_store, upgrade_store
from rstore.version import __version__
from rstore.worker import Consumer, Message

__all__ = [
    "DEFAULT_PATH",
    "NIL_ARRAY",
    "Consumer",
    "CorruptDataError",
    "CorruptRDBError",
    "CorruptStoreError",
    "DataError",
    "DiskFullError",
    "Message",
    "NotAStoreError",
    "Pipeline",
    "RDBSummary",
    "RStoreError",
    "ReadOnlyStoreError",
    "ResponseError",
    "StorageError",
    "Store",
    "StoreClosedError",
    "StoreNotFoundError",
    "StreamID",
    "StreamSummary",
    "UnsupportedFormatError",
    "UnsupportedRDBError",
    "__version__",
    "check_store",
    "inspect_rdb",
    "read_rdb_range",
    "upgrade_store",
]
