"""Streaming reads (being built)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.types import StructType


def make_stream_reader(options: Mapping[str, str], schema: StructType) -> DataSourceStreamReader:
    raise NotImplementedError("rstore.spark: streaming reads are being built")
