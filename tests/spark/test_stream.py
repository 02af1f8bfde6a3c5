"""``spark.readStream.format("rstore")`` end to end in a real (local[2]) Spark: AvailableNow
with maxEntriesPerTrigger, restart from a checkpoint, new streams, the consumer group, data
loss, and binary / duplicate fields.  Rows are compared with what the store itself answers."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

import rstore

pyspark_errors = pytest.importorskip("pyspark.errors")
StreamingQueryException = pyspark_errors.StreamingQueryException

pytestmark = pytest.mark.spark

TIMEOUT = 180


def _fill(store: rstore.Store, name: str, first: int, last: int, seq: int = 0) -> None:
    pipe = store.pipeline()
    for i in range(first, last + 1):
        pipe.xadd(name, {"user": f"u{i % 7}", "n": str(i)}, id=f"{i}-{seq}")
    pipe.execute()


def _expected(store: rstore.Store, *names: str) -> list[tuple[str, str, dict[str, str]]]:
    """Every entry as XRANGE gives it (a field given twice: its last value, as a map holds)."""
    return sorted(
        (name, i.decode(), {k.decode(): v.decode() for k, v in fields.items()})
        for name in names
        for i, fields in store.xrange(name)
    )


def _rows(rows: list[Any]) -> list[tuple[str, str, dict[str, str]]]:
    return sorted((r["stream"], r["id"], dict(r["fields"])) for r in rows)


class Batches:
    """A foreachBatch sink (it restarts from a checkpoint, the memory sink does not)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.rows: list[Any] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = df.collect()
        self.sizes.append(len(rows))
        self.rows += rows


def _run(spark: Any, store: Path, checkpoint: Path, sink: Any, **options: str) -> Any:
    reader = spark.readStream.format("rstore")
    for k, v in options.items():
        reader = reader.option(k, v)
    writer = reader.load(str(store)).writeStream.option("checkpointLocation", str(checkpoint))
    writer = writer.foreachBatch(sink) if isinstance(sink, Batches) else sink(writer)
    query = writer.trigger(availableNow=True).start()
    with contextlib.suppress(StreamingQueryException):  # the tests look at query.exception()
        assert query.awaitTermination(TIMEOUT), "the query did not finish in time"
    return query


def test_available_now_batches_and_rows(spark: Any, tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "store", node_max_entries=25) as store:
        _fill(store, "a", 1, 230)
        _fill(store, "b", 1, 69, seq=3)
        store.execute("XADD", "b", "70-3", "a", "1", "a", "2", "b", "3")  # a map keeps a=2
        sink = Batches()
        query = _run(spark, tmp_path / "store", tmp_path / "ck", sink, maxEntriesPerTrigger="100")
        assert query.exception() is None
        assert sink.sizes == [100, 100, 100]
        assert _rows(sink.rows) == _expected(store, "a", "b")
        assert {(r["ms"], r["seq"]) for r in sink.rows if r["stream"] == "b"} == {
            (i, 3) for i in range(1, 71)
        }


def _parquet(path: Path) -> Any:
    def make(writer: Any) -> Any:
        return writer.format("parquet").option("path", str(path))

    return make


def test_restart_from_checkpoint_loses_nothing_and_repeats_nothing(
    spark: Any, tmp_path: Path
) -> None:
    out, ck = tmp_path / "out", tmp_path / "ck"
    with rstore.Store(tmp_path / "store", node_max_entries=25) as store:
        _fill(store, "ev:1", 1, 120)
        _fill(store, "other", 1, 5)  # does not match the glob
        opts = {"streams": "ev:*", "maxEntriesPerTrigger": "100"}
        assert _run(spark, tmp_path / "store", ck, _parquet(out), **opts).exception() is None
        first = spark.read.parquet(str(out)).count()
        assert first == 120
        _fill(store, "ev:1", 121, 150)
        _fill(store, "ev:2", 1, 40)  # a stream that appears later
        assert _run(spark, tmp_path / "store", ck, _parquet(out), **opts).exception() is None
        rows = spark.read.parquet(str(out)).collect()
        assert _rows(rows) == _expected(store, "ev:1", "ev:2")
        assert len({(r["stream"], r["id"]) for r in rows}) == len(rows) == 190
        # the checkpoint's offsets are readable stream IDs
        batches = [p for p in (ck / "offsets").iterdir() if p.name.isdigit()]
        offsets = sorted(batches, key=lambda p: int(p.name))
        last = json.loads(offsets[-1].read_text().splitlines()[-1])
        assert last == {"ev:1": "150-0", "ev:2": "40-0"}


def test_a_running_query_picks_up_new_entries_and_streams(spark: Any, tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "store") as store:
        _fill(store, "ev:1", 1, 10)
        sink = Batches()
        query = (
            spark.readStream.format("rstore")
            .option("streams", "ev:*")
            .load(str(tmp_path / "store"))
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .foreachBatch(sink)
            .start()
        )
        try:
            query.processAllAvailable()
            assert len(sink.rows) == 10
            _fill(store, "ev:1", 11, 15)
            _fill(store, "ev:2", 1, 5)  # created while the query runs
            query.processAllAvailable()
        finally:
            query.stop()
        assert query.exception() is None
        assert _rows(sink.rows) == _expected(store, "ev:1", "ev:2")


class FailingOnce(Batches):
    """Keeps each batch's ids by batch ID (a replayed batch replaces its rows, as an idempotent
    sink does); the first time batch 1 comes, XADDs more entries and fails."""

    def __init__(self, store: rstore.Store) -> None:
        super().__init__()
        self.store = store
        self.by_batch: dict[int, list[str]] = {}
        self.first_attempt: list[str] | None = None

    def __call__(self, df: Any, batch_id: int) -> None:
        ids = [r["id"] for r in df.collect()]
        self.by_batch[batch_id] = ids
        if batch_id == 1 and self.first_attempt is None:
            self.first_attempt = ids
            _fill(self.store, "s", 91, 100)  # written while the batch runs
            raise RuntimeError("the sink failed")


def test_a_failed_batch_is_replayed_with_the_same_entries(spark: Any, tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    with rstore.Store(tmp_path / "store") as store:
        _fill(store, "s", 1, 90)
        sink = FailingOnce(store)
        opts = {"maxEntriesPerTrigger": "30"}
        assert "the sink failed" in str(
            _run(spark, tmp_path / "store", ck, sink, **opts).exception()
        )
        assert _run(spark, tmp_path / "store", ck, sink, **opts).exception() is None
        assert sink.by_batch[1] == sink.first_attempt == [f"{i}-0" for i in range(31, 61)]
        assert {b: len(ids) for b, ids in sink.by_batch.items()} == {0: 30, 1: 30, 2: 30, 3: 10}
        delivered = sorted(i for ids in sink.by_batch.values() for i in ids)
        assert delivered == sorted(i.decode() for i, _ in store.xrange("s"))


def _group(store: rstore.Store, stream: str) -> dict[str, Any]:
    return next(g for g in store.xinfo_groups(stream) if g["name"] == b"spark")


def test_group_follows_the_query_one_batch_behind(spark: Any, tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    with rstore.Store(tmp_path / "store") as store:
        _fill(store, "s", 1, 100)
        opts = {"group": "spark", "maxEntriesPerTrigger": "40"}
        sink = Batches()
        assert _run(spark, tmp_path / "store", ck, sink, **opts).exception() is None
        assert sink.sizes == [40, 40, 20]
        # batches end at 40, 80, 100; Spark commits a batch when it logs the next one
        g = _group(store, "s")
        assert (g["last-delivered-id"], g["entries-read"], g["lag"]) == (b"80-0", 80, 20)
        assert g["lag"] == len(store.xrange("s", "(80-0", "+"))
        _fill(store, "s", 101, 110)
        again = Batches()
        assert _run(spark, tmp_path / "store", ck, again, **opts).exception() is None
        assert again.sizes == [10]
        assert _rows(sink.rows + again.rows) == _expected(store, "s")
        g = _group(store, "s")
        assert (g["last-delivered-id"], g["entries-read"], g["lag"]) == (b"100-0", 100, 10)
        assert g["lag"] == len(store.xrange("s", "(100-0", "+"))


def test_entries_trimmed_before_they_were_read(spark: Any, tmp_path: Path) -> None:
    # failOnDataLoss=false going on from the first surviving entry: test_stream_offsets.py
    with rstore.Store(tmp_path / "store") as store:
        _fill(store, "s", 1, 20)
        sink = Batches()
        assert _run(spark, tmp_path / "store", tmp_path / "ck", sink).exception() is None
        _fill(store, "s", 21, 40)
        store.xtrim("s", maxlen=10, approximate=False)  # 21-30 were never read
        query = _run(spark, tmp_path / "store", tmp_path / "ck", sink)
        message = str(query.exception())
        assert "stream 's': its first entry 31-0 is after 20-0" in message
        assert "failOnDataLoss=false" in message
        assert sink.sizes == [20]


def test_binary_values_and_duplicate_fields_as_in_the_store(spark: Any, tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "store") as store:
        store.execute("XADD", "s", "1-0", "a", "1", "a", "2", "b", b"\xff\x00")
        store.execute("XADD", "s", "2-0", "k", "", "k", "x", "k", "y")
        raw = store.execute("XRANGE", "s", "-", "+")
        sink = Batches()
        opts = {"fields": "pairs", "values": "binary"}
        assert _run(spark, tmp_path / "store", tmp_path / "ck", sink, **opts).exception() is None
        got = [
            (r["id"].encode(), [(p["field"].encode(), bytes(p["value"])) for p in r["fields"]])
            for r in sorted(sink.rows, key=lambda r: r["ms"])
        ]
        expected = [(i, list(zip(fv[::2], fv[1::2], strict=True))) for i, fv in raw]
        assert got == expected
