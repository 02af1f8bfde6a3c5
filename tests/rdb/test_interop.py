"""RDB files and DUMP payloads moving between rstore and the real servers, live: valkey-server
8.0 (RDB 11), redis-server 7.0 (RDB 10) and Redis 8.2.3 (RDB 12).  Whatever one side writes,
the other loads, and both then answer the same questions the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from newer_fields import as_older_server
from oracle.resp import ErrorReply, RespClient
from valkey_server import HOST, ValkeyServer, find_server_binary

import rstore

from .common import as_json, normalise, stream_questions

pytestmark = pytest.mark.oracle

Run = Callable[..., Any]
STREAMS = [b"jobs", b"drained", b"bin\x00key", b"big"]


def _binary(name: str) -> str:
    found = find_server_binary(name)
    if found is None:
        pytest.skip(f"{name} is not installed (.ci/install-servers, .ci/install-redis8)")
    return found


#: The RDB version each server writes (files and DUMP payloads).
VERSIONS = {"valkey": 11, "redis": 10, "redis8": 12}


class Server:
    """A throw-away server in its own directory; ``start()`` loads ``dump.rdb`` if present."""

    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.workdir = workdir
        self.dump = workdir / "dump.rdb"
        self._server = ValkeyServer(_binary(name), workdir)
        self._client: RespClient | None = None

    def start(self) -> RespClient:
        self._server.start()
        self._client = RespClient(HOST, self._server.port)
        return self._client

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._server.stop()


@pytest.fixture(params=["valkey", "redis", "redis8"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    workdir = tmp_path / request.param
    workdir.mkdir()
    srv = Server(request.param, workdir)
    try:
        yield srv
    finally:
        srv.stop()


def populate(run: Run) -> None:
    """The same data on either side: groups with pending entries and claims, deletions, a
    trimmed-to-empty stream that keeps its group, binary keys and values, values over 4 KB,
    many nodes, and keys of other types (which rstore skips)."""
    run("CONFIG", "SET", "stream-node-max-entries", "7")
    for i in range(1, 120):
        fields = ("a", str(i), "b", "007") if i % 9 else ("other", "-0", "x", "")
        run("XADD", "jobs", f"100-{i}", *fields)
    run("XDEL", "jobs", "100-3", "100-50", "100-119")
    run("XGROUP", "CREATE", "jobs", "workers", "0")
    run("XGROUP", "CREATE", "jobs", "noack", "0")
    run("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "20", "STREAMS", "jobs", ">")
    run("XREADGROUP", "GROUP", "workers", "bob", "COUNT", "5", "STREAMS", "jobs", ">")
    run("XACK", "jobs", "workers", "100-1", "100-2")
    run("XCLAIM", "jobs", "workers", "bob", "0", "100-4", "RETRYCOUNT", "3")
    run("XGROUP", "CREATECONSUMER", "jobs", "workers", "idle-one")
    run("XREADGROUP", "GROUP", "noack", "n", "NOACK", "COUNT", "50", "STREAMS", "jobs", ">")
    run("XADD", "drained", "5-1", "f", "v")
    run("XGROUP", "CREATE", "drained", "g", "0")
    run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "drained", ">")
    run("XTRIM", "drained", "MAXLEN", "0")
    run("XADD", b"bin\x00key", "1-1", b"\x00\xff", b"\x00" * 3, "9223372036854775808", "-1")
    run("XADD", "big", "1-1", "v", "x" * 5000, "w", "abc" * 3000)
    run("XADD", "big", "2-1", "v", bytes(range(256)) * 20)
    run("SET", "string", "value")
    run("SET", "long-string", "abc" * 50)  # LZF-compressed in the file: skipped by length
    run("HSET", "hash", "f", "v")
    run("CONFIG", "SET", "stream-node-max-entries", "100")


def _on_server(client: RespClient) -> Run:
    def run(*argv: Any) -> Any:
        reply = client.execute(*argv)
        assert not isinstance(reply, ErrorReply), (argv, reply)
        return reply

    return run


def _on_store(store: rstore.Store) -> Run:
    def run(*argv: Any) -> Any:
        if argv[0] in ("SET", "HSET"):
            return None  # rstore holds streams only
        return as_older_server(argv, store.execute_raw(*argv))

    return run


def _answers(ask: Run, with_active_time: bool, keys: list[bytes] = STREAMS) -> list[Any]:
    """Every stream question, normalised.  Without ``with_active_time`` -- redis 7.0 on either
    side, or an RDB 10 file, which has no consumer active-time -- the questions whose replies
    show it (XINFO STREAM FULL, XINFO CONSUMERS) are left out."""
    out = []
    for key in keys:
        groups = ask("XINFO", "GROUPS", key)
        names = [dict(zip(g[0::2], g[1::2]))[b"name"] for g in groups]
        for argv in stream_questions(key, names):
            shows_active_time = argv[:2] == [b"XINFO", b"CONSUMERS"] or argv[-1] == b"FULL"
            if shows_active_time and not with_active_time:
                continue
            out.append((argv, as_json(normalise(argv, ask(*argv)))))
    return out


def _store_ask(store: rstore.Store) -> Run:
    def ask(*argv: Any) -> Any:
        try:
            return as_older_server(argv, store.execute_raw(*argv))
        except rstore.ResponseError as exc:
            return exc

    return ask


def test_server_save_restores_into_rstore(server: Server, tmp_path: Path) -> None:
    client = server.start()
    populate(_on_server(client))
    assert client.execute("SAVE") == "OK"
    full = server.name != "redis"
    expected = _answers(client.execute, full)
    with rstore.Store(tmp_path / "store") as store:
        report = store.restore_file(server.dump)
        assert sorted(report.streams) == sorted(STREAMS)
        assert report.skipped == {"string": 2, "hash": 1}
        assert _answers(_store_ask(store), full) == expected
        assert store.check() == []


@pytest.mark.parametrize(
    ("name", "version", "compress"),
    [
        ("valkey", 11, True), ("valkey", 11, False), ("valkey", 10, True), ("redis", 10, True),
        ("redis8", 12, True), ("redis8", 11, False),
    ],
)  # fmt: skip
def test_rstore_save_loads_in_server_at_startup(
    name: str, version: int, compress: bool, tmp_path: Path
) -> None:
    srv = Server(name, tmp_path)
    with rstore.Store(tmp_path / "store") as store:
        populate(_on_store(store))
        report = store.save(srv.dump, rdb_version=version, compress=compress)
        assert report.streams == len(STREAMS)
        full = name != "redis" and version >= 11
        expected = _answers(_store_ask(store), full)
    try:
        client = srv.start()
        assert sorted(client.execute("KEYS", "*")) == sorted(STREAMS)
        assert _answers(client.execute, full) == expected
    finally:
        srv.stop()


def test_rdb_9_loads_in_valkey(tmp_path: Path) -> None:
    """Version 9 (stream type 15, Redis 5.0-6.2) has no entries-added, max-deleted-ID or
    entries-read: the entries, groups, consumers and pending entries still come through."""
    srv = Server("valkey", tmp_path)
    with rstore.Store(tmp_path / "store") as store:
        populate(_on_store(store))
        store.save(srv.dump, rdb_version=9)
        ask = _store_ask(store)
        expected = [
            as_json(normalise(argv, ask(*argv)))
            for key in STREAMS
            for argv in (
                [b"XRANGE", key, b"-", b"+"],
                [b"XPENDING", key, b"workers", b"-", b"+", b"99"],
            )
        ]
    try:
        client = srv.start()
        got = [
            as_json(normalise(argv, client.execute(*argv)))
            for key in STREAMS
            for argv in (
                [b"XRANGE", key, b"-", b"+"],
                [b"XPENDING", key, b"workers", b"-", b"+", b"99"],
            )
        ]
        assert got == expected
    finally:
        srv.stop()


def test_dump_payloads_both_ways(server: Server, tmp_path: Path) -> None:
    client = server.start()
    version = VERSIONS[server.name]
    with rstore.Store(tmp_path / "store") as store:
        populate(_on_store(store))
        for key in STREAMS:
            payload = store.dump(key, rdb_version=version)
            assert payload is not None
            assert client.execute("RESTORE", key, "0", payload) == "OK"
            # the server's own DUMP of what it restored is the same bytes
            assert client.execute("DUMP", key) == payload
        full = server.name != "redis"
        expected = _answers(_store_ask(store), full)
        assert _answers(client.execute, full) == expected
    with rstore.Store(tmp_path / "again") as other:
        for key in STREAMS:
            payload = client.execute("DUMP", key)
            assert other.execute("RESTORE", key, "0", payload) == "OK"
            assert other.dump(key, rdb_version=version) == payload
        assert _answers(_store_ask(other), full) == expected
        assert other.check() == []
