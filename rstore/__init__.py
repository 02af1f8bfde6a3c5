"""rstore: a durable, embedded log store with Redis Streams semantics, on LMDB.

>>> import rstore
>>> store = rstore.Store("rstore-data")          # doctest: +SKIP
>>> store.xadd("events", {"user": "42"})         # doctest: +SKIP
b'1732191234567-0'
"""

from rstore.commands.reply import NIL_ARRAY
from rstore.errors import (
    CorruptDataError,
    DataError,
    NotAStoreError,
    ResponseError,
    RStoreError,
    StorageError,
    StoreClosedError,
    StoreNotFoundError,
    UnsupportedFormatError,
)
from rstore.ids import StreamID
from rstore.pipeline import Pipeline
from rstore.store import DEFAULT_PATH, Store
from rstore.worker import Consumer, Message

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PATH",
    "NIL_ARRAY",
    "Consumer",
    "CorruptDataError",
    "DataError",
    "Message",
    "NotAStoreError",
    "Pipeline",
    "RStoreError",
    "ResponseError",
    "StorageError",
    "Store",
    "StoreClosedError",
    "StoreNotFoundError",
    "StreamID",
    "UnsupportedFormatError",
    "__version__",
]
