"""Several databases through RDB files, against the real servers: valkey-server 8.0 writes a
file with streams in databases 0, 3 and 15; rstore restores every database, serves them
(SELECT N answers as valkey does), saves them again with SAVE, and a fresh valkey-server
loading that file holds the same data in each database; redis-server 7.0 loads an RDB 10
multi-database save.  And SAVE / BGSAVE / LASTSAVE answer as Valkey 8.0 does when a save
fails or one is running."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from newer_fields import as_older_server
from served import ServedStore
from valkey_server import HOST, ValkeyServer, find_server_binary

import rstore

from .resp import ErrorReply, RespClient

pytestmark = pytest.mark.oracle

DATABASES = (0, 3, 15)
Run = Callable[..., Any]


def _binary(name: str) -> str:
    found = find_server_binary(name)
    if found is None:
        pytest.skip(f"{name}-server is not on PATH")
    return found


@pytest.fixture
def servers() -> Iterator[list[ValkeyServer | RespClient]]:
    """Servers a test starts and their connections; closed and stopped at its end."""
    started: list[ValkeyServer | RespClient] = []
    try:
        yield started
    finally:
        for thing in reversed(started):
            if isinstance(thing, RespClient):
                thing.close()
            else:
                thing.stop()


def _start(started: list[ValkeyServer | RespClient], server: ValkeyServer) -> RespClient:
    started.append(server)
    Path(server.dir).mkdir(exist_ok=True)
    server.start()
    client = RespClient(HOST, server.port)
    started.append(client)
    return client


def _streams(db: int) -> list[bytes]:
    return [b"s%d" % db, b"shared"]


def populate(run: Run) -> None:
    """Streams with groups, pending entries, deletions in each of DATABASES; the same key
    ``shared`` in each, with other contents; a string in database 3 (not a stream)."""
    for db in DATABASES:
        run("SELECT", db)
        key = f"s{db}"
        for i in range(1, 30):
            run("XADD", key, f"{db + 1}-{i}", "n", str(i), "db", str(db))
        run("XDEL", key, f"{db + 1}-3")
        run("XGROUP", "CREATE", key, "g", "0")
        run("XREADGROUP", "GROUP", "g", "alice", "COUNT", "5", "STREAMS", key, ">")
        run("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", key, ">")
        run("XACK", key, "g", f"{db + 1}-1")
        for i in range(db + 1):
            run("XADD", "shared", f"7-{i}", "from", str(db))
        run("XGROUP", "CREATE", "shared", f"only-in-{db}", "$")
    run("SELECT", 3)
    run("SET", "not-a-stream", "x")
    run("SELECT", 0)


def _runner(client: RespClient) -> Run:
    def run(*argv: Any) -> Any:
        reply = client.execute(*argv)
        assert not isinstance(reply, ErrorReply), (argv, reply)
        return reply

    return run


def ask(client: RespClient, *, full: bool = True, served: bool = False) -> dict[int, list[Any]]:
    """Per database, the answers about its streams (XINFO STREAM FULL shows consumers' active
    times, which an RDB 10 file does not carry: ``full=False`` leaves it out); ``served``: from
    ``rstore serve``, as a server before Redis 8.6 answers them (``newer_fields``)."""
    out: dict[int, list[Any]] = {}
    for db in DATABASES:
        assert client.execute("SELECT", db) == "OK"
        answers = []
        for key in _streams(db):
            questions: list[tuple[Any, ...]] = [
                ("XLEN", key),
                ("XRANGE", key, "-", "+"),
                ("XINFO", "GROUPS", key),
                ("XPENDING", key, "g"),
            ]
            if full:
                questions.append(("XINFO", "STREAM", key, "FULL"))
            answers += [
                (q, as_older_server(q, client.execute(*q)) if served else client.execute(*q))
                for q in questions
            ]
        out[db] = answers
    client.execute("SELECT", 0)
    return out


def _keys(client: RespClient) -> dict[int, list[bytes]]:
    out = {}
    for db in range(16):
        client.execute("SELECT", db)
        out[db] = sorted(client.execute("KEYS", "*"))
    client.execute("SELECT", 0)
    return {db: keys for db, keys in out.items() if keys}


def test_every_database_round_trips_through_valkey_and_rstore_serve(
    servers: list[ValkeyServer | RespClient], tmp_path: Path
) -> None:
    binary = _binary("valkey")
    source = _start(servers, ValkeyServer(binary, tmp_path / "source"))
    populate(_runner(source))
    assert source.execute("SAVE") == "OK"
    expected = ask(source)
    expected_keys = _keys(source)
    assert set(expected_keys) == set(DATABASES)

    out = tmp_path / "out"
    out.mkdir()
    with rstore.Store(tmp_path / "store", sync=False) as store:
        report = store.restore_file(tmp_path / "source" / "dump.rdb", db=None)
        assert sorted(report.databases) == list(DATABASES)
        for db in DATABASES:
            assert sorted(report.databases[db].streams) == sorted(_streams(db))
        assert report.databases[3].skipped == {"string": 1}
        assert report.skipped == {"string": 1}
        assert store.databases() == list(DATABASES)
        with ServedStore(store, dir=str(out)) as served, RespClient(HOST, served.port) as c:
            assert ask(c, served=True) == expected
            before = c.execute("LASTSAVE")
            time.sleep(1.05)  # LASTSAVE has a resolution of one second
            assert c.execute("SAVE") == "OK"
            assert c.execute("LASTSAVE") > before
        assert store.check() == []

    loaded = _start(
        servers, ValkeyServer(binary, tmp_path / "again", rdb_file=str(out / "dump.rdb"))
    )
    assert ask(loaded) == expected
    streams_only = {
        db: [k for k in keys if k != b"not-a-stream"] for db, keys in expected_keys.items()
    }
    assert _keys(loaded) == streams_only


def test_redis_7_loads_a_multi_database_rdb_10_save(
    servers: list[ValkeyServer | RespClient], tmp_path: Path
) -> None:
    with rstore.Store(tmp_path / "store", sync=False) as store:

        def run(*argv: Any) -> Any:
            if argv[0] == "SET":
                return None  # rstore holds streams only
            if argv[0] == "SELECT":
                run.db = int(argv[1])  # type: ignore[attr-defined]
                return "OK"
            return store.database(run.db).execute_raw(*argv)  # type: ignore[attr-defined]

        run.db = 0  # type: ignore[attr-defined]
        populate(run)
        report = store.save(tmp_path / "v10.rdb", rdb_version=10)
        assert sorted(report.databases) == list(DATABASES)
        assert report.streams == 2 * len(DATABASES)
        assert report.databases[3] == (2, 29 - 1 + 4)
        restored_side = tmp_path / "check"
        with rstore.Store(restored_side, sync=False) as check:
            check.restore_file(tmp_path / "v10.rdb", db=None)
            with ServedStore(check) as served, RespClient(HOST, served.port) as c:
                expected = ask(c, full=False, served=True)
    redis = _start(
        servers,
        ValkeyServer(_binary("redis"), tmp_path / "redis", rdb_file=str(tmp_path / "v10.rdb")),
    )
    assert ask(redis, full=False) == expected
    assert _keys(redis) == {db: sorted(_streams(db)) for db in DATABASES}


# ----------------------------------------------------------------------------- replies


def _failing_save_replies(client: RespClient, directory: Path) -> list[Any]:
    """Arity and syntax, then the save directory removed: SAVE fails, BGSAVE starts and fails
    (logged only), LASTSAVE stays; a SAVE after it fails again (the background save ended)."""
    replies = [client.execute("SAVE", "now"), client.execute("BGSAVE", "later", "please")]
    replies.append(client.execute("BGSAVE", "later"))
    last = client.execute("LASTSAVE")
    shutil.rmtree(directory)
    try:
        replies += [client.execute("SAVE"), client.execute("LASTSAVE") == last]
        replies.append(client.execute("BGSAVE"))
        time.sleep(0.5)
        replies += [client.execute("LASTSAVE") == last, client.execute("SAVE")]
        replies.append(_persistence(client))  # the failed background save shows
    finally:
        directory.mkdir()
    return replies


def _persistence(client: RespClient) -> tuple[str, str]:
    """INFO persistence's ``rdb_bgsave_in_progress`` and ``rdb_last_bgsave_status``."""
    text = client.execute("INFO", "persistence")
    text = text.decode() if isinstance(text, bytes) else str(text)
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return fields["rdb_bgsave_in_progress"], fields["rdb_last_bgsave_status"]


def _lastsave_moves(client: RespClient, before: int) -> bool:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if client.execute("LASTSAVE") > before:
            return True
        time.sleep(0.05)
    return False


def test_a_failing_save_answers_as_valkey(
    servers: list[ValkeyServer | RespClient], tmp_path: Path
) -> None:
    valkey_dir = tmp_path / "valkey"
    valkey = _start(servers, ValkeyServer(_binary("valkey"), valkey_dir))
    valkey.execute("XADD", "s", "1-1", "f", "v")
    expected = _failing_save_replies(valkey, valkey_dir)
    assert expected[3] == ErrorReply("ERR")  # derived from the server, checked for sense
    out = tmp_path / "out"
    out.mkdir()
    with rstore.Store(tmp_path / "store", sync=False) as store:
        store.xadd("s", {"f": "v"}, id="1-1")
        with ServedStore(store, dir=str(out)) as served, RespClient(HOST, served.port) as c:
            assert _failing_save_replies(c, out) == expected


def _while_saving(client: RespClient, release: Callable[[], None]) -> list[Any]:
    before = client.execute("LASTSAVE")
    replies = [client.execute("BGSAVE")]
    replies += [client.execute("BGSAVE"), client.execute("SAVE")]
    replies.append(client.execute("BGSAVE", "SCHEDULE"))
    replies.append(_persistence(client))  # in progress
    release()
    replies.append(_lastsave_moves(client, before))
    replies.append(_persistence(client))  # done, and it worked
    return replies


def test_a_save_while_a_background_save_runs_answers_as_valkey(
    servers: list[ValkeyServer | RespClient], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    valkey = _start(servers, ValkeyServer(_binary("valkey"), tmp_path / "valkey"))
    valkey.execute("XADD", "s", "1-1", "f", "v")
    time.sleep(1.05)  # LASTSAVE moves by whole seconds
    # valkey's save child sleeps this long per key: the save runs for 1.5 s
    assert valkey.execute("CONFIG", "SET", "rdb-key-save-delay", "1500000") == "OK"
    expected = _while_saving(valkey, lambda: None)
    assert expected[1] == ErrorReply("ERR Background save already in progress")

    gate = threading.Event()
    save = rstore.Store.save

    def held_save(self: rstore.Store, *args: Any, **kwargs: Any) -> Any:
        assert gate.wait(30)
        return save(self, *args, **kwargs)

    out = tmp_path / "out"
    out.mkdir()
    with rstore.Store(tmp_path / "store", sync=False) as store:
        store.xadd("s", {"f": "v"}, id="1-1")
        with ServedStore(store, dir=str(out)) as served, RespClient(HOST, served.port) as c:
            time.sleep(1.05)
            monkeypatch.setattr(rstore.Store, "save", held_save)

            def release() -> None:
                gate.set()

            assert _while_saving(c, release) == expected
    assert (out / "dump.rdb").exists()
