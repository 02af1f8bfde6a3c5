"""The streaming source's offset logic without Spark: offsets as JSON, exact counting over
nodes, the per-trigger budget, data-loss detection and the consumer group -- and the stream
reader driven by hand the way Spark's stream process drives it (no JVM needed)."""

from __future__ import annotations

import json
import logging
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore.spark import offsets as off
from rstore.spark.group import commit_group, group_entries_read


def _store(tmp_path: Path) -> rstore.Store:
    return rstore.Store(tmp_path / "store", node_max_entries=10)


def _ids(store: rstore.Store, name: str, lo: str = "-", hi: str = "+") -> list[tuple[int, int]]:
    return [off.parse_id(i.decode(), "id") for i, _ in store.xrange(name, lo, hi)]


# ------------------------------------------------------------------ IDs, JSON, options


def test_offsets_json_round_trip_sorted() -> None:
    offsets = {b"zeta": (5, 0), b"alpha": (1700000000000, 18446744073709551615)}
    doc = off.offsets_to_json(offsets)
    assert list(doc) == ["alpha", "zeta"]  # Spark compares offsets as JSON text
    assert json.dumps(doc) == '{"alpha": "1700000000000-18446744073709551615", "zeta": "5-0"}'
    assert off.offsets_from_json(json.loads(json.dumps(doc))) == offsets


@pytest.mark.parametrize("bad", ["", "abc", "1-", "-1", "1-2-3", "18446744073709551616-0"])
def test_bad_ids_are_one_line_errors(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a stream ID") as err:
        off.parse_id(bad, "offset of stream 's'")
    assert "\n" not in str(err.value)


def test_non_utf8_stream_names_are_refused() -> None:
    with pytest.raises(ValueError, match="not UTF-8"):
        off.offsets_to_json({b"\xff": (1, 0)})


def test_starting_ids_forms(tmp_path: Path) -> None:
    _store(tmp_path).close()
    path = str(tmp_path / "store")

    def opts(value: str) -> off.StreamOptions:
        return off.stream_options({"path": path, "startingIds": value})

    assert opts("earliest").starting == off.ZERO and opts("0-0").starting == off.ZERO
    assert opts("latest").starting is None and opts("$").starting is None
    assert opts("5-3").starting == (5, 3)
    js = opts('{"a": "7", "b": "$", "c": "0-0"}')
    assert js.starting == off.ZERO
    assert js.starting_ids == {b"a": (7, 0), b"b": None, b"c": off.ZERO}
    for bad in ("soon", '{"a": "x"}', "[1]"):
        with pytest.raises(ValueError, match="startingIds"):
            opts(bad)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"maxEntriesPerTrigger": "0"}, "maxEntriesPerTrigger"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss"),
        ({"start": "0"}, "not for streaming"),
        ({"table": "groups"}, "entries table only"),
    ],
)
def test_bad_stream_options(tmp_path: Path, extra: dict[str, str], message: str) -> None:
    _store(tmp_path).close()
    with pytest.raises(ValueError, match=message):
        off.stream_options({"path": str(tmp_path / "store"), **extra})


def test_rdb_files_cannot_be_streamed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.xadd("s", {"f": "v"})
    store.save(tmp_path / "dump.rdb")
    store.close()
    with pytest.raises(ValueError, match="need a store directory"):
        off.stream_options({"path": str(tmp_path / "dump.rdb")})


# ------------------------------------------------------------------ counting, budget


def test_count_range_and_nth_id_match_xrange(tmp_path: Path) -> None:
    store = _store(tmp_path)
    rng = random.Random(7)
    for i in range(1, 400):
        store.xadd("s", {"f": str(i)}, id=f"{i}-{rng.randrange(3)}")
    store.xdel("s", *[f"{i}-{s}" for i, s in _ids(store, "s") if rng.random() < 0.2])
    ids = _ids(store, "s")
    for _ in range(60):
        lo = (rng.randrange(0, 420), rng.randrange(3))
        hi = (rng.randrange(lo[0], 430), rng.randrange(3))
        inside = [i for i in ids if lo <= i <= hi]
        n = store.view(lambda v, lo=lo, hi=hi: off.count_range(v, b"s", lo, hi))
        assert n == len(inside)
        for k in {1, len(inside) // 2, len(inside)} - {0} if inside else ():
            got = store.view(lambda v, lo=lo, hi=hi, k=k: off.nth_id(v, b"s", lo, hi, k))
            assert got == inside[k - 1]
    store.close()


@pytest.mark.parametrize(
    ("backlog", "limit", "expected"),
    [
        ({b"a": 10, b"b": 5}, None, {b"a": 10, b"b": 5}),
        ({b"a": 10, b"b": 5}, 100, {b"a": 10, b"b": 5}),
        ({b"a": 300, b"b": 100}, 100, {b"a": 75, b"b": 25}),
        ({b"a": 1, b"b": 1, b"c": 1}, 2, {b"a": 1, b"b": 1, b"c": 0}),
        ({b"a": 7, b"b": 0, b"c": 6}, 5, {b"a": 3, b"b": 0, b"c": 2}),
    ],
)
def test_allocate_budget(
    backlog: dict[bytes, int], limit: int | None, expected: dict[bytes, int]
) -> None:
    got = off.allocate(backlog, limit)
    assert got == expected
    assert sum(got.values()) == min(limit or 10**9, sum(backlog.values()))
    assert all(0 <= got[n] <= backlog[n] for n in backlog)


# ------------------------------------------------------------------ the reader, by hand


@pytest.fixture
def reader_factory(tmp_path: Path) -> Iterator[Any]:
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark")
    from pyspark.sql.types import (
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    from rstore.spark.stream import make_stream_reader

    schema = StructType(
        [
            StructField("stream", StringType()),
            StructField("id", StringType()),
            StructField("ms", LongType()),
            StructField("seq", LongType()),
            StructField("fields", MapType(StringType(), StringType())),
        ]
    )
    made: list[Any] = []

    def make(**options: str) -> Any:
        reader = make_stream_reader({"path": str(tmp_path / "store"), **options}, schema)
        made.append(reader)
        return reader

    yield make
    for reader in made:
        reader.stop()


def _limit(reader: Any) -> Any:
    return reader.getDefaultReadLimit()


def _batch(reader: Any, start: dict[str, str], end: dict[str, str]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            rows += zip(batch.column("stream").to_pylist(), batch.column("id").to_pylist())
    return rows


def _run(reader: Any, start: dict[str, str]) -> tuple[list[int], list[tuple[str, str]], dict]:
    """Batches until the source has nothing more, as Spark's AvailableNow trigger does."""
    sizes: list[int] = []
    rows: list[tuple[str, str]] = []
    while True:
        end = reader.latestOffset(start, _limit(reader))
        if end == start:
            return sizes, rows, start
        batch = _batch(reader, start, end)
        sizes.append(len(batch))
        rows += batch
        reader.commit(end)
        start = end


def _all_rows(store: rstore.Store, *names: str) -> list[tuple[str, str]]:
    return [(n, i.decode()) for n in names for i, _ in store.xrange(n)]


def test_available_now_batches_are_cut_exactly(tmp_path: Path, reader_factory: Any) -> None:
    store = _store(tmp_path)
    for i in range(1, 251):
        store.xadd("a", {"f": str(i)}, id=f"{i}-0")
    for i in range(1, 91):
        store.xadd("b", {"f": str(i)}, id=f"{i}-5")
    reader = reader_factory(maxEntriesPerTrigger="100")
    start = reader.initialOffset()
    assert start == {"a": "0-0", "b": "0-0"}
    reader.prepareForTriggerAvailableNow()
    store.xadd("a", {"f": "late"}, id="1000-0")  # after the AvailableNow snapshot
    sizes, rows, end = _run(reader, start)
    assert sizes == [100, 100, 100, 40]
    assert end == {"a": "250-0", "b": "90-5"}
    expected = [r for r in _all_rows(store, "a", "b") if r != ("a", "1000-0")]
    assert sorted(rows) == sorted(expected) and len(set(rows)) == len(rows)
    store.close()


def test_new_streams_are_picked_up_and_restart_resumes(tmp_path: Path, reader_factory: Any) -> None:
    store = _store(tmp_path)
    for i in range(1, 31):
        store.xadd("ev:1", {"f": str(i)})
    reader = reader_factory(streams="ev:*")
    _, rows1, end = _run(reader, reader.initialOffset())
    store.xadd("other", {"f": "x"})  # does not match
    for i in range(1, 6):
        store.xadd("ev:2", {"f": str(i)})
        store.xadd("ev:1", {"f": str(i)})
    # a new process (restart): no memory, only the checkpointed offset
    again = reader_factory(streams="ev:*")
    _, rows2, end2 = _run(again, json.loads(json.dumps(end)))
    assert set(end2) == {"ev:1", "ev:2"}
    assert sorted(rows1 + rows2) == sorted(_all_rows(store, "ev:1", "ev:2"))
    assert len(set(rows1 + rows2)) == len(rows1 + rows2)
    # restarted with fewer streams: the others keep their offset and are not read
    store.xadd("ev:2", {"f": "more"})
    narrower = reader_factory(streams="ev:1")
    assert narrower.latestOffset(end2, None) == end2
    store.close()


def test_starting_from_a_group_and_from_latest(tmp_path: Path, reader_factory: Any) -> None:
    store = _store(tmp_path)
    for i in range(1, 21):
        store.xadd("a", {"f": str(i)}, id=f"{i}-0")
        store.xadd("b", {"f": str(i)}, id=f"{i}-0")
    store.xgroup_create("a", "g", id="15-0")
    assert reader_factory(group="g").initialOffset() == {"a": "15-0", "b": "0-0"}
    assert reader_factory(startingIds="$").initialOffset() == {"a": "20-0", "b": "20-0"}
    js = reader_factory(startingIds='{"a": "3-0", "c": "9-0"}').initialOffset()
    assert js == {"a": "3-0", "b": "0-0", "c": "9-0"}  # c does not exist yet: starts there
    store.close()


# ------------------------------------------------------------------ data loss


def test_deleted_between_batches_is_data_loss(
    tmp_path: Path, reader_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(tmp_path)
    for i in range(1, 41):
        store.xadd("s", {"f": str(i)}, id=f"{i}-0")
    store.xdel("s", "35-0")  # deleted before the query started: not a loss
    readers = {}
    for fail in ("true", "false"):
        reader = readers[fail] = reader_factory(maxEntriesPerTrigger="10", failOnDataLoss=fail)
        end = reader.latestOffset(reader.initialOffset(), _limit(reader))
        assert end == {"s": "10-0"}
        assert reader.latestOffset(end, _limit(reader)) == {"s": "20-0"}
    store.xdel("s", "25-0")  # after the offset, not read yet
    store.xtrim("s", minid="15-0", approximate=False)  # entries already read: not a loss
    with pytest.raises(RuntimeError, match=r"'s': 1 entries after 20-0 were deleted") as err:
        readers["true"].latestOffset({"s": "20-0"}, _limit(readers["true"]))
    assert "failOnDataLoss=false" in str(err.value)
    with caplog.at_level(logging.WARNING, logger="rstore.spark"):
        end = readers["false"].latestOffset({"s": "20-0"}, _limit(readers["false"]))
    assert end == {"s": "31-0"}  # 10 entries: 21-24, 26-31
    assert "1 entries after 20-0 were deleted" in caplog.text
    # reported once: the next batch goes on quietly
    caplog.clear()
    assert readers["false"].latestOffset(end, _limit(readers["false"])) == {"s": "40-0"}
    assert caplog.text == ""
    store.close()


def test_trimmed_while_stopped_is_data_loss(tmp_path: Path, reader_factory: Any) -> None:
    store = _store(tmp_path)
    for i in range(1, 41):
        store.xadd("s", {"f": str(i)}, id=f"{i}-0")
    offset = {"s": "20-0"}  # a checkpoint; the process that wrote it is gone
    store.xtrim(
        "s", minid="20-0", approximate=False
    )  # keeps the entry at the offset: nothing unread removed
    assert reader_factory().latestOffset(offset, None) == {"s": "40-0"}
    store.xtrim("s", minid="25-0", approximate=False)  # 21-24 were never read
    with pytest.raises(RuntimeError, match=r"first entry 25-0 is after 20-0"):
        reader_factory().latestOffset(offset, None)
    reader = reader_factory(failOnDataLoss="false")
    end = reader.latestOffset(offset, None)
    assert end == {"s": "40-0"}
    assert [r[1] for r in _batch(reader, offset, end)] == [f"{i}-0" for i in range(25, 41)]
    store.xtrim("s", maxlen=0, approximate=False)  # everything gone, the last ID stays
    with pytest.raises(RuntimeError, match=r"empty and its last ID 40-0 is after 20-0"):
        reader_factory().latestOffset(offset, None)
    store.close()


# ------------------------------------------------------------------ the consumer group


def _group(store: rstore.Store, stream: str, name: str) -> dict[str, Any]:
    return next(g for g in store.xinfo_groups(stream) if g["name"] == name.encode())


def _twin(store: rstore.Store, stream: str, at: str) -> dict[str, Any]:
    """A group moved to ``at`` by XREADGROUP, as a Redis consumer would have."""
    store.xgroup_create(stream, "twin", id="0")
    count = len(store.xrange(stream, "-", at))
    if count:
        store.xreadgroup("twin", "c", {stream: ">"}, count=count, noack=True)
    twin = _group(store, stream, "twin")
    store.xgroup_destroy(stream, "twin")
    return twin


@pytest.mark.parametrize("deleted", [None, "5-0", "30-0"])
def test_group_lag_counts_what_is_left(tmp_path: Path, deleted: str | None) -> None:
    store = _store(tmp_path)
    for i in range(1, 41):
        store.xadd("s", {"f": str(i)}, id=f"{i}-0")
    if deleted:
        store.xdel("s", deleted)
    store.xtrim("s", minid="3-0", approximate=False)
    live = [i.decode() for i, _ in store.xrange("s")]
    compared = 0
    for at in ("0-0", "2-0", "3-0", "17-0", "30-0", "31-0", "40-0"):
        commit_group(store, b"spark", {b"s": off.parse_id(at, "at")})
        got = _group(store, "s", "spark")
        assert got["last-delivered-id"] == at.encode()
        left = len(store.xrange("s", f"({at}", "+"))
        ahead = deleted is not None and off.parse_id(at, "at") <= off.parse_id(deleted, "d")
        if ahead and at != deleted:
            # a deletion lies ahead: no reader can know the counter (XREADGROUP would not)
            assert (got["entries-read"], got["lag"]) == (None, None), at
        else:
            # Valkey's lag rule reports a deletion at the group's own ID as "unknown" too
            assert (got["entries-read"], got["lag"]) == (40 - left, None if ahead else left), at
        if at in live:  # a Redis consumer that read up to the same entry agrees where it knows
            twin = _twin(store, "s", at)
            assert twin["last-delivered-id"] == at.encode()
            if twin["entries-read"] is not None:
                assert (got["entries-read"], got["lag"]) == (twin["entries-read"], twin["lag"])
                compared += 1
    # past a deletion XREADGROUP loses its count for good (it knows it again at the last entry)
    assert compared == (5 if deleted is None else 1)
    assert store.view(lambda v: group_entries_read(v, b"missing", (1, 0))) is None
    assert store.view(lambda v: group_entries_read(v, b"s", (41, 0))) is None
    store.close()


def test_commit_moves_the_group_and_creates_it(tmp_path: Path, reader_factory: Any) -> None:
    store = _store(tmp_path)
    for i in range(1, 31):
        store.xadd("a", {"f": str(i)}, id=f"{i}-0")
        store.xadd("b", {"f": str(i)}, id=f"{i}-0")
    store.xgroup_create("a", "g", id="0")
    reader = reader_factory(group="g", maxEntriesPerTrigger="20")
    start = reader.initialOffset()
    end = reader.latestOffset(start, _limit(reader))
    assert end == {"a": "10-0", "b": "10-0"}
    reader.commit(end)
    for name in ("a", "b"):
        g = _group(store, name, "g")
        assert (g["last-delivered-id"], g["entries-read"], g["lag"]) == (b"10-0", 10, 20)
    store.close()


def test_reader_pickles_between_calls_and_reports_latest(
    tmp_path: Path, reader_factory: Any
) -> None:
    store = _store(tmp_path)
    for i in range(1, 31):
        store.xadd("a", {"f": str(i)}, id=f"{i}-0")
    store.xadd("empty", {"f": "x"}, id="1-0")
    store.xdel("empty", "1-0")
    reader = reader_factory(maxEntriesPerTrigger="10", group="g")
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    end = reader.latestOffset(start, _limit(reader))
    parts = reader.partitions(start, end)
    reader.commit(end)
    copy = pickle.loads(pickle.dumps(reader))  # what Spark ships to executors
    rows = [
        r for p in pickle.loads(pickle.dumps(parts)) for b in copy.read(p) for r in b.to_pylist()
    ]
    assert [r["id"] for r in rows] == [f"{i}-0" for i in range(1, 11)]
    assert reader.reportLatestOffset() == {"a": "30-0"}  # streams holding entries
    store.close()


def test_partitions_of_a_batch(tmp_path: Path, reader_factory: Any) -> None:
    store = _store(tmp_path)  # nodes of 10 entries
    for i in range(1, 301):
        store.xadd("a", {"f": str(i)}, id=f"{i}-0")
    start, end = {"a": "0-0"}, {"a": "300-0"}
    assert reader_factory().partitions(start, start) == []
    assert len(reader_factory().partitions(start, end)) == 1
    split = reader_factory(numPartitions="3").partitions({"a": "55-0"}, end)
    # 25 nodes (51-60 .. 291-300) of about 84 entries a partition, cut at node boundaries
    assert [p.value.entries for p in split] == [90, 90, 70]
    reader = reader_factory(numPartitions="3")
    got = [i for p in split for b in reader.read(p) for i in b.column("id").to_pylist()]
    assert got == [f"{i}-0" for i in range(56, 301)]
    store.close()
