"""Spark 4 imports every top-level ``pyspark_*`` module and registers its ``DefaultSource``:
this makes ``spark.read.format("rstore")`` work without a registration call.  It must import
cheaply and never raise (Spark imports it in every planner process)."""

from __future__ import annotations

import contextlib

__all__ = ["DefaultSource"]

with contextlib.suppress(ImportError):  # pyspark or pyarrow missing: nothing to register
    from rstore.spark.source import RStoreDataSource as DefaultSource
