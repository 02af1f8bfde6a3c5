"""Batch reads: ``spark.read.format("rstore").load(PATH)``.

The reader plans in Spark's planner process (:func:`rstore.spark.plan.plan_read`: slices at node
boundaries, bounds fixed at planning) and reads each partition in an executor as Arrow record
batches typed exactly by the schema Spark asks for (:func:`rstore.spark.arrow.read_part`).

Filter pushdown.  Spark 4.1+ offers filters to a reader that implements ``pushFilters`` -- and
fails *every* query of such a reader while ``spark.sql.python.filterPushdown.enabled`` is false
(the default), with ``DATA_SOURCE_PUSHDOWN_DISABLED``.  The planner process is not told the
setting, but it tells by *which* of its worker modules asks: filters are only ever offered by
``pyspark.sql.worker.data_source_pushdown_filters``, which Spark runs only when pushdown is
enabled.  :func:`make_reader` gives that caller a reader with ``pushFilters`` and every other
caller one without: queries never break when pushdown is off, and pushed filters narrow the
plan when it is on.  Should a later Spark rename that module, reads stay correct and simply
stop pushing filters down.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator, Mapping
from types import FrameType
from typing import Any

from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

import rstore
from rstore.spark.arrow import read_partition
from rstore.spark.options import MAX_ID, ReadOptions, read_options
from rstore.spark.plan import ID, plan_parts

__all__ = ["RStorePushdownReader", "RStoreReader", "make_reader", "narrow"]

#: The planner module of Spark that offers filters (only when pushdown is enabled).
PUSHDOWN_WORKER = "data_source_pushdown_filters"


def arrow_schema(schema: StructType) -> Any:
    """The Arrow schema Spark checks the batches against (types and nullability)."""
    from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415

    return to_arrow_schema(schema, timezone="UTC")


def plan_partitions(opts: ReadOptions) -> list[InputPartition]:
    return [InputPartition(p) for p in plan_parts(opts)]


class RStoreReader(DataSourceReader):
    """Reads entries or a table of a store or of RDB dumps.  Holds plain data only."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        return plan_partitions(self.opts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        value = getattr(partition, "value", None)
        return read_partition(value, self.opts, arrow_schema(self.schema))


def _column(f: Filter) -> str | None:
    attr: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    return attr[0] if len(attr) == 1 else None


def _as_id(value: Any) -> ID | None:
    """The ID a value of the ``id`` column names, or None if no row can hold it."""
    if not isinstance(value, str):
        return None
    ms, sep, seq = value.partition("-")
    if not sep or not ms.isdigit() or not seq.isdigit():
        return None
    parsed = (int(ms), int(seq))
    if f"{parsed[0]}-{parsed[1]}" != value or max(parsed) >= 2**64:
        return None  # "007-1" is no row's id: ids are written canonically
    return parsed


def _ms_range(f: Filter) -> tuple[ID, ID] | None:
    v = getattr(f, "value", None)
    if isinstance(f, In):
        values = [x for x in f.value if isinstance(x, int)]
        if not values:
            return ((1, 0), (0, 0))  # nothing
        lo, hi = min(values), max(values)
        return ((max(lo, 0), 0), (hi, MAX_ID[1])) if hi >= 0 else ((1, 0), (0, 0))
    if not isinstance(v, int) or isinstance(v, bool):
        return None
    if isinstance(f, EqualTo):
        return ((v, 0), (v, MAX_ID[1])) if v >= 0 else ((1, 0), (0, 0))
    if isinstance(f, GreaterThan):
        return ((max(v + 1, 0), 0), MAX_ID)
    if isinstance(f, GreaterThanOrEqual):
        return ((max(v, 0), 0), MAX_ID)
    if isinstance(f, LessThan):
        return ((0, 0), (v - 1, MAX_ID[1])) if v >= 1 else ((1, 0), (0, 0))
    if isinstance(f, LessThanOrEqual):
        return ((0, 0), (v, MAX_ID[1])) if v >= 0 else ((1, 0), (0, 0))
    return None


def narrow(opts: ReadOptions, filters: Iterable[Filter]) -> tuple[ReadOptions, list[Filter]]:
    """The read narrowed by the filters it can apply exactly (on ``stream``, ``ms`` and
    ``id`` equality), and the filters Spark must still apply.

    ``stream = x`` / ``IN``, ``ms`` comparisons, ``ms = x`` and ``id = x`` are exact: every row
    the narrowed read gives satisfies them, so Spark need not check them again.  ``ms IN (...)``
    and ``id IN (...)`` narrow to the range between their least and greatest value, and Spark
    checks them.  Comparisons on ``id`` are string comparisons in Spark (``'10-0' < '9-0'``):
    they do not map to an ID range and are left to Spark, as is every other filter."""
    start, end = opts.start, opts.end
    streams = opts.streams
    rest: list[Filter] = []
    for f in filters:
        col = _column(f)
        if col == "stream" and isinstance(f, EqualTo | In):
            values = f.value if isinstance(f, In) else (f.value,)
            names = {v.encode() for v in values if isinstance(v, str)}
            if opts.pattern is not None:
                names = {n for n in names if rstore.key_matches(opts.pattern, n)}
            streams = tuple(
                sorted(names) if streams is None else (n for n in streams if n in names)
            )
            continue
        if col == "ms":
            r = _ms_range(f)
            if r is not None:
                start, end = max(start, r[0]), min(end, r[1])
                if isinstance(f, In):
                    rest.append(f)
                continue
        if col == "id" and isinstance(f, EqualTo | In):
            values = f.value if isinstance(f, In) else (f.value,)
            ids = [i for i in (_as_id(v) for v in values) if i is not None]
            if ids:
                start, end = max(start, min(ids)), min(end, max(ids))
            else:
                start, end = (1, 0), (0, 0)  # no row has such an id
            if isinstance(f, In):
                rest.append(f)
            continue
        rest.append(f)
    narrowed = dataclasses.replace(opts, start=start, end=end, streams=streams)
    return narrowed, rest


class RStorePushdownReader(RStoreReader):
    """The reader given when Spark offers filters (pushdown enabled): see the module doc."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        if self.opts.table != "entries":
            return filters
        self.opts, rest = narrow(self.opts, filters)
        return rest


def _asked_by_pushdown_worker() -> bool:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(f"{PUSHDOWN_WORKER}.py"):
            return True
        frame = frame.f_back
    return False


def make_reader(options: Mapping[str, str], schema: StructType) -> DataSourceReader:
    opts = read_options(options)
    if _asked_by_pushdown_worker():
        return RStorePushdownReader(opts, schema)
    return RStoreReader(opts, schema)
