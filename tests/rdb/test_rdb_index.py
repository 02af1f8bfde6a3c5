"""The RDB index (rstore.index_rdb, rstore.read_rdb_nodes): every stream of files written by
valkey-server 8.0 and redis-server 7.0 (fixtures/rdb/) found with its state, and its nodes read
back from their offsets -- whole or in pieces, as parallel readers do -- give exactly the
entries the server answered to XRANGE before it saved the file."""

from __future__ import annotations

from pathlib import Path

import pytest

import rstore
from rstore import index_rdb, inspect_rdb, iter_columns, read_rdb_nodes

from .common import FIXTURES, arg_bytes, as_json, fixture_names, load_fixture

NAMES = fixture_names()


def _xrange_replies(name: str) -> dict[tuple[int, bytes], object]:
    data = load_fixture(name)
    out: dict[tuple[int, bytes], object] = {}
    for db, keys in data["answers"].items():
        for key in keys:
            if key["type"] == "stream":
                replies = {c["args"][0]: c["reply"] for c in key["commands"][:3]}
                out[(int(db), arg_bytes(key["key"]))] = replies["XRANGE"]
    return out


def _entries(nodes: list[tuple[tuple[int, int], bytes]]) -> list[list[object]]:
    return [
        [b"%d-%d" % entry_id, flat]
        for batch in iter_columns(nodes, batch_entries=7)
        for entry_id, flat in batch.entries()
    ]


@pytest.mark.parametrize("name", NAMES)
def test_index_finds_every_stream_with_its_state(name: str) -> None:
    path = str(FIXTURES / f"{name}.rdb")
    index = index_rdb(path)
    summary = inspect_rdb(path)
    assert [(s.db, s.key) for s in index] == [(s.db, s.key) for s in summary.streams]
    for found, info in zip(index, summary.streams, strict=True):
        assert found.state == info.state
        assert len(found.nodes) == info.nodes
        assert sum(n.entries for n in found.nodes) == info.state.length
        assert found.size == info.bytes
    assert set(_xrange_replies(name)) == {(s.db, s.key) for s in index}


@pytest.mark.parametrize("name", NAMES)
def test_nodes_read_from_their_offsets_give_the_servers_entries(name: str) -> None:
    path = str(FIXTURES / f"{name}.rdb")
    replies = _xrange_replies(name)
    for stream in index_rdb(path):
        want = replies[(stream.db, stream.key)]
        if not stream.nodes:
            assert want == []
            continue
        whole = list(read_rdb_nodes(path, stream.nodes[0].offset, len(stream.nodes)))
        assert [m for m, _ in whole] == [n.master_id for n in stream.nodes]
        assert as_json(_entries(whole)) == want
        # in pieces of two nodes, each read on its own from its first node's offset
        pieces: list[tuple[tuple[int, int], bytes]] = []
        for i in range(0, len(stream.nodes), 2):
            chunk = stream.nodes[i : i + 2]
            after = stream.nodes[i - 1].master_id if i else None
            pieces += read_rdb_nodes(path, chunk[0].offset, len(chunk), after=after)
        assert pieces == whole


def test_a_wrong_offset_is_a_clear_error_not_garbage(tmp_path: Path) -> None:
    path = str(FIXTURES / f"{NAMES[0]}.rdb")
    stream = next(s for s in index_rdb(path) if len(s.nodes) > 2)
    with pytest.raises(rstore.CorruptRDBError):
        list(read_rdb_nodes(path, stream.nodes[1].offset + 1, 1))
    with pytest.raises(rstore.CorruptRDBError, match="no stream node at offset"):
        list(read_rdb_nodes(path, 10**9, 1))
    # nodes out of order (the piece after a later node) are refused
    with pytest.raises(rstore.CorruptRDBError, match="ascending"):
        list(read_rdb_nodes(path, stream.nodes[1].offset, 1, after=stream.nodes[2].master_id))


def test_a_damaged_file_fails_the_index_pass(tmp_path: Path) -> None:
    data = bytearray((FIXTURES / f"{NAMES[0]}.rdb").read_bytes())
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "damaged.rdb"
    path.write_bytes(bytes(data))
    with pytest.raises(rstore.CorruptRDBError):
        index_rdb(str(path))


def test_index_of_an_rstore_dump(tmp_path: Path) -> None:
    store = rstore.Store(str(tmp_path / "s"))
    for i in range(2000):
        store.xadd("a", {"n": i, "pad": "x" * (i % 50)})
    store.xadd("b", {"only": "one"})
    store.save(str(tmp_path / "dump.rdb"))
    index = {s.key: s for s in index_rdb(str(tmp_path / "dump.rdb"))}
    assert set(index) == {b"a", b"b"}
    a = index[b"a"]
    assert len(a.nodes) > 10
    nodes = list(read_rdb_nodes(a.path, a.nodes[0].offset, len(a.nodes)))
    got = [[b"%d-%d" % i, f] for batch in iter_columns(nodes) for i, f in batch.entries()]
    assert got == store.execute("XRANGE", "a", "-", "+")
    store.close()


@pytest.mark.parametrize("name", NAMES)
def test_one_pass_gives_the_index_and_the_same_nodes(name: str) -> None:
    """read_rdb_streams reads a whole file once: the streams index_rdb finds, each with the
    nodes read_rdb_nodes reads from their offsets; streams not wanted come without nodes."""
    path = str(FIXTURES / f"{name}.rdb")
    index = index_rdb(path)
    whole = list(rstore.read_rdb_streams(path))
    assert [s for s, _ in whole] == index
    for stream, nodes in whole:
        if stream.nodes:
            first = stream.nodes[0].offset
            assert first is not None
            assert nodes == list(read_rdb_nodes(path, first, len(stream.nodes)))
        else:
            assert nodes == []
    keep = index[0].key
    only = list(rstore.read_rdb_streams(path, lambda db, key: key == keep))
    assert [s for s, _ in only] == index
    assert all(bool(nodes) == (s.key == keep and bool(s.nodes)) for s, nodes in only)
