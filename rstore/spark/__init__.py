"""rstore on Spark (PySpark >= 4.2): stores and RDB dumps as DataFrames, a streaming source
whose offsets are stream IDs, and a writer.  ``pip install "rstore[spark]"``; see
``docs/spark.md``.

>>> df = spark.read.format("rstore").load("rstore-data")          # doctest: +SKIP
>>> df.groupBy(df.fields["action"]).count().show()                # doctest: +SKIP

``spark.read.format("rstore")`` works without registration (Spark 4 imports the top-level
``pyspark_rstore`` module and registers its ``DefaultSource``); :func:`register` registers
explicitly.  :func:`read_df` reads the same rows on Spark 3.3+ (``mapInArrow``).

This package is an outer layer, like the CLI: it uses rstore's public API only
(:meth:`rstore.Store.view`, :func:`rstore.iter_columns`, :func:`rstore.index_rdb`, ...).
Importing it does not import pyspark; the names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rstore.spark.shim import read_df
    from rstore.spark.source import RStoreDataSource, register

__all__ = ["RStoreDataSource", "read_df", "register"]

_LAZY = {
    "RStoreDataSource": "rstore.spark.source",
    "register": "rstore.spark.source",
    "read_df": "rstore.spark.shim",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rstore.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
