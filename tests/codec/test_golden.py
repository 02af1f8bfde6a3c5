"""Golden vectors from a real server (fixtures/golden/*.json, made by fixtures/make_golden.py).

Each file holds a recipe of commands and the stream nodes the server DUMPed afterwards.  The
recipe is replayed with rstore's node codec alone, and the nodes must match byte for byte; the
server's nodes must also decode back to the entries the recipe wrote.  No server is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rstore.codec import listpack as lp
from rstore.codec import stream_node as sn
from rstore.codec.node_validate import validate_node

from .golden import GOLDEN_DIR, Replay, first_difference, load, replay, server_nodes
from .model import U64

RECIPES = ["encodings", "ids", "many", "random", "saturated", "sizes"]
PATHS = sorted(GOLDEN_DIR.glob("*.json"))


def test_golden_files_are_present() -> None:
    assert [p.stem for p in PATHS] == RECIPES
    for path in PATHS:
        data = load(path)
        assert data["server"]["name"] in ("valkey", "redis")
        assert data["streams"], path


_cache: dict[Path, tuple[dict[str, Any], Replay, list[tuple[Any, Any]]]] = {}


def replayed(path: Path) -> tuple[dict[str, Any], Replay, list[tuple[Any, Any]]]:
    if path not in _cache:
        data = load(path)
        _cache[path] = (data, *replay(data))
    return _cache[path]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_replay_gives_the_recorded_replies(path: Path) -> None:
    """XADD IDs, XDEL and XTRIM counts: the replay followed the same node history."""
    _, _, replies = replayed(path)
    mismatches = [(i, rec, got) for i, (rec, got) in enumerate(replies) if rec != got]
    assert mismatches == []


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_nodes_are_rebuilt_byte_for_byte(path: Path) -> None:
    data, r, _ = replayed(path)
    for stream in data["streams"]:
        ours = r.streams[stream["key"].encode()]
        theirs = server_nodes(stream)
        assert [n.master_id for n in ours.nodes] == [m for m, _ in theirs], stream["key"]
        for node, (master, blob) in zip(ours.nodes, theirs):
            where = (stream["key"], master)
            assert bytes(node.data) == blob, (where, first_difference(node.data, blob))
        assert ours.length == stream["dump"]["length"]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_server_nodes_decode_to_the_recipe_entries(path: Path) -> None:
    data, r, _ = replayed(path)
    for stream in data["streams"]:
        ours = r.streams[stream["key"].encode()]
        for node, (master, blob) in zip(ours.nodes, server_nodes(stream), strict=True):
            expected = node.entries
            assert validate_node(blob, master, deep=True) == len(expected)
            live = [(e.id, e.fv) for e in expected if not e.deleted]
            assert sn.node_counts(blob) == (len(live), len(expected) - len(live))
            assert sn.master_fields(blob)[0] == expected[0].fields
            raw = list(sn.iter_raw(blob, master))
            assert [(x.id, x.fields_values, bool(x.flags & sn.FLAG_DELETED)) for x in raw] == [
                (e.id, e.fv, e.deleted) for e in expected
            ]
            same = [bool(x.flags & sn.FLAG_SAMEFIELDS) for x in raw]
            assert same == [e.fields == expected[0].fields for e in expected]
            assert sn.last_entry_id(blob, master) == expected[-1].id
            assert sn.first_live_entry(blob, master) == (live[0] if live else None)
            forward: list[Any] = []
            backward: list[Any] = []
            sn.scan_forward(blob, master, (0, 0), (U64, U64), 0, forward)
            sn.scan_backward(blob, master, (0, 0), (U64, U64), 0, backward)
            assert forward == live
            assert backward == live[::-1]


def test_saturated_node_header_says_unknown() -> None:
    """The 66006-element node: header count 65535 ("unknown"), true count found by walking."""
    (stream,) = load(GOLDEN_DIR / "saturated.json")["streams"]
    ((_, blob),) = server_nodes(stream)
    assert blob[4:6] == b"\xff\xff"
    assert lp.validate(blob, deep=True) == 66006
