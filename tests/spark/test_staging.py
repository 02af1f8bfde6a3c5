"""Staging (no Spark session): Spark's batches checked and normalised, staged files read back
as the entries Store.append_entries takes, in order, batch by batch."""

from __future__ import annotations

from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

from rstore.spark.staging import StagedEntries, check_columns, stage  # noqa: E402

MAP = pa.map_(pa.string(), pa.string())
PAIRS = pa.list_(pa.struct([("field", pa.string()), ("value", pa.binary())]))


def _batch(fields: object, typ: object, ids: object = None) -> object:
    n = len(fields)  # type: ignore[arg-type]
    return pa.record_batch(
        [pa.array(["s"] * n), pa.array(ids or [None] * n, pa.string()), pa.array(fields, typ)],
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


def _staged_rows(batches: list[object], tmp_path: Path, layout: object = LAYOUT) -> list[object]:
    path = str(tmp_path / "stage" / "part-0.arrow")
    n = stage(iter(batches), layout, path, "partition 0")  # type: ignore[arg-type]
    files = [path] if n else []
    return list(StagedEntries(files))


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
    whole = _batch([{"a": "1"}, {"b": "2", "c": "3"}, {"d": "4"}], MAP, ["1-1", "1-2", "1-3"])
    rows = _staged_rows([whole.slice(1, 2), whole.slice(0, 1)], tmp_path)
    assert rows == [
        (b"s", b"1-2", [b"b", b"2", b"c", b"3"]),
        (b"s", b"1-3", [b"d", b"4"]),
        (b"s", b"1-1", [b"a", b"1"]),
    ]


def test_zero_batches_make_no_file(tmp_path: Path) -> None:
    path = tmp_path / "stage" / "part-0.arrow"
    assert stage(iter([]), LAYOUT, str(path), "partition 0") == 0
    assert not path.exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([{"a": "1"}, None], "row 1: `fields` is null"),
        ([{"a": "1"}, {"b": None}], "row 1: a value in `fields` is null"),
        ([{}, {"b": "1"}], "row 0: `fields` is empty"),
    ],
)
def test_rows_that_cannot_be_entries_are_refused_by_row(
    tmp_path: Path, fields: list[object], message: str
) -> None:
    path = tmp_path / "stage" / "part-3.arrow"
    with pytest.raises(ValueError, match=r"^rstore: partition 3, " + message.replace("(", r"\(")):
        stage(iter([_batch(fields, MAP)]), LAYOUT, str(path), "partition 3")
    assert not path.exists()


def test_staged_entries_are_reiterable_and_name_the_entry_taken(tmp_path: Path) -> None:
    files = []
    for k in range(2):
        path = str(tmp_path / f"part-{k}.arrow")
        batches = [_batch([{"i": f"{k}.{b}.{r}"} for r in range(3)], MAP) for b in range(2)]
        stage(iter(batches), LAYOUT, path, f"partition {k}")
        files.append(path)
    entries = StagedEntries(files)
    first = [fv[1] for _, _, fv in entries]
    assert first == [f"{k}.{b}.{r}".encode() for k in range(2) for b in range(2) for r in range(3)]
    assert [fv[1] for _, _, fv in entries] == first  # a second pass starts over
    it = iter(entries)
    for _ in range(3 + 3 + 2):  # file 0 (6 rows), then 2 rows of file 1
        next(it)
    assert entries.position() == (1, 1)
