"""Staging (no Spark session): Spark's batches checked and normalised, rows with explicit IDs
sorted (spilled as runs when large), staged files read back as the entries Store.append_entries
takes -- explicit IDs merged in ID order per stream, then the rows without IDs in order -- and a
commit of tasks' files, naming the refused row."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

import rstore  # noqa: E402
from rstore.spark.runs import StagedEntries  # noqa: E402
from rstore.spark.staging import check_columns, stage  # noqa: E402

MAP = pa.map_(pa.string(), pa.string())
PAIRS = pa.list_(pa.struct([("field", pa.string()), ("value", pa.binary())]))


def _batch(fields: object, typ: object, ids: object = None, streams: object = None) -> object:
    n = len(fields)  # type: ignore[arg-type]
    return pa.record_batch(
        [
            pa.array(streams or ["s"] * n, pa.string()),
            pa.array(ids or [None] * n, pa.string()),
            pa.array(fields, typ),
        ],
        names=["stream", "id", "fields"],
    )


LAYOUT = check_columns([("stream", "string"), ("id", "string"), ("fields", "map<string,string>")])


def test_check_columns_accepts_the_documented_shapes_only() -> None:
    ok = [
        [("stream", "string"), ("fields", "map<string,string>")],
        [("id", "string"), ("fields", "map<string,binary>"), ("stream", "binary")],
        [("stream", "string"), ("fields", "array<struct<field:string,value:binary>>")],
        [("stream", "string"), ("id", "string"), ("ms", "bigint"), ("seq", "bigint"),
         ("fields", "map<string,string>")],
    ]  # fmt: skip
    for cols in ok:
        layout = check_columns(cols)
        names = [n for n, _ in cols]
        assert layout.stream == names.index("stream") and layout.fields == names.index("fields")
    m = ("fields", "map<string,string>")
    bad = {
        "without a `fields` column": [("stream", "string")],
        "`fields` of type map<string,int>": [("stream", "string"), ("fields", "map<string,int>")],
        "`id` of type bigint": [("stream", "string"), ("id", "bigint"), m],
        "the column(s) extra": [("stream", "string"), m, ("extra", "int")],
    }
    for why, cols in bad.items():
        with pytest.raises(ValueError, match=r"^rstore: cannot write ") as refused:
            check_columns(cols)
        assert why in str(refused.value) and "\n" not in str(refused.value)


def _entries(files: list[object]) -> StagedEntries:
    """The entries of tasks' ``StagedFiles`` (the first is partition 0, and so on)."""
    return StagedEntries(
        [(p, f.by_id) for p, f in enumerate(files) if f.by_id],  # type: ignore[attr-defined]
        [(p, f.in_order) for p, f in enumerate(files) if f.in_order],  # type: ignore[attr-defined]
    )


def _staged_rows(batches: list[object], tmp_path: Path, layout: object = LAYOUT) -> list[object]:
    path = str(tmp_path / "stage" / "part-0")
    files = stage(iter(batches), layout, path, "partition 0")  # type: ignore[arg-type]
    return list(_entries([files]))


def test_map_and_pairs_become_flat_field_value_lists(tmp_path: Path) -> None:
    maps = _batch([{"a": "1", "b": "2"}, {"c": "3"}], MAP, ["1-1", "*"])
    assert _staged_rows([maps], tmp_path) == [
        (b"s", b"1-1", [b"a", b"1", b"b", b"2"]),
        (b"s", b"*", [b"c", b"3"]),
    ]
    pairs_layout = check_columns(
        [
            ("stream", "string"),
            ("id", "string"),
            ("fields", "array<struct<field:string,value:binary>>"),
        ]
    )
    pairs = _batch([[("f", b"\xff"), ("f", b"dup")], [("g", b"")]], PAIRS)
    assert _staged_rows([pairs], tmp_path / "p", pairs_layout) == [
        (b"s", None, [b"f", b"\xff", b"f", b"dup"]),
        (b"s", None, [b"g", b""]),
    ]


def test_sliced_batches_keep_their_own_rows(tmp_path: Path) -> None:
    whole = _batch([{"a": "1"}, {"b": "2", "c": "3"}, {"d": "4"}], MAP)
    rows = _staged_rows([whole.slice(1, 2), whole.slice(0, 1)], tmp_path)
    assert rows == [
        (b"s", None, [b"b", b"2", b"c", b"3"]),
        (b"s", None, [b"d", b"4"]),
        (b"s", None, [b"a", b"1"]),
    ]


def test_zero_batches_make_no_file(tmp_path: Path) -> None:
    files = stage(iter([]), LAYOUT, str(tmp_path / "stage" / "part-0"), "partition 0")
    assert files == (0, None, None)
    assert list((tmp_path / "stage").iterdir()) == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([{"a": "1"}, None], "`fields` is null"),
        ([{"a": "1"}, {"b": None}], "a value in `fields` is null"),
        ([{"b": "1"}, {}], "`fields` is empty (XADD needs a pair)"),
    ],
)
def test_rows_that_cannot_be_entries_are_refused_by_row(
    tmp_path: Path, fields: list[object], message: str
) -> None:
    path = tmp_path / "stage" / "part-3"
    first = _batch([{"ok": "1"}] * 5, MAP, ["1-1"] * 5)
    # The second row of the second batch: row 6 of the partition.
    with pytest.raises(ValueError) as refused:
        stage(iter([first, _batch(fields, MAP)]), LAYOUT, str(path), "partition 3")
    assert str(refused.value) == f"rstore: partition 3, row 6: {message}"
    assert list((tmp_path / "stage").iterdir()) == []  # nothing left behind


def test_staged_entries_are_reiterable_and_name_the_entry_taken(tmp_path: Path) -> None:
    files = []
    for k in range(2):
        batches = [_batch([{"i": f"{k}.{b}.{r}"} for r in range(3)], MAP) for b in range(2)]
        files.append(stage(iter(batches), LAYOUT, str(tmp_path / f"part-{k}"), f"partition {k}"))
    entries = _entries(files)
    first = [fv[1] for _, _, fv in entries]
    assert first == [f"{k}.{b}.{r}".encode() for k in range(2) for b in range(2) for r in range(3)]
    assert [fv[1] for _, _, fv in entries] == first  # a second pass starts over
    it = iter(entries)
    for _ in range(3 + 3 + 2):  # partition 0 (6 rows), then 2 rows of partition 1
        next(it)
    assert entries.position() == (1, 1)


def _task(tmp_path: Path, partition: int, rows: list[tuple[str, str | None]], **kw: int) -> object:
    """Stage ``(stream, id)`` rows as a task of ``partition`` would, with fields naming the
    row's partition and place in it."""
    streams, ids = [s for s, _ in rows], [i for _, i in rows]
    fields = [{"at": f"{partition}.{r}"} for r in range(len(rows))]
    batches = [
        _batch(fields[k : k + 50], MAP, ids[k : k + 50], streams[k : k + 50])
        for k in range(0, len(rows), 50)
    ]
    path = str(tmp_path / "stage" / f"part-{partition}")
    return stage(iter(batches), LAYOUT, path, f"partition {partition}", **kw)


def test_explicit_ids_are_merged_in_id_order_then_rows_without_ids_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rstore.spark import staging

    merged: list[int] = []  # the number of runs each task merged

    def merge(runs: list[tuple[int, str]]) -> object:
        merged.append(len(runs))
        return runs_merge(runs)

    runs_merge = staging.merge
    monkeypatch.setattr(staging, "merge", merge)
    rng = random.Random(5)
    ids = [f"{ms}-{seq}" for ms in range(1, 201) for seq in (0, 7)]
    rng.shuffle(ids)
    # Three tasks: stream "a" spread over all of them out of order (the sort of task 0 spills
    # runs, its buffer being tiny), XADD's other ID forms in stream b, a name that is not
    # ASCII (sorted as bytes, by Arrow and by the merge alike), automatic IDs among them.
    tasks = [
        [("a", i) for i in ids[:200]] + [("b", "9-*"), ("é", "3"), ("c", None), ("b", "9")],
        [("c", "*"), *[("a", i) for i in ids[200:350]], ("b", "9-3"), ("c", None), ("é", "2")],
        [("a", i) for i in ids[350:]] + [("b", "10-*"), ("b", "2"), ("é", "1")],
    ]
    files = [
        _task(tmp_path, p, rows, sort_buffer=2000 if p == 0 else 1 << 20)
        for p, rows in enumerate(tasks)
    ]
    assert [f.rows for f in files] == [len(t) for t in tasks]
    assert merged == [5]  # task 0 spilled a run per batch of 50 rows; the others sorted in memory
    left = sorted(p.name for p in (tmp_path / "stage").iterdir())
    assert left == [
        "part-0.arrow",
        "part-0.ids.arrow",
        "part-1.arrow",
        "part-1.ids.arrow",
        "part-2.ids.arrow",
    ]  # the runs were merged and removed
    entries = _entries(files)
    got = [(s, i, fv[1]) for s, i, fv in entries]
    assert [(s, i, fv[1]) for s, i, fv in entries] == got  # a second pass: the same merge
    # Each stream's explicit IDs in ID order; "9-*" after 9-0 and 9-3 (XADD picks 9-4)
    by_stream = {}
    for s, i, at in got:
        by_stream.setdefault(s, []).append((i, at))
    assert [i for i, _ in by_stream[b"a"]] == [
        f"{ms}-{seq}".encode() for ms in range(1, 201) for seq in (0, 7)
    ]
    assert by_stream[b"b"] == [
        (b"2", b"2.51"),
        (b"9", b"0.203"),
        (b"9-3", b"1.151"),
        (b"9-*", b"0.200"),
        (b"10-*", b"2.50"),
    ]
    # ... then the rows without IDs, by partition and row, after every explicit one.
    assert got[-3:] == [(b"c", None, b"0.202"), (b"c", b"*", b"1.0"), (b"c", None, b"1.152")]
    assert by_stream["é".encode()] == [(b"1", b"2.52"), (b"2", b"1.153"), (b"3", b"0.201")]
    with rstore.Store(tmp_path / "store") as store:
        store.append_entries(_entries(files))
        assert store.xlen("a") == 400 and store.xlen("c") == 3
        assert [i for i, _ in store.execute("XRANGE", "b", "-", "+")] == [
            b"2-0",
            b"9-0",
            b"9-3",
            b"9-4",
            b"10-0",
        ]


def test_a_commit_names_the_row_refused_whatever_its_place(tmp_path: Path) -> None:
    from rstore.spark.tasks import Staged
    from rstore.spark.writer import commit_staged

    store_path = tmp_path / "store"
    with rstore.Store(store_path) as store:
        store.execute("XADD", "a", "100-0", "k", "v")
        before = store.execute("XINFO", "STREAM", "a")

    def commit(tasks: list[list[tuple[str, str | None]]]) -> str:
        messages = []
        for p, rows in enumerate(tasks):
            f = _task(tmp_path / str(len(tasks)) / str(p), p, rows)
            messages.append(Staged(p, 0, f.in_order, f.rows, by_id=f.by_id))
        with pytest.raises(ValueError) as refused:
            commit_staged(str(store_path), messages)
        return str(refused.value)

    top = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
    # An ID below the stream's top, in the middle of the last task.
    below = [
        [("a", f"{ms}-0") for ms in range(101, 150)],
        [("a", f"{ms}-0") for ms in range(150, 200)],
    ]
    below[1].insert(7, ("a", "50-0"))
    assert commit(below) == (
        f"rstore: nothing was written to {store_path}: the row 7 of partition 1 was refused: {top}"
    )
    # Two rows with the same ID in two tasks: the later in the job is refused.
    twice = [[("a", "300-0"), ("a", "200-0")], [("b", "1-1"), ("a", "200-0")]]
    assert commit(twice).endswith(f"the row 1 of partition 1 was refused: {top}")
    # An ID XADD cannot parse: its own line.
    bad = [[("a", "200-0")], [("b", None), ("a", "x-1")]]
    assert commit(bad).endswith(
        "the row 1 of partition 1 was refused: ERR Invalid stream ID specified as stream "
        "command argument"
    )
    with rstore.Store(store_path) as store:
        assert store.execute("XINFO", "STREAM", "a") == before
        assert store.execute("KEYS", "*") == [b"a"]
