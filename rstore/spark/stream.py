"""Streaming reads: ``spark.readStream.format("rstore").load(STORE)``, offsets are stream IDs.

Spark runs ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` in one long-lived
Python process per query on the driver host, and ``read`` in executors (a pickled copy of the
reader).  The offset logic is :mod:`rstore.spark.offsets` (no pyspark); planning and reading
are the batch reader's (:func:`rstore.spark.plan.plan_store_ranges`,
:func:`rstore.spark.arrow.read_part`).  The reader holds plain values only; the driver-side
process keeps one open :class:`rstore.Store` per path in a module-level cache (LMDB allows one
handle per process; rstore's registry shares it with the planner's own opens).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

import rstore
from rstore.spark import offsets as off
from rstore.spark.arrow import read_part
from rstore.spark.group import commit_group
from rstore.spark.plan import pack_slices, plan_store_ranges

__all__ = ["DataLossError", "RStoreStreamReader", "make_stream_reader"]

log = logging.getLogger("rstore.spark")

_STORES: dict[str, rstore.Store] = {}


def _store(path: str) -> rstore.Store:
    """This process's open store at ``path`` (the driver-side stream process keeps it open
    between micro-batches)."""
    store = _STORES.get(path)
    if store is None or store.closed:
        store = _STORES[path] = rstore.Store(path, create=False)
    return store


class DataLossError(RuntimeError):
    """Entries after the query's offset were removed from the store before they were read."""


class RStoreStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader (see ``docs/spark.md``, "Streaming")."""

    def __init__(self, opts: off.StreamOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self._target: dict[bytes, off.ID] | None = None  # the AvailableNow snapshot
        self._seen: dict[bytes, off.Seen] = {}  # what this process saw at each offset

    @property
    def _path(self) -> str:
        return self.opts.read.path

    def _group_ids(self, store: rstore.Store) -> dict[bytes, off.ID]:
        group = self.opts.group
        if group is None:
            return {}
        ids: dict[bytes, off.ID] = {}
        for name in store.view(lambda v: off.stream_names(v, self.opts.read)):
            for info in store.xinfo_groups(name):
                if info["name"] == group:
                    last = info["last-delivered-id"].decode()
                    ids[name] = off.parse_id(last, f"group {group!r} of {name!r}")
        return ids

    def initialOffset(self) -> dict[str, str]:
        store = _store(self._path)
        groups = self._group_ids(store)
        offsets, seen = store.view(lambda v: off.initial_offsets(v, self.opts, groups))
        self._seen.update(seen)
        return off.offsets_to_json(offsets)

    def prepareForTriggerAvailableNow(self) -> None:
        def last_ids(view: rstore.StoreView) -> dict[bytes, off.ID]:
            states = {n: view.state(n) for n in off.stream_names(view, self.opts.read)}
            return {n: s.last_id for n, s in states.items() if s is not None}

        self._target = _store(self._path).view(last_ids)

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import (  # noqa: PLC0415
            ReadAllAvailable,
            ReadMaxRows,
        )

        if self.opts.max_entries is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.opts.max_entries)

    def latestOffset(
        self, start: Mapping[str, Any] | None = None, limit: Any = None
    ) -> dict[str, str]:
        begin = off.offsets_from_json(start, "start offset")
        max_rows = getattr(limit, "max_rows", None)
        adv = _store(self._path).view(
            lambda v: off.advance(v, self.opts, begin, self._target, max_rows, self._seen)
        )
        self._seen.update(adv.seen)
        if adv.lost:
            self._data_lost(adv.lost)
        return off.offsets_to_json(adv.end)

    def _data_lost(self, lost: list[str]) -> None:
        if self.opts.fail_on_data_loss:
            raise DataLossError(
                f"rstore: {'; '.join(lost)}.  Set option failOnDataLoss=false to go on from the "
                "first surviving entry, or start the query again from a new checkpoint"
            )
        for line in lost:
            log.warning("rstore: %s; going on from the first surviving entry", line)

    def reportLatestOffset(self) -> dict[str, str]:
        def last_ids(view: rstore.StoreView) -> dict[bytes, off.ID]:
            states = {n: view.state(n) for n in off.stream_names(view, self.opts.read)}
            return {n: s.last_id for n, s in states.items() if s is not None and s.length}

        return off.offsets_to_json(_store(self._path).view(last_ids))

    def partitions(self, start: Mapping[str, Any], end: Mapping[str, Any]) -> Sequence[Any]:
        begin = off.offsets_from_json(start, "start offset")
        stop = off.offsets_from_json(end, "end offset")
        ranges: dict[bytes, tuple[off.ID, off.ID]] = {}
        for name, hi in stop.items():
            after = off.next_id(begin.get(name, off.ZERO))
            if after is not None and after <= hi:
                ranges[name] = (after, hi)
        if not ranges:
            return []
        _store(self._path)  # keep the handle open across the planner's own open and close
        per = self.opts.read.entries_per_partition
        slices, _ = plan_store_ranges(self._path, ranges, per)
        if self.opts.read.num_partitions:
            total = sum(s.entries for s in slices)
            per = max(1, math.ceil(total / self.opts.read.num_partitions))
            slices, _ = plan_store_ranges(self._path, ranges, per)
        return [InputPartition(p) for p in pack_slices("store", self._path, slices, per)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415

        schema = to_arrow_schema(self.schema, timezone="UTC")
        yield from read_part(partition.value, self.opts.read, schema)

    def commit(self, end: Mapping[str, Any]) -> None:
        """Spark calls this once the next batch's offsets are logged: ``end`` is the end of the
        batch before (the one-batch lag, ``docs/spark.md``)."""
        if self.opts.group is not None:
            commit_group(
                _store(self._path), self.opts.group, off.offsets_from_json(end, "end offset")
            )

    def stop(self) -> None:
        store = _STORES.pop(self._path, None)
        if store is not None:
            store.close()


def make_stream_reader(options: Mapping[str, str], schema: StructType) -> DataSourceStreamReader:
    return RStoreStreamReader(off.stream_options(options), schema)
