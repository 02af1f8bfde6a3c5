"""``rstore.spark.read_df(spark, path, **options)``: the rows ``spark.read.format("rstore")``
gives, for Spark 3.3+ (no Python Data Source API) or without registering the source.

Built on ``spark.range(0, n, 1, n).mapInArrow(...)``: planned eagerly, here in the driver, by
the same planner as the data source (:func:`rstore.spark.plan.plan_parts`), and each of the
``n`` Spark partitions reads one planned partition with the same reader
(:func:`rstore.spark.arrow.read_partition`).  ``spark.range`` with ``n`` slices gives exactly
one index to each partition.  Needs pyspark's Arrow support (pyarrow) in the executors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rstore.spark.options import read_options, read_schema

__all__ = ["read_df"]


def _arrow_schema(struct: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415

    try:
        return to_arrow_schema(struct, timezone="UTC")
    except TypeError:  # Spark 3.x: no keyword arguments
        return to_arrow_schema(struct)


def read_df(spark: Any, path: str, **options: Any) -> Any:
    """A DataFrame of the entries (or of ``table=...``) of the store or RDB files at ``path``.

    Options are those of ``spark.read.format("rstore")`` (``streams``, ``start``, ``end``,
    ``db``, ``table``, ``fields``, ``values``, ``entriesPerPartition``, ``numPartitions``;
    names case-insensitive).  The plan is made now: entries appended later are not read."""
    from rstore.spark.arrow import read_partition  # noqa: PLC0415
    from rstore.spark.plan import plan_parts  # noqa: PLC0415

    opts_in = {k.lower(): str(v) for k, v in options.items()}
    opts_in["path"] = str(path)
    lookup = _Options(opts_in)
    opts = read_options(lookup)
    ddl = read_schema(lookup)
    struct = spark.createDataFrame([], ddl).schema
    pa_schema = _arrow_schema(struct)
    parts = plan_parts(opts)
    n = max(1, len(parts))

    def read(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                if i < len(parts):
                    yield from read_partition(parts[i], opts, pa_schema)

    return spark.range(0, n, 1, n).mapInArrow(read, struct)


class _Options(dict[str, str]):
    """Options looked up case-insensitively, as Spark hands them to a data source."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)
