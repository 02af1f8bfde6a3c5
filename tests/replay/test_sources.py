"""The replay sources (rstore.entries_from_store / _rdb / _jsonl / _url, the batch variants and
field_filter) give exactly the entries XRANGE gives -- a store's, an RDB file's as the writing
server answered before saving it (fixtures/rdb), a JSONL file's -- in pages, with selection by
name and glob and inclusive bounds."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

import rstore
from rstore import (
    SelectionError,
    batches_from_store,
    encode_entry,
    entries_from_jsonl,
    entries_from_rdb,
    entries_from_store,
    field_filter,
    read_rdb_entries,
    select_streams,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdb"  # written by real servers
TOP = 2**64 - 1


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.rdb"))


@pytest.fixture
def store(tmp_path: Path) -> rstore.Store:
    s = rstore.Store(str(tmp_path / "s"), node_max_entries=10)
    yield s
    s.close()


def _xrange(store: rstore.Store, key: bytes, start: str = "-", end: str = "+") -> list[object]:
    return [
        (key, tuple(int(p) for p in i.split(b"-")), list(f))
        for i, f in store.execute("XRANGE", key, start, end)
    ]


def _fill(store: rstore.Store) -> None:
    for i in range(1, 96):
        store.execute("XADD", "events:a", f"{i}-{i % 3}", "n", str(i), "n", b"\xff\x00", "x", "")
    store.execute("XDEL", "events:a", "3-0", "4-1", "50-2", "51-0")  # tombstones, node edges
    store.execute("XADD", "events:b", "5-5", "only", "one")
    store.execute("XADD", "other", f"{TOP}-{TOP}", "top", "id")
    store.execute("XADD", "gone", "1-0", "a", "b")
    store.execute("XDEL", "gone", "1-0")  # a stream with no entries left


@pytest.mark.parametrize("page_nodes", [1, 3, 256])
def test_a_store_gives_what_xrange_gives(store: rstore.Store, page_nodes: int) -> None:
    _fill(store)
    got = list(entries_from_store(store, page_nodes=page_nodes))
    want = [e for k in (b"events:a", b"events:b", b"other") for e in _xrange(store, k)]
    assert got == want  # streams in name order; the empty one gives nothing
    middle = list(entries_from_store(store, [b"events:a"], (12, 0), (77, 2), page_nodes=page_nodes))
    assert middle == _xrange(store, b"events:a", "12-0", "77-2")
    assert list(entries_from_store(store, [b"other"], (TOP, TOP))) == _xrange(store, b"other")


def test_pages_stay_small(store: rstore.Store) -> None:
    _fill(store)
    sizes = [c.count for _, c in batches_from_store(store, [b"events:a"], page_nodes=2)]
    assert sum(sizes) == 91 and max(sizes) <= 20  # two nodes of 10 entries at most
    by_bytes = [c.count for _, c in batches_from_store(store, [b"events:a"], page_bytes=1)]
    assert sum(by_bytes) == 91 and max(by_bytes) <= 10  # one node a page


def test_selection_by_names_and_globs(store: rstore.Store) -> None:
    _fill(store)
    streams = {e[0] for e in entries_from_store(store, [b"events:*"])}
    assert streams == {b"events:a", b"events:b"}
    assert {e[0] for e in entries_from_store(store, [b"other", b"events:[b]"])} == {
        b"other",
        b"events:b",
    }
    with pytest.raises(SelectionError, match=r"^no stream 'nope'$"):
        list(entries_from_store(store, [b"events:a", b"nope"]))
    with pytest.raises(SelectionError, match=r"^no stream matches 'x\*'$"):
        list(entries_from_store(store, [b"x*"]))
    assert select_streams([b"b", b"a", b"a"], None) == [b"a", b"b"]
    assert select_streams([b"a*", b"ab"], [b"a\\*"]) == [b"a*"]  # an escaped glob byte


def test_the_end_is_fixed_when_a_stream_starts(store: rstore.Store) -> None:
    """Entries added while a stream is read (between two pages) are not read: a reliable end."""
    for i in range(1, 51):
        store.execute("XADD", "s", f"{i}-0", "n", str(i))
    seen = []
    for entry in entries_from_store(store, [b"s"], page_nodes=1):
        seen.append(entry[1])
        if len(seen) == 5:
            writer = threading.Thread(
                target=lambda: store.execute("XADD", "s", "1000-0", "late", "1")
            )
            writer.start()
            writer.join()
    assert seen == [(i, 0) for i in range(1, 51)]


def test_a_missing_store_stream_in_a_range_gives_nothing(store: rstore.Store) -> None:
    _fill(store)
    assert list(entries_from_store(store, [b"events:a"], (200, 0), (300, 0))) == []
    assert list(entries_from_store(store, [b"events:a"], (9, 0), (8, 0))) == []


# -- RDB files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", fixture_names())
def test_an_rdb_file_gives_what_the_server_answered(name: str) -> None:
    path = str(FIXTURES / f"{name}.rdb")
    for stream in rstore.index_rdb(path):
        want = read_rdb_entries(path, stream.key, db=stream.db)
        assert want is not None
        for page_nodes in (1, 256):
            got = list(entries_from_rdb(path, [stream.key], db=stream.db, page_nodes=page_nodes))
            assert got == [
                (stream.key, tuple(int(p) for p in i.split(b"-")), list(f)) for i, f in want
            ]


def test_an_rdb_range_in_the_middle_of_a_stream_and_selection() -> None:
    path = str(FIXTURES / "queue-valkey-lzf.rdb")
    full = read_rdb_entries(path, b"small-nodes")
    assert full is not None and len(full) > 200  # 250 entries in 50 nodes
    lo, hi = (tuple(int(p) for p in full[i][0].split(b"-")) for i in (37, 181))
    for page_nodes in (1, 4):
        got = list(entries_from_rdb(path, [b"small-nodes"], lo, hi, page_nodes=page_nodes))
        assert [(b"%d-%d" % e[1], e[2]) for e in got] == [(i, list(f)) for i, f in full[37:182]]
    everything = list(entries_from_rdb(path, [b"*"]))
    nonempty = {s.key for s in rstore.index_rdb(path) if s.db == 0 and s.state.length}
    assert {e[0] for e in everything} == nonempty  # database 0 only, empty streams give nothing
    assert [e[0] for e in everything] == sorted(e[0] for e in everything)
    in_db1 = {e[0] for e in entries_from_rdb(path, db=1)}
    assert in_db1 == {s.key for s in rstore.index_rdb(path) if s.db == 1}
    with pytest.raises(SelectionError, match=r"^no stream 'nope' in database 0 of "):
        list(entries_from_rdb(path, [b"nope"]))


# -- JSONL --------------------------------------------------------------------------------------


def test_jsonl_gives_back_what_was_exported(store: rstore.Store) -> None:
    _fill(store)
    entries = list(entries_from_store(store))
    data = b"".join(encode_entry(*e) + b"\n" for e in entries)
    assert list(entries_from_jsonl(io.BytesIO(data))) == entries
    assert list(entries_from_jsonl(io.BytesIO(data), [b"events:*"], (10, 0), (20, TOP))) == [
        e for e in entries if e[0].startswith(b"events:") and (10, 0) <= e[1] <= (20, TOP)
    ]
    assert list(entries_from_jsonl(io.BytesIO(data), [b"other"])) == _xrange(store, b"other")
    broken = io.BytesIO(data + b"{oops\n")
    with pytest.raises(rstore.EnvelopeError, match=r"^dump\.jsonl line 94: not JSON"):
        list(entries_from_jsonl(broken, name="dump.jsonl"))


# -- field filters ------------------------------------------------------------------------------


def test_field_filters_match_globs_on_named_fields() -> None:
    entry = [b"action", b"click", b"page", b"/home", b"action", b"scroll"]
    assert field_filter([b"action=click"])(entry)
    assert field_filter([b"action=scroll"])(entry)  # any of a repeated field
    assert field_filter([b"page=/h*", b"action=cl?ck"])(entry)  # every condition
    assert not field_filter([b"page=/h*", b"action=buy"])(entry)
    assert not field_filter([b"user=*"])(entry)  # a missing field matches nothing
    assert field_filter([b"a=b=c"])([b"a", b"b=c"])  # the name ends at the first =
    assert field_filter([])(entry)
    with pytest.raises(ValueError, match="is not FIELD=GLOB"):
        field_filter([b"action"])
