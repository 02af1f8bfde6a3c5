"""The planner and the Arrow builder of the Spark source, without Spark (pyarrow only).

Rows read back through ``read_part`` are compared with ``Store.execute("XRANGE")`` and with
``rstore.read_rdb_entries``, the library's own readers; node boundaries with
``StoreView.node_index``.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import rstore  # noqa: E402
from rstore.spark import plan as planmod  # noqa: E402
from rstore.spark.arrow import columns_to_batch, read_part, read_partition  # noqa: E402
from rstore.spark.options import ReadOptions, read_options  # noqa: E402
from rstore.spark.plan import Part, plan_parts, plan_read  # noqa: E402
from tests.rdb.common import FIXTURES, arg_bytes, fixture_names, load_fixture  # noqa: E402

MS = 1_700_000_000_000


def _arrow_schema(fields: str, values: str, names: str = "string") -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    value_type = StringType() if values == "string" else BinaryType()
    name_type = StringType() if names == "string" else BinaryType()
    if fields == "map":
        fields_type: Any = MapType(name_type, value_type, True)
    else:
        pair = StructType([StructField("field", name_type), StructField("value", value_type)])
        fields_type = ArrayType(pair, True)
    spark_schema = StructType(
        [
            StructField("stream", name_type),
            StructField("id", StringType()),
            StructField("ms", LongType()),
            StructField("seq", LongType()),
            StructField("fields", fields_type),
        ]
    )
    return to_arrow_schema(spark_schema, timezone="UTC")


def _opts(path: Path | str, **options: str) -> ReadOptions:
    """Options as Spark hands them over; lossless (pairs, binary) unless told, as ``_rows``
    reads."""
    return read_options(
        {"path": str(path), "fields": "pairs", "values": "binary", "names": "binary", **options}
    )


def _rows(parts: list[Part], opts: ReadOptions) -> list[tuple[bytes, bytes, list[bytes]]]:
    """(stream, id, flat field/value list) of every row read, partition by partition."""
    schema = _arrow_schema("pairs", "binary", "binary")
    out = []
    for part in parts:
        for batch in read_partition(part, opts, schema):
            for row in batch.to_pylist():
                flat = [x for pair in row["fields"] for x in (pair["field"], pair["value"])]
                out.append((row["stream"], row["id"].encode(), flat))
    return out


def _xrange_rows(store: rstore.Store, streams: list[str], lo: str = "-", hi: str = "+") -> list:
    out = []
    for name in streams:
        for entry_id, flat in store.execute("XRANGE", name, lo, hi):
            out.append((name.encode(), entry_id, list(flat)))
    return out


@pytest.fixture
def store(tmp_path: Path) -> Any:
    """'big': 1000 entries in nodes of 100, some deleted; 'small-1..3': 5 entries each;
    'dups': an entry with a repeated field; 'gone': entries all deleted."""
    s = rstore.Store(tmp_path / "store")
    for i in range(1000):
        s.xadd("big", {"user": str(i % 7), "action": "a" if i % 2 else "b", "n": str(i)},
               id=f"{MS + i}-{i % 3}")  # fmt: skip
    s.xdel("big", f"{MS + 5}-2", f"{MS + 500}-2", f"{MS + 999}-0")
    for k in (1, 2, 3):
        for i in range(5):
            s.xadd(f"small-{k}", {"k": str(k), "i": str(i)}, id=f"{k}-{i + 1}")
    s.execute("XADD", "dups", "7-0", "a", "1", "a", "2", "b", "3")
    s.xadd("gone", {"x": "1"}, id="1-1")
    s.xdel("gone", "1-1")
    yield s
    s.close()


def test_parts_are_large_cut_at_nodes_and_pack_small_streams(store: rstore.Store) -> None:
    opts = _opts(store.path, entriesPerPartition="300")
    parts = plan_read(opts)
    starts = store.view(lambda v: {s.master_id for s in v.node_index(b"big")})
    big = [s for p in parts for s in p.slices if s.stream == b"big"]
    # the big stream is cut into consecutive slices at node boundaries
    assert [s.lo for s in big][1:] and all(s.lo in starts for s in big[1:])
    assert big[0].lo == (0, 0) and big[-1].hi == (MS + 999, 0)
    for a, b in itertools.pairwise(big):
        assert planmod._decrement(b.lo) == a.hi
    # every partition but the last holds at least the asked entries, none far more
    assert all(300 <= p.entries <= 400 for p in parts[:-1])
    # the small streams (and dups) share partitions instead of getting one each
    small = [p for p in parts if any(s.stream.startswith(b"small-") for s in p.slices)]
    assert len(small) == 1
    assert sum(p.entries for p in parts) == 1000 - 3 + 15 + 1  # 'gone' is empty: no slice
    assert not any(s.stream == b"gone" for p in parts for s in p.slices)
    # read back: every row once, equal to XRANGE, in ID order within each stream
    streams = ["big", "dups", "small-1", "small-2", "small-3"]
    assert sorted(_rows(parts, opts)) == sorted(_xrange_rows(store, streams))


def test_num_partitions_and_bounds(store: rstore.Store) -> None:
    opts = _opts(store.path, numPartitions="2", streams="big")
    parts = plan_read(opts)
    assert len(parts) == 2 and {s.stream for p in parts for s in p.slices} == {b"big"}
    lo, hi = f"{MS + 150}-1", f"{MS + 720}"
    opts = _opts(store.path, streams="big,small-2", start=lo, end=hi, entriesPerPartition="200")
    assert _rows(plan_read(opts), opts) == _xrange_rows(store, ["big", "small-2"], lo, hi)
    # times (ISO 8601) name the same IDs as XRANGE's ms bounds: [MS+100 ms, MS+199 ms]
    opts = _opts(store.path, streams="big", start="2023-11-14T22:13:20.100Z",
                 end="2023-11-14T22:13:20.199Z")  # fmt: skip
    got = _rows(plan_read(opts), opts)
    assert got == _xrange_rows(store, ["big"], f"{MS + 100}", f"{MS + 199}") and len(got) == 100
    # a glob, and exclusive bounds
    opts = _opts(store.path, streams="small-*", start="(1-1", end="(3-5")
    want = _xrange_rows(store, ["small-1", "small-2", "small-3"], "(1-1", "(3-5")
    assert _rows(plan_read(opts), opts) == want


def test_empty_reads_plan_nothing(store: rstore.Store) -> None:
    for options in ({"streams": "gone"}, {"streams": "nope"}, {"start": f"{MS + 5000}"},
                    {"start": "9", "end": "8"}):  # fmt: skip
        opts = _opts(store.path, **options)
        parts = plan_read(opts)
        assert _rows(parts, opts) == []
    assert list(read_partition(None, _opts(store.path), _arrow_schema("map", "string"))) == []


def test_plan_is_fixed_at_planning(store: rstore.Store) -> None:
    opts = _opts(store.path, streams="big,small-1", entriesPerPartition="250")
    parts = plan_read(opts)
    before = _xrange_rows(store, ["big", "small-1"])
    for i in range(300):  # appended after planning, to the last node and new ones
        store.xadd("big", {"late": str(i)}, id=f"{MS + 5000 + i}-0")
    store.xadd("small-1", {"late": "1"}, id="9-9")
    assert sorted(_rows(parts, opts)) == sorted(before)


def _big_dump(store: rstore.Store, tmp_path: Path) -> str:
    path = str(tmp_path / "dump.rdb")
    store.save(path, compress=False)
    return path


def test_big_rdb_is_split_at_nodes_and_read_back_equal(
    store: rstore.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big_dump(store, tmp_path)
    monkeypatch.setattr(planmod, "SPLIT_FILE_BYTES", 0)  # every file is "big"
    opts = _opts(path, entriesPerPartition="300")
    parts = plan_read(opts)
    assert len(parts) >= 3 and not any(p.whole for p in parts)
    assert all(s.offset is not None and s.count > 0 for p in parts for s in p.slices)
    streams = ["big", "dups", "small-1", "small-2", "small-3"]
    assert sorted(_rows(parts, opts)) == sorted(_xrange_rows(store, streams))
    # bounds inside a split file
    lo, hi = f"{MS + 333}", f"({MS + 777}-1"
    opts = _opts(path, streams="big", start=lo, end=hi, entriesPerPartition="100")
    assert _rows(plan_read(opts), opts) == _xrange_rows(store, ["big"], lo, hi)
    # small files are read whole, with the same rows
    monkeypatch.setattr(planmod, "SPLIT_FILE_BYTES", 1 << 40)
    opts = _opts(path)
    parts = plan_read(opts)
    assert [p.whole for p in parts] == [True]
    assert sorted(_rows(parts, opts)) == sorted(_xrange_rows(store, streams))


@pytest.mark.parametrize("split", [False, True])
def test_server_dumps_read_as_the_server_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    """Every fixture dump (Redis 7.0 and Valkey 8.0, LZF or not), every stream of every db:
    the rows equal the XRANGE - + the server answered before it saved the file."""
    if split:
        monkeypatch.setattr(planmod, "SPLIT_FILE_BYTES", 0)
    for name in fixture_names():
        fixture = load_fixture(name)
        for db, keys in fixture["answers"].items():
            opts = _opts(FIXTURES / f"{name}.rdb", db=db, entriesPerPartition="40")
            got: dict[bytes, list] = {}
            for stream, entry_id, flat in _rows(plan_parts(opts), opts):
                got.setdefault(stream, []).append([entry_id, flat])
            want = {}
            for key in keys:
                if key["type"] != "stream":
                    continue
                (reply,) = [c["reply"] for c in key["commands"] if c["args"][0] == "XRANGE"]
                if reply:
                    want[arg_bytes(key["key"])] = [
                        [arg_bytes(i), [arg_bytes(x) for x in flat]] for i, flat in reply
                    ]
            assert got == want, (name, db)


def test_columns_to_batch_schema_and_fields(store: rstore.Store) -> None:
    nodes = store.view(lambda v: list(v.nodes(b"dups")))
    for fields in ("map", "pairs"):
        for values in ("string", "binary"):
            schema = _arrow_schema(fields, values)
            (cols,) = rstore.iter_columns(nodes, dedupe=fields == "map")
            batch = columns_to_batch(cols, b"dups", schema)
            assert batch.schema == schema  # exactly: types and nullability, as Spark checks
            (row,) = batch.to_pylist()
            v = (lambda x: x) if values == "string" else (lambda x: x.encode())
            assert (row["stream"], row["id"], row["ms"], row["seq"]) == ("dups", "7-0", 7, 0)
            if fields == "map":  # a map keeps a field's last value
                assert row["fields"] == [("a", v("2")), ("b", v("3"))]
            else:  # pairs keep every pair, in order
                assert row["fields"] == [
                    {"field": f, "value": v(x)} for f, x in [("a", "1"), ("a", "2"), ("b", "3")]
                ]


def test_binary_values_and_the_error_for_text(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "bin") as s:
        s.xadd("b", {"raw": b"\xff\x00\xfe", "ok": "text"}, id="1-1")
        nodes = s.view(lambda v: list(v.nodes(b"b")))
    (cols,) = rstore.iter_columns(nodes)
    batch = columns_to_batch(cols, b"b", _arrow_schema("map", "binary"))
    assert batch.to_pylist()[0]["fields"] == [("raw", b"\xff\x00\xfe"), ("ok", b"text")]
    with pytest.raises(ValueError, match=r"not UTF-8 text; read it with option values=binary"):
        columns_to_batch(cols, b"b", _arrow_schema("map", "string"))
    with rstore.Store(tmp_path / "bin") as s:
        s.xadd("b", {b"\xfename": "v"}, id="1-2")
        nodes = s.view(lambda v: list(v.nodes(b"b", (1, 2))))
    (cols,) = rstore.iter_columns(nodes, (1, 2))
    with pytest.raises(ValueError, match=r"field name that is not UTF-8 text; .* names=binary"):
        columns_to_batch(cols, b"b", _arrow_schema("map", "binary"))
    batch = columns_to_batch(cols, b"b", _arrow_schema("pairs", "string", "binary"))
    assert batch.to_pylist()[0]["fields"] == [{"field": b"\xfename", "value": "v"}]


def test_a_store_is_read_on_its_host(store: rstore.Store) -> None:
    opts = _opts(store.path)
    (part,) = plan_read(opts)
    moved = Part(part.kind, part.path, part.slices, entries=part.entries, host="elsewhere")
    with pytest.raises(RuntimeError, match="planned on host elsewhere"):
        list(read_partition(moved, opts, _arrow_schema("map", "string")))
    assert sum(b.num_rows for b in read_part(part, opts, _arrow_schema("map", "string"))) > 0


def test_a_directory_and_a_glob_of_dumps(store: rstore.Store, tmp_path: Path) -> None:
    d = tmp_path / "dumps"
    d.mkdir()
    store.save(str(d / "a.rdb"))
    shutil.copy(FIXTURES / "values-valkey-lzf.rdb", d / "b.rdb")
    (d / "notes.txt").write_text("not a dump")
    for path in (d, d / "*.rdb"):
        opts = _opts(path)
        assert opts.files == (str(d / "a.rdb"), str(d / "b.rdb"))
        assert [p.path for p in plan_read(opts)] == list(opts.files)
    with pytest.raises(ValueError, match="no rstore store, RDB file"):
        _opts(tmp_path / "nothing-*.rdb")
