"""The writer: DataFrame -> store (one transaction, all or nothing), -> RDB files, and the
streaming sink (exactly once per query and batch).  Small data, few partitions."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

import rstore

pytestmark = pytest.mark.spark

MAP_SCHEMA = "stream string, id string, fields map<string,string>"
PAIRS_SCHEMA = "stream string, id string, fields array<struct<field:string,value:binary>>"


def _entries(store: rstore.Store, key: str) -> list[tuple[bytes, list[bytes]]]:
    return [(e[0], e[1]) for e in store.execute("XRANGE", key, "-", "+")]


def _leftovers(path: Path) -> list[str]:
    """Anything a job left beside the store (staging files)."""
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def _save(df: Any, path: Path, **options: str) -> None:
    writer = df.write.format("rstore").mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(str(path))


def test_round_trip_map_auto_and_explicit_ids(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "s"
    rows = [
        ("a", "1-1", {"user": "u1", "action": "view"}),
        ("b", None, {"n": "1"}),
        ("a", "1-2", {"user": "u2", "action": "buy"}),
        ("b", "*", {"n": "2"}),
        ("a", "5", {"user": "u3"}),  # XADD's "<ms>" form: 5-0
        ("b", None, {"n": "3"}),
        ("a", "5-*", {"user": "u4"}),  # 5-1
    ]
    df = spark.createDataFrame(rows, MAP_SCHEMA).coalesce(2)
    _save(df, path)
    with rstore.Store(path) as store:
        # (a map's order is Spark's: compared as dicts; pairs keep order, below)
        assert [(i, dict(zip(f[::2], f[1::2]))) for i, f in _entries(store, "a")] == [
            (b"1-1", {b"user": b"u1", b"action": b"view"}),
            (b"1-2", {b"user": b"u2", b"action": b"buy"}),
            (b"5-0", {b"user": b"u3"}),
            (b"5-1", {b"user": b"u4"}),
        ]
        got_b = _entries(store, "b")
        # Automatic IDs: XADD's rule under the commit's one time snapshot.
        ms = {int(i.split(b"-")[0]) for i, _ in got_b}
        assert len(ms) == 1
        assert [i.split(b"-")[1] for i, _ in got_b] == [b"0", b"1", b"2"]
        assert [f for _, f in got_b] == [[b"n", b"1"], [b"n", b"2"], [b"n", b"3"]]
        assert store.execute("XINFO", "STREAM", "a")[1] == 4
        # A second job appends after what is there.
        _save(spark.createDataFrame([("a", None, {"k": "v"})], MAP_SCHEMA), path)
        assert store.xlen("a") == 5
    assert _leftovers(path) == []


def test_round_trip_pairs_binary_values_and_duplicate_fields(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "s"
    raw = bytes(range(256))
    rows = [
        ("s", "1-0", [("f", b"\xff\x00"), ("f", b"again"), ("g", raw)]),
        ("s", "2-0", [("x", b"")]),
        ("t", "1-0", [("only", b"\xc3(")]),
    ]
    _save(spark.createDataFrame(rows, PAIRS_SCHEMA).coalesce(1), path)
    with rstore.Store(path) as store:
        assert _entries(store, "s") == [
            (b"1-0", [b"f", b"\xff\x00", b"f", b"again", b"g", raw]),
            (b"2-0", [b"x", b""]),
        ]
        assert _entries(store, "t") == [(b"1-0", [b"only", b"\xc3("])]


def test_extra_reader_columns_are_ignored_but_others_refused(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "s"
    df = spark.createDataFrame(
        [("s", "3-0", 3, 0, {"k": "v"})],
        "stream string, id string, ms bigint, seq bigint, fields map<string,string>",
    )
    _save(df, path)  # the rstore reader's own schema writes back
    with rstore.Store(path) as store:
        assert _entries(store, "s") == [(b"3-0", [b"k", b"v"])]
    bad = spark.createDataFrame(
        [("s", {"k": "v"}, 1)], "stream string, fields map<string,string>, x int"
    )
    with pytest.raises(
        Exception, match=r"rstore: cannot write the column\(s\) x; the writer takes"
    ):
        _save(bad, path)
    nofields = spark.createDataFrame([("s", "v")], "stream string, value string")
    with pytest.raises(
        Exception, match="rstore: cannot write a DataFrame without a `fields` column"
    ):
        _save(nofields, path)


def test_modes_other_than_append_are_refused(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([("s", None, {"k": "v"})], MAP_SCHEMA)
    with pytest.raises(Exception, match=r'only mode\("append"\) is supported'):
        df.write.format("rstore").mode("overwrite").save(str(tmp_path / "s"))
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("rstore").save(str(tmp_path / "s"))  # default: errorifexists
    assert not (tmp_path / "s").exists()


def test_explicit_ids_are_written_in_id_order_whatever_the_partitioning(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "s"
    # The job: IDs 1-0 ... 2000-0 of a new stream, repartition(3).
    rows = [("a", f"{i}-0", {"i": str(i)}) for i in range(1, 2001)]
    # Beside it: a stream whose IDs come falling, in XADD's "<ms>" and "<ms>-*" forms, and one
    # with automatic IDs.
    rows += [("b", str(ms), {"ms": str(ms)}) for ms in range(300, 0, -1)]
    rows += [("b", "150-*", {"ms": "150-*"}), ("b", "150-*", {"ms": "150-*"})]
    rows += [("c", None, {"n": str(n)}) for n in range(50)]
    _save(spark.createDataFrame(rows, MAP_SCHEMA).repartition(3), path)
    with rstore.Store(path) as store:
        assert _entries(store, "a") == [
            (f"{i}-0".encode(), [b"i", str(i).encode()]) for i in range(1, 2001)
        ]
        b = [(i, f[1]) for i, f in _entries(store, "b")]
        assert b[149:153] == [(b"150-0", b"150"), (b"150-1", b"150-*"), (b"150-2", b"150-*"),
                              (b"151-0", b"151")]  # fmt: skip
        assert [i for i, _ in b] == sorted(
            (i for i, _ in b), key=lambda i: tuple(map(int, i.split(b"-")))
        )
        assert len(b) == 302
        c = _entries(store, "c")  # automatic IDs: the commit's millisecond, after the others
        assert len({i.split(b"-")[0] for i, _ in c}) == 1
        assert sorted(int(f[1]) for _, f in c) == list(range(50))
    assert _leftovers(path) == []


def test_ids_below_the_top_or_twice_fail_the_whole_job_naming_the_row(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "s"
    with rstore.Store(path) as store:
        store.execute("XADD", "a", "1000-0", "k", "v")
        before = store.execute("XINFO", "STREAM", "a")
    # Three partitions, as parallelize cuts a list: rows 0-699, 700-1399, 1400-2099.
    ids = [f"{ms}-0" for ms in range(1001, 3101)]
    random.Random(3).shuffle(ids)
    ids[1405] = "500-0"  # below the stream's top: the row 5 of partition 2
    rows = [("a", i, {"k": "v"}) for i in ids]
    rows[10] = ("b", None, {"k": "automatic"})
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), MAP_SCHEMA)
    with pytest.raises(Exception) as failed:
        _save(df, path)
    text = str(failed.value)
    assert "the row 5 of partition 2 was refused" in text
    assert (
        "ERR The ID specified in XADD is equal or smaller than the target stream top item" in text
    )
    with rstore.Store(path) as store:
        assert store.execute("XINFO", "STREAM", "a") == before
        assert store.execute("KEYS", "*") == [b"a"]
    assert _leftovers(path) == []


def test_failed_task_aborts_leaving_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    path = tmp_path / "s"

    def boom(v: str) -> str:
        if v == "bad":
            raise RuntimeError("task failure on purpose")
        return v

    rows = [("s", None, str(i)) for i in range(20)] + [("s", None, "bad")]
    df = spark.createDataFrame(rows, "stream string, id string, v string").repartition(2)
    df = df.select(
        "stream",
        "id",
        F.create_map(F.lit("v"), F.udf(boom, StringType(), useArrow=False)("v")).alias("fields"),
    )
    with pytest.raises(Exception, match="task failure on purpose"):
        _save(df, path)
    if path.exists():
        with rstore.Store(path) as store:
            assert store.execute("KEYS", "*") == []
    assert _leftovers(path) == []


def test_null_value_is_refused_naming_the_row(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "s"
    rows = [("s", None, {"k": "v"}), ("s", None, {"k": None})]
    with pytest.raises(Exception, match=r"rstore: partition 0, row 1: a value in `fields` is null"):
        _save(spark.createDataFrame(rows, MAP_SCHEMA).coalesce(1), path)
    assert _leftovers(path) == []


def test_rdb_output_loads_in_valkey_server(spark: Any, tmp_path: Path) -> None:
    valkey_server = pytest.importorskip("valkey_server")
    binary = valkey_server.find_server_binary("valkey")
    if binary is None:
        pytest.skip("valkey-server is not on PATH")
    out = tmp_path / "rdb"
    rows = [("a", f"{i}-1", {"i": str(i), "v": "x" * i}) for i in range(1, 30)]
    rows += [("b", None, {"k": "auto"}), ("b", None, {"k": "auto2"})]
    df = spark.createDataFrame(rows, MAP_SCHEMA).repartition(2, "stream")
    _save(df, out, output="rdb")
    parts = sorted(p.name for p in out.iterdir())
    assert parts and all(p.startswith("part-") and p.endswith(".rdb") for p in parts)
    with rstore.Store(tmp_path / "restored") as restored:
        for p in parts:
            restored.restore_file(out / p)
        expected_a = restored.execute("XRANGE", "a", "-", "+")
        assert len(expected_a) == 29 and restored.xlen("b") == 2
        for p in parts:
            with valkey_server.ValkeyServer(binary, rdb_file=str(out / p)) as server:
                keys = sorted(server.call(b"KEYS", b"*"))
                for key in keys:
                    assert server.call(b"XRANGE", key, b"-", b"+") == restored.execute(
                        "XRANGE", key, "-", "+"
                    )
                    assert server.call(b"XLEN", key) == restored.xlen(key)
    with pytest.raises(Exception, match="already holds RDB parts"):
        _save(df, out, output="rdb")
    # Redis 7.0 reads RDB version 10: option("rdbVersion", "10").
    redis_binary = valkey_server.find_server_binary("redis")
    if redis_binary is not None:
        out10 = tmp_path / "rdb10"
        _save(df.coalesce(1), out10, output="rdb", rdbVersion="10")
        (part,) = out10.iterdir()
        with valkey_server.ValkeyServer(redis_binary, rdb_file=str(part)) as server:
            assert server.call(b"XRANGE", b"a", b"-", b"+") == expected_a
            assert server.call(b"XLEN", b"b") == 2


def test_streaming_sink_applies_a_replayed_batch_once(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    path = tmp_path / "s"
    checkpoint = tmp_path / "ck"
    schema = "stream string, id string, fields map<string,string>"

    def run() -> None:
        q = (
            spark.readStream.schema(schema)
            .json(str(src))
            .writeStream.format("rstore")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start(str(path))
        )
        q.awaitTermination(120)
        assert q.exception() is None

    (src / "1.json").write_text(
        '{"stream": "s", "fields": {"n": "1"}}\n{"stream": "s", "fields": {"n": "2"}}\n'
    )
    run()
    (src / "2.json").write_text('{"stream": "s", "fields": {"n": "3"}}\n')
    run()
    with rstore.Store(path) as store:
        assert [f for _, f in _entries(store, "s")] == [[b"n", b"1"], [b"n", b"2"], [b"n", b"3"]]
        names = [k for k in os.listdir(checkpoint / "commits") if k.isdigit()]
        last = max(map(int, names))
    # Spark forgets that the last batch was committed (as after a crash between the sink's
    # commit and its own commit log): it runs the batch again; the sink must skip it.
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    run()
    with rstore.Store(path) as store:
        assert [f for _, f in _entries(store, "s")] == [[b"n", b"1"], [b"n", b"2"], [b"n", b"3"]]
        query_id = json.loads((checkpoint / "metadata").read_text())["id"]
        assert store.last_batch(f"spark:{query_id}") == last
    assert _leftovers(path) == ["ck", "src"]
