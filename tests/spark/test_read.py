"""Batch reads through Spark: ``spark.read.format("rstore")`` and ``read_df``.

Rows are compared exactly with ``Store.xrange`` / ``Store.execute("XRANGE")`` (stores and
rstore's own dumps) and with the replies valkey-server and redis-server gave before saving the
fixture dumps.  Few, small tests: every Spark query costs about a second on 2 cores.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import rstore
from rstore.spark.options import read_options
from rstore.spark.reader import RStorePushdownReader, RStoreReader, make_reader, narrow
from tests.rdb.common import FIXTURES, arg_bytes, load_fixture

MS = 1_700_000_000_000


def _load(spark: Any, path: Any, **options: Any) -> Any:
    reader = spark.read.format("rstore")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(path))


def _maps(store: rstore.Store, names: list[str], lo: str = "-", hi: str = "+") -> list[tuple]:
    """(stream, id, ms, seq, {field: value}) as Store.xrange gives them (last value wins)."""
    out = []
    for name in names:
        for entry_id, fields in store.xrange(name, lo, hi):
            ms, seq = entry_id.split(b"-")
            out.append((name, entry_id.decode(), int(ms), int(seq),
                        {k.decode(): v.decode() for k, v in fields.items()}))  # fmt: skip
    return out


def _pairs(store: rstore.Store, names: list[str]) -> list[tuple]:
    """(stream, id, [(field, value), ...]) as XRANGE replies them (every pair, in order)."""
    out = []
    for name in names:
        for entry_id, flat in store.execute("XRANGE", name, "-", "+"):
            pairs = [(f.decode(), v.decode()) for f, v in zip(flat[0::2], flat[1::2], strict=True)]
            out.append((name, entry_id.decode(), pairs))
    return out


def _rows_map(df: Any) -> list[tuple]:
    return sorted((r.stream, r.id, r.ms, r.seq, dict(r.fields)) for r in df.collect())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """'events': 600 entries of the usual three fields in 6 nodes, one deleted, one trimmed
    away; 'dups': a field given twice; 'gone': every entry deleted."""
    s = rstore.Store(tmp_path_factory.mktemp("read") / "store")
    for i in range(600):
        s.xadd("events", {"user": f"u{i % 7}", "action": ("click", "view", "buy")[i % 3],
                          "page": f"/p/{i}"}, id=f"{MS + i}-{i % 2}")  # fmt: skip
    s.xdel("events", f"{MS + 300}-0")
    s.xtrim("events", minid=f"{MS + 10}")
    s.execute("XADD", "dups", "7-0", "a", "1", "a", "2", "b", "3")
    s.xadd("gone", {"x": "1"}, id="1-1")
    s.xdel("gone", "1-1")
    yield s
    s.close()


@pytest.mark.spark
def test_store_rows_equal_xrange(spark: Any, store: rstore.Store) -> None:
    df = _load(spark, store.path, entriesPerPartition=150)
    assert df.schema.simpleString() == (
        "struct<stream:string,id:string,ms:bigint,seq:bigint,fields:map<string,string>>"
    )
    assert df.rdd.getNumPartitions() >= 4  # a few partitions, cut at node boundaries
    assert _rows_map(df) == sorted(_maps(store, ["dups", "events"]))
    # pairs: every pair in stored order, the duplicate field kept
    df = _load(spark, store.path, fields="pairs", streams="dups,gone")
    got = [(r.stream, r.id, [(p.field, p.value) for p in r.fields]) for r in df.collect()]
    assert got == _pairs(store, ["dups"]) == [("dups", "7-0", [("a", "1"), ("a", "2"), ("b", "3")])]
    # bounds: IDs (exclusive too) and ISO-8601 times, as XRANGE reads them
    df = _load(spark, store.path, streams="ev*", start=f"({MS + 100}-0",
               end="2023-11-14T22:13:20.450Z")  # fmt: skip
    assert _rows_map(df) == _maps(store, ["events"], f"({MS + 100}-0", f"{MS + 450}")
    # empty: a stream with no entries, a name not in the store, a range past the end
    for options in ({"streams": "gone"}, {"streams": "nope"}, {"start": f"{MS + 10_000}"}):
        assert _load(spark, store.path, **options).collect() == []


@pytest.mark.spark
def test_dumps_equal_the_servers_answers(spark: Any, store: rstore.Store, tmp_path: Path) -> None:
    # rstore's own dump of the store
    dump = tmp_path / "store.rdb"
    store.save(str(dump))
    assert _rows_map(_load(spark, dump)) == sorted(_maps(store, ["dups", "events"]))
    # valkey-server 8.0 and redis-server 7.0 dumps (LZF), a db other than 0, binary values
    for name, db in (
        ("queue-valkey-lzf", "0"),
        ("values-redis-lzf", "0"),
        ("queue-redis-plain", "1"),
    ):
        df = _load(spark, FIXTURES / f"{name}.rdb", db=db, fields="pairs", values="binary",
                   names="binary")  # fmt: skip
        got: dict[bytes, list] = {}
        for r in sorted(df.collect(), key=lambda r: (r.stream, r.ms, r.seq)):
            flat = [bytes(x) for p in r.fields for x in (p.field, p.value)]
            got.setdefault(bytes(r.stream), []).append([r.id.encode(), flat])
        want = {}
        for key in load_fixture(name)["answers"][db]:
            replies = [c["reply"] for c in key.get("commands", []) if c["args"][0] == "XRANGE"]
            if replies and replies[0]:
                want[arg_bytes(key["key"])] = [
                    [arg_bytes(i), [arg_bytes(x) for x in flat]] for i, flat in replies[0]
                ]
        assert got == want and want, name


@pytest.mark.spark
def test_values_not_utf8_need_values_binary(spark: Any, tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "bin") as s:
        s.xadd("b", {"raw": b"\xff\x00\xfe", "ok": "text"}, id="1-1")
        path = s.path
    (row,) = _load(spark, path, values="binary").collect()
    assert dict(row.fields) == {"raw": b"\xff\x00\xfe", "ok": b"text"}
    with pytest.raises(Exception, match=r"not UTF-8 text; read it with option values=binary"):
        _load(spark, path).collect()


@pytest.mark.spark
def test_a_stream_written_while_read_gives_the_planned_snapshot(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "live"
    with rstore.Store(path) as s:
        for i in range(2000):
            s.xadd("live", {"n": str(i)}, id=f"{i + 1}-0")
    stop = threading.Event()
    written = [2000]

    def write() -> None:
        with rstore.Store(path) as w:
            while not stop.is_set():
                i = written[0]
                w.xadd("live", {"n": str(i)}, id=f"{i + 1}-0")
                written[0] = i + 1
                stop.wait(0.001)  # leave the GIL to Spark's driver thread now and then

    writer = threading.Thread(target=write)
    writer.start()
    try:
        rows = _load(spark, path, entriesPerPartition=400).collect()
    finally:
        stop.set()
        writer.join()
    ids = sorted(r.ms for r in rows)
    # a prefix of the stream, read from one snapshot: no gap, no entry twice, no torn entry
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 2000
    assert all(r.fields == {"n": str(r.ms - 1)} for r in rows)
    assert written[0] > 2000  # the writer did write while Spark read


@pytest.mark.spark
def test_read_df_gives_the_data_source_rows(spark: Any, store: rstore.Store) -> None:
    from rstore.spark import read_df

    df = read_df(spark, store.path, entriesPerPartition=200, streams="events,dups")
    assert df.schema == _load(spark, store.path).schema
    assert df.rdd.getNumPartitions() == 4  # one per planned partition
    assert _rows_map(df) == _rows_map(_load(spark, store.path, entriesPerPartition=200))
    pairs = read_df(spark, store.path, fields="pairs", streams="dups").collect()
    assert [(p.field, p.value) for p in pairs[0].fields] == [("a", "1"), ("a", "2"), ("b", "3")]
    assert read_df(spark, store.path, streams="nope").collect() == []


@pytest.mark.spark
def test_filters_work_with_pushdown_off_and_narrow_the_plan_when_on(
    spark: Any, store: rstore.Store
) -> None:
    conf = "spark.sql.python.filterPushdown.enabled"

    def query() -> Any:
        return _load(spark, store.path).filter(
            f"stream = 'events' and ms >= {MS + 590} and ms < {MS + 595}"
        )

    want = _maps(store, ["events"], f"{MS + 590}", f"{MS + 594}")
    assert spark.conf.get(conf) == "false"  # Spark's default: the query must not break
    assert _rows_map(query()) == want
    spark.conf.set(conf, "true")
    try:
        df = query()
        assert _rows_map(df) == want
        plan = df._jdf.queryExecution().executedPlan().toString()
        # the filters went to the reader (it narrowed the plan), so Spark no longer applies them
        assert "BatchScan rstore" in plan and "ms#" in plan and f"{MS + 590}" not in plan
        # a string comparison on id is not an ID range: Spark applies it, the result stays right
        df = _load(spark, store.path, streams="events").filter("id > '1700000000598'")
        assert sorted(r.id for r in df.collect()) == [f"{MS + 598}-0", f"{MS + 599}-1"]
    finally:
        spark.conf.set(conf, "false")


def test_narrow_applies_exactly_what_it_claims(tmp_path: Path) -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, LessThanOrEqual

    with rstore.Store(tmp_path / "s") as s:
        s.xadd("a", {"x": "1"}, id="5-5")
        path = s.path
    opts = read_options({"path": path, "streams": "a*"})
    narrowed, rest = narrow(opts, [
        EqualTo(("stream",), "ab"), In(("stream",), ("ab", "b")), GreaterThan(("ms",), 10),
        LessThanOrEqual(("ms",), 20), EqualTo(("seq",), 1), GreaterThan(("id",), "3-0"),
    ])  # fmt: skip
    assert narrowed.streams == (b"ab",)  # 'b' does not match the streams option a*
    assert (narrowed.start, narrowed.end) == ((11, 0), (20, 2**64 - 1))
    assert rest == [EqualTo(("seq",), 1), GreaterThan(("id",), "3-0")]
    narrowed, rest = narrow(opts, [In(("id",), ("12-3", "9-1", "007-1")), EqualTo(("id",), "x")])
    assert (narrowed.start, narrowed.end) == ((1, 0), (0, 0))  # 'x' is no id: nothing
    narrowed, rest = narrow(opts, [In(("id",), ("12-3", "9-1", "007-1"))])
    assert (narrowed.start, narrowed.end) == ((9, 1), (12, 3)) and len(rest) == 1


def test_the_pushdown_reader_is_given_only_to_spark_pushdown_worker(tmp_path: Path) -> None:
    from pyspark.sql.types import StructType

    with rstore.Store(tmp_path / "s") as s:
        path = s.path
    assert type(make_reader({"path": path}, StructType())) is RStoreReader
    # Spark raises DATA_SOURCE_PUSHDOWN_DISABLED for a reader that defines pushFilters unless
    # pushdown is on: the default reader must not define it
    assert "pushFilters" not in vars(RStoreReader)
    assert "pushFilters" in vars(RStorePushdownReader)
    worker = importlib.import_module("pyspark.sql.worker.data_source_pushdown_filters")
    assert worker.__file__ is not None and worker.__file__.endswith(
        "data_source_pushdown_filters.py"
    )


def test_pyspark_finds_the_default_source_without_registration(tmp_path: Path) -> None:
    """What Spark 4 does on first use of a Python source (``lookup_data_sources``): list the
    top-level modules with ``pkgutil.iter_modules``, import each ``pyspark_*`` one and register
    its ``DefaultSource`` by its name -- here in a fresh interpreter whose path holds the
    project's top level as a regular install's site-packages does.  (An editable install by
    setuptools' import hook is invisible to ``iter_modules``: there, call ``register``.)
    Checked by hand in a fresh SparkSession with the built wheel: ``format("rstore")`` read
    the store without ``register``."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import importlib, pkgutil\n"
        "from pyspark.sql.datasource import DataSource\n"
        "found = {}\n"
        "for info in pkgutil.iter_modules():\n"
        "    if info.name.startswith('pyspark_rstore'):\n"
        "        mod = importlib.import_module(info.name)\n"
        "        if issubclass(mod.DefaultSource, DataSource):\n"
        "            found[mod.DefaultSource.name()] = mod.DefaultSource.__module__\n"
        "print(found)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        check=True, timeout=120,
    )  # fmt: skip
    assert out.stdout.strip() == "{'rstore': 'rstore.spark.source'}"


def test_the_pyspark_floor_is_pyprojects_and_older_versions_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pyproject's ``spark`` extra declares the oldest PySpark the source runs on (4.0 and 4.1
    lack APIs it uses: checked with mypy and tests/spark against each); an older one installed
    by hand gets one clear line, not a failure deep inside a task."""
    import pyspark

    from rstore.spark import RStoreDataSource, register
    from rstore.spark.source import MIN_PYSPARK

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    floor = re.search(r'"pyspark>=([0-9]+)\.([0-9]+),', pyproject)
    assert floor is not None
    assert (int(floor[1]), int(floor[2])) == MIN_PYSPARK
    monkeypatch.setattr(pyspark, "__version__", "4.1.4")
    refused = "rstore: the rstore data source needs PySpark 4.2 or later, not 4.1.4"
    source = RStoreDataSource({"path": str(Path.cwd())})
    for step in (source.schema, lambda: source.writer(None, False), lambda: register(None)):
        with pytest.raises(RuntimeError, match=f"^{re.escape(refused)}"):
            step()
    monkeypatch.setattr(pyspark, "__version__", "4.2.0")
    assert source.schema()  # the floor itself is accepted
