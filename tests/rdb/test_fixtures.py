"""Dumps written by real servers (fixtures/rdb/, made by fixtures/make_rdb_fixtures.py): restored
into rstore they answer exactly as valkey-server 8.0 answered after loading the same file; the
offline inspector and range reader agree.  No server is needed here."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore import inspect_rdb, read_rdb_range

from .common import FIXTURES, arg_bytes, as_json, fixture_names, load_fixture, normalise

NAMES = fixture_names()


def test_the_fixtures_are_there() -> None:
    # two servers (RDB 11 and 10), compressed and not
    assert {n.rsplit("-", 2)[1] for n in NAMES} == {"valkey", "redis"}
    assert {n.rsplit("-", 1)[1] for n in NAMES} == {"lzf", "plain"}


def _streams(db_answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [k for k in db_answers if k["type"] == "stream"]


@pytest.mark.parametrize("name", NAMES)
def test_restored_fixture_answers_like_valkey(name: str, tmp_path: Path) -> None:
    data = load_fixture(name)
    for db, keys in data["answers"].items():
        with rstore.Store(tmp_path / f"db{db}") as store:
            report = store.restore_file(FIXTURES / f"{name}.rdb", db=int(db))
            streams = _streams(keys)
            assert sorted(report.streams) == sorted(arg_bytes(k["key"]) for k in streams)
            others = Counter(k["type"] for k in keys if k["type"] != "stream")
            assert report.skipped == dict(others)
            expiring = [arg_bytes(k["key"]) for k in streams if k["pexpiretime"] > 0]
            assert sorted(report.ttl_dropped) == sorted(expiring)
            for key in streams:
                for asked in key["commands"]:
                    argv = [arg_bytes(a) for a in asked["args"]]
                    try:
                        reply = store.execute_raw(*argv)
                    except rstore.ResponseError as exc:
                        reply = exc
                    got = as_json(normalise(argv, reply))
                    assert got == asked["reply"], f"{name} db {db}: {asked['args']}"
            assert store.check() == []


@pytest.mark.parametrize("name", NAMES)
def test_inspect_summarises_every_database(name: str) -> None:
    data = load_fixture(name)
    summary = inspect_rdb(str(FIXTURES / f"{name}.rdb"))
    assert summary.checksum_verified
    assert summary.rdb_version == (11 if "-valkey-" in name else 10)
    assert sorted(summary.databases) == sorted(int(db) for db in data["answers"])
    by_key = {(s.db, s.key): s for s in summary.streams}
    for db, keys in data["answers"].items():
        types = summary.databases[int(db)]
        assert {t: s.keys for t, s in types.items()} == dict(Counter(k["type"] for k in keys))
        expiring = Counter(k["type"] for k in keys if k["pexpiretime"] > 0)
        assert {t: s.expiring for t, s in types.items() if s.expiring} == dict(expiring)
        for key in _streams(keys):
            s = by_key[(int(db), arg_bytes(key["key"]))]
            replies = {tuple(c["args"][:2]): c["reply"] for c in key["commands"]}
            assert s.length == replies[("XLEN", key["key"])]
            info = dict(zip(*[iter(replies[("XINFO", "STREAM")])] * 2))
            assert s.nodes == info["radix-tree-keys"]
            assert s.entries_added == info["entries-added"]
            ms, seq = s.last_generated_id
            assert f"{ms}-{seq}" == info["last-generated-id"]
            assert s.expire_ms == (key["pexpiretime"] if key["pexpiretime"] > 0 else None)
            groups = [dict(zip(*[iter(g)] * 2)) for g in replies[("XINFO", "GROUPS")]]
            assert [(g.name.decode(), g.pending, g.lag) for g in s.groups] == [
                (g["name"], g["pending"], g["lag"]) for g in groups
            ]
            assert [len(g.consumers) for g in s.groups] == [g["consumers"] for g in groups]


@pytest.mark.parametrize("name", NAMES)
def test_entries_read_straight_from_the_file(name: str) -> None:
    data = load_fixture(name)
    path = str(FIXTURES / f"{name}.rdb")
    for db, keys in data["answers"].items():
        for key in _streams(keys):
            raw = arg_bytes(key["key"])
            replies = {c["args"][0]: c["reply"] for c in key["commands"][:3]}
            forward = read_rdb_range(path, raw, db=int(db))
            assert forward is not None
            assert as_json([[b"%d-%d" % i, fv] for i, fv in forward]) == replies["XRANGE"]
            backward = read_rdb_range(path, raw, db=int(db), count=5, reverse=True)
            assert backward is not None
            assert as_json([[b"%d-%d" % i, fv] for i, fv in backward]) == replies["XREVRANGE"]
    assert read_rdb_range(path, b"no-such-key") is None
    assert read_rdb_range(path, b"greeting") is None  # a string, not a stream
