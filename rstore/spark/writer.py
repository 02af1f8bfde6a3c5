"""Writes (being built)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType


def make_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> DataSourceWriter:
    raise NotImplementedError("rstore.spark: writes are being built")


def make_stream_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> DataSourceStreamWriter:
    raise NotImplementedError("rstore.spark: streaming writes are being built")
