"""The ``rstore`` data source: one class Spark registers; each role (batch reader, stream
reader, writer, stream writer) lives in its own module and is imported when Spark asks for it.

Spark pickles the source and everything it hands out, and calls its methods in other processes
(``docs/spark.md``, "Where code runs"): nothing here holds a store, a file or a transaction.
"""

from __future__ import annotations

import re
from typing import Any

import pyspark
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

__all__ = ["MIN_PYSPARK", "RStoreDataSource", "check_pyspark", "register"]

#: The oldest PySpark the source runs on: the floor of the ``spark`` extra in pyproject.toml.
MIN_PYSPARK = (4, 2)


def check_pyspark() -> None:
    """Raise ``RuntimeError`` with one line when the running PySpark is older than
    :data:`MIN_PYSPARK` (the source would fail deep inside it: APIs it uses are missing)."""
    found = re.match(r"([0-9]+)\.([0-9]+)", pyspark.__version__)
    if found is not None and (int(found[1]), int(found[2])) < MIN_PYSPARK:
        need = ".".join(map(str, MIN_PYSPARK))
        raise RuntimeError(
            f"rstore: the rstore data source needs PySpark {need} or later, not "
            f'{pyspark.__version__}: pip install "rstore[spark]"'
        )


class RStoreDataSource(DataSource):
    """``spark.read.format("rstore").load(PATH)``: PATH is a store directory, or an RDB file,
    a directory of them or a glob.  Options are documented in ``docs/spark.md``."""

    @classmethod
    def name(cls) -> str:
        return "rstore"

    def schema(self) -> StructType | str:
        check_pyspark()  # the first call of a read
        from rstore.spark.options import read_schema  # noqa: PLC0415 - per role, on first use

        return read_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        from rstore.spark.reader import make_reader  # noqa: PLC0415

        return make_reader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from rstore.spark.stream import make_stream_reader  # noqa: PLC0415

        return make_stream_reader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        check_pyspark()
        from rstore.spark.writer import make_writer  # noqa: PLC0415

        return make_writer(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        check_pyspark()
        from rstore.spark.writer import make_stream_writer  # noqa: PLC0415

        return make_stream_writer(self.options, schema, overwrite)


def register(spark: Any) -> None:
    """Register the ``rstore`` source with ``spark`` explicitly (Spark 4 also finds it on its
    own, through the top-level ``pyspark_rstore`` module).  On a cluster every executor needs
    ``rstore[spark]`` installed (``docs/spark.md``, "On a cluster")."""
    check_pyspark()
    spark.dataSource.register(RStoreDataSource)
