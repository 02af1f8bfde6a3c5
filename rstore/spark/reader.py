"""Batch reads (being built)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.datasource import DataSourceReader
from pyspark.sql.types import StructType


def make_reader(options: Mapping[str, str], schema: StructType) -> DataSourceReader:
    raise NotImplementedError("rstore.spark: batch reads are being built")
