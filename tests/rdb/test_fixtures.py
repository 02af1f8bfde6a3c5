"""Dumps written by real servers (fixtures/rdb/, made by fixtures/make_rdb_fixtures.py): restored
into rstore they answer exactly as the server that wrote them answered before its SAVE -- or,
for redis-server 7.0's files, where Valkey 8.0's XINFO replies differ from 7.0's, as
valkey-server 8.0 answered after loading the file; the offline inspector and range reader
agree.  No server is needed here.

The only answers normalised (to ``"<idle>"``, on both sides) are the now-relative ones: the
``idle`` and ``inactive`` fields of XINFO CONSUMERS and the idle time of each extended XPENDING
row.  Absolute times (delivery, seen and active times) are stored in the file and compared."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from newer_fields import as_older_server

import rstore
from rstore import inspect_rdb, read_rdb_entries, read_rdb_range
from rstore.rdb.reader import End, KeyEnd, KeyStart, RDBReader

from .common import (
    FIXTURES,
    arg_bytes,
    as_json,
    fixture_names,
    load_fixture,
    normalise,
    rstore_reply,
)

NAMES = fixture_names()


def test_the_fixtures_are_there() -> None:
    # every recipe from two servers (RDB 11 and 10), compressed and not
    recipes = {n.rsplit("-", 2)[0] for n in NAMES}
    assert recipes == {"queue", "values"}
    assert len(NAMES) == 4 * len(recipes)
    assert {n.rsplit("-", 2)[1] for n in NAMES} == {"valkey", "redis"}
    assert {n.rsplit("-", 1)[1] for n in NAMES} == {"lzf", "plain"}


@pytest.mark.parametrize("name", NAMES)
def test_only_version_differences_were_recorded(name: str) -> None:
    """valkey answers the same before its SAVE and after loading the file; redis 7.0's answers
    differ from valkey 8.0's only where 7.0 lacks the consumers' active-time; Redis 8.2.3's
    only in a group's lag (the script refuses any other difference)."""
    data = load_fixture(name)
    commands = [
        c for keys in data["answers"].values() for key in keys for c in key.get("commands", [])
    ]
    for c in commands:
        if "redis8_reply" in c:
            assert c["args"][:2] == ["XINFO", "GROUPS"] or c["args"][-1] == "FULL", c["args"]
    differing = [
        c
        for keys in data["answers"].values()
        for key in keys
        for c in key.get("commands", [])
        if "valkey_reply" in c
    ]
    if "-valkey-" in name:
        assert differing == []
        return
    assert differing
    for c in differing:
        assert c["args"][:2] == ["XINFO", "CONSUMERS"] or c["args"][-1] == "FULL"
        assert "active-time" in str(c["valkey_reply"]) or "inactive" in str(c["valkey_reply"])


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
                        reply = as_older_server(argv, store.execute_raw(*argv))
                    except rstore.ResponseError as exc:
                        reply = exc
                    got = as_json(normalise(argv, reply))
                    expected = rstore_reply(asked)
                    assert got == expected, f"{name} db {db}: {asked['args']}"
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
            # the first reply to each verb ("XINFO STREAM" is asked without FULL first)
            replies: dict[tuple[str, str], Any] = {}
            for c in key["commands"]:
                verb = c["args"][0], c["args"][1] if c["args"][0] == "XINFO" else ""
                replies.setdefault(verb, rstore_reply(c))
            assert s.state.length == replies[("XLEN", "")]
            info = dict(zip(*[iter(replies[("XINFO", "STREAM")])] * 2))
            assert s.nodes == info["radix-tree-keys"]
            assert s.state.entries_added == info["entries-added"]
            ms, seq = s.state.last_id
            assert f"{ms}-{seq}" == info["last-generated-id"]
            assert s.expire_ms == (key["pexpiretime"] if key["pexpiretime"] > 0 else None)
            groups = [dict(zip(*[iter(g)] * 2)) for g in replies[("XINFO", "GROUPS")]]
            assert [(g.state.name.decode(), g.state.pel_count, g.lag) for g in s.groups] == [
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
            forward = read_rdb_entries(path, raw, db=int(db))
            assert forward is not None
            assert as_json([[i, fv] for i, fv in forward]) == replies["XRANGE"]
            backward = read_rdb_entries(path, raw, db=int(db), count=5, reverse=True)
            assert backward is not None
            assert as_json([[i, fv] for i, fv in backward]) == replies["XREVRANGE"]
            # read_rdb_range has Store.xrange's (redis-py's) shape: (id, {field: value})
            shaped = read_rdb_range(path, raw, db=int(db))
            assert shaped == [(i, dict(zip(fv[0::2], fv[1::2]))) for i, fv in forward]
    for reader in (read_rdb_entries, read_rdb_range):
        assert reader(path, b"no-such-key") is None
        assert reader(path, b"greeting") is None  # a string, not a stream


@pytest.mark.parametrize("name", NAMES)
def test_reader_reports_every_key_with_type_and_expiry(name: str) -> None:
    """The event reader names every key of every type, with its TYPE and absolute expiry as the
    server reported them (PEXPIRETIME -1: none); streams end with their length."""
    data = load_fixture(name)
    expected = {}
    for db, keys in data["answers"].items():
        for k in keys:
            expiry = k["pexpiretime"] if k["pexpiretime"] > 0 else None
            expected[(int(db), arg_bytes(k["key"]))] = (k["type"], expiry)
    lengths = {
        (int(db), arg_bytes(k["key"])): k["commands"][0]["reply"]
        for db, keys in data["answers"].items()
        for k in _streams(keys)
    }
    seen: dict[tuple[int, bytes], tuple[str, int | None]] = {}
    ended: dict[tuple[int, bytes], int] = {}
    with open(FIXTURES / f"{name}.rdb", "rb") as f:
        for event in RDBReader(f).events():
            if isinstance(event, KeyStart):
                seen[(event.db, event.key)] = (event.type_name, event.expire_ms)
            elif isinstance(event, KeyEnd) and event.type_name == "stream":
                ended[(event.db, event.key)] = event.elements
            elif isinstance(event, End):
                assert event.verified
    assert seen == expected
    assert ended == lengths
