"""XNACK (Redis 8.8): pending entries given back to their group.

No Redis 8.8 server can be installed here: the expected replies and error texts are Redis's
own tests' (``stream-cgroups.tcl``) and documentation's (``docs/semantics.md`` lists them).
Files rstore writes with released entries are loaded by a real Valkey 8.0 and Redis 8.2.3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from valkey_server import HOST, ValkeyServer, find_server_binary

import rstore
from rstore import ResponseError

FATAL = 9223372036854775807
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with rstore.Store(tmp_path / "store", sync=False) as s:
        yield s


def delivered(store: rstore.Store, n: int, consumer: str = "c1") -> None:
    for i in range(1, n + 1):
        store.execute("XADD", "s", f"{i}-0", "f", f"v{i}")
    store.execute("XGROUP", "CREATE", "s", "g", "0")
    store.execute("XREADGROUP", "GROUP", "g", consumer, "STREAMS", "s", ">")


def pending(store: rstore.Store) -> list[list[Any]]:
    return [row[:2] + row[3:] for row in store.execute("XPENDING", "s", "g", "-", "+", "100")]


def nack(store: rstore.Store, *args: str) -> Any:
    return store.execute("XNACK", "s", "g", *args)


def test_released_entries_keep_their_place_in_the_group_not_their_owner(
    store: rstore.Store,
) -> None:
    delivered(store, 3)
    assert nack(store, "FAIL", "IDS", "2", "1-0", "3-0") == 2
    rows = store.execute("XPENDING", "s", "g", "-", "+", "10")
    assert rows[0] == [b"1-0", b"", -1, 1] and rows[2] == [b"3-0", b"", -1, 1]
    assert store.execute("XPENDING", "s", "g") == [3, b"1-0", b"3-0", [[b"c1", b"1"]]]
    assert store.execute("XINFO", "CONSUMERS", "s", "g")[0][3] == 1
    assert store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0") == [
        [b"s", [[b"2-0", [b"f", b"v2"]]]]
    ]  # the history of c1 no longer has them
    assert store.execute("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">") is None
    assert store.check() == []


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (("SILENT",), 0),
        (("FAIL",), 1),
        (("FATAL",), FATAL),
        (("FATAL", "RETRYCOUNT", "42"), 42),
        (("SILENT", "RETRYCOUNT", "10"), 10),
        (("FAIL", "RETRYCOUNT", "0"), 0),
    ],
)
def test_the_delivery_count_by_mode(store: rstore.Store, args: tuple[str, ...], count: int) -> None:
    delivered(store, 1)
    assert nack(store, args[0], "IDS", "1", "1-0", *args[1:]) == 1
    assert pending(store) == [[b"1-0", b"", count]]


def test_silent_never_goes_below_zero_and_a_second_nack_counts_again(store: rstore.Store) -> None:
    delivered(store, 1)
    assert nack(store, "SILENT", "IDS", "2", "1-0", "1-0") == 2
    assert pending(store) == [[b"1-0", b"", 0]]


def test_counting(store: rstore.Store) -> None:
    delivered(store, 3)
    assert nack(store, "FAIL", "IDS", "5", "1-0", "9-9", "2-0", "8-8", "3-0") == 3
    assert nack(store, "FAIL", "IDS", "1", "9-9") == 0
    assert nack(store, "FAIL", "IDS", "1", "9-9", "FORCE") == 0  # no such entry
    store.execute("XADD", "s", "4-0", "f", "v4")
    assert nack(store, "FAIL", "FORCE", "IDS", "1", "4-0") == 1  # not delivered: a new record
    assert pending(store)[-1] == [b"4-0", b"", 0]
    assert store.execute("XINFO", "GROUPS", "s")[0][4:6] == [b"pending", 4]
    new = store.execute("XREADGROUP", "GROUP", "g", "c9", "STREAMS", "s", ">")
    assert [e[0] for e in new[0][1]] == [b"4-0"]  # FORCE moved no last-delivered ID


def test_claims_take_released_entries_first_in_release_order(store: rstore.Store) -> None:
    delivered(store, 4)
    nack(store, "FAIL", "IDS", "3", "1-0", "2-0", "3-0")
    nack(store, "FAIL", "IDS", "1", "1-0")  # a second release puts it last
    reply = store.execute("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "60000", "STREAMS", "s", ">")
    assert [e[0] for e in reply[0][1]] == [b"2-0", b"3-0", b"1-0"]  # 4-0 is not idle enough
    assert [e[3] for e in reply[0][1]] == [1, 1, 1]


def test_xclaim_and_xautoclaim_take_them_whatever_the_idle_time(store: rstore.Store) -> None:
    delivered(store, 2)
    nack(store, "FAIL", "IDS", "2", "1-0", "2-0")
    assert store.execute("XCLAIM", "s", "g", "c2", "99999999", "1-0", "JUSTID") == [b"1-0"]
    claimed = store.execute("XAUTOCLAIM", "s", "g", "c3", "99999999", "0", "JUSTID")
    assert claimed[1] == [b"2-0"]
    assert store.execute("XPENDING", "s", "g")[3] == [[b"c2", b"1"], [b"c3", b"1"]]
    assert store.check() == []


def test_ack_deleted_entries_delconsumer_and_setid(store: rstore.Store) -> None:
    delivered(store, 4)
    nack(store, "FAIL", "IDS", "3", "1-0", "2-0", "3-0")
    assert store.execute("XACK", "s", "g", "1-0") == 1
    store.execute("XDEL", "s", "2-0")
    assert store.execute("XAUTOCLAIM", "s", "g", "c2", "0", "0", "COUNT", "1")[2] == [b"2-0"]
    assert store.execute("XGROUP", "DELCONSUMER", "s", "g", "c1") == 1  # 4-0; 3-0 is released
    store.execute("XGROUP", "SETID", "s", "g", "0")
    again = store.execute("XREADGROUP", "GROUP", "g", "c4", "STREAMS", "s", ">")
    assert [e[0] for e in again[0][1]] == [b"1-0", b"3-0", b"4-0"]  # 3-0 taken over
    assert pending(store) == [[b"1-0", b"c4", 1], [b"3-0", b"c4", 1], [b"4-0", b"c4", 1]]
    assert store.check() == []


def test_xinfo_full_counts_them(store: rstore.Store) -> None:
    delivered(store, 2)
    nack(store, "FAIL", "IDS", "1", "2-0")
    group = store.execute("XINFO", "STREAM", "s", "FULL")[-1][0]
    keys = group[0::2]
    assert keys[4:7] == [b"pel-count", b"nacked-count", b"pending"]
    assert group[11] == 1
    assert group[13][1] == [b"2-0", b"", 0, 1]  # no owner, no delivery time


def test_released_entries_survive_a_reopen(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store:
        delivered(store, 2)
        nack(store, "FATAL", "IDS", "1", "1-0")
    with rstore.Store(tmp_path / "s") as store:
        assert pending(store) == [[b"1-0", b"", FATAL], [b"2-0", b"c1", 1]]
        assert store.check() == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("BADMODE", "IDS", "1", "1-0"), "ERR mode must be SILENT, FAIL, or FATAL"),
        (("FAIL", "FATAL", "IDS", "1", "1-0"), "ERR Unrecognized XNACK option 'FATAL'"),
        (("FAIL", "BADOPT", "IDS", "1", "1-0"), "ERR Unrecognized XNACK option 'BADOPT'"),
        (("FAIL", "IDS", "1", "1-0", "2-0"), "ERR Unrecognized XNACK option '2-0'"),
        (("FAIL", "IDS", "1", "1-0", "RETRYCOUNT"), "ERR Unrecognized XNACK option 'RETRYCOUNT'"),
        (("SILENT", "FORCE", "RETRYCOUNT", "5"), "ERR syntax error, expected IDS keyword"),
        (("FAIL", "IDS", "abc", "1-0"), "ERR numids must be a positive integer"),
        (("FAIL", "IDS", "0", "1-0"), "ERR numids must be a positive integer"),
        (("FAIL", "IDS", "2", "1-0"), "ERR number of IDs doesn't match numids"),
        (("FAIL", "IDS", "1", "nope"), INVALID_ID),
        (("FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "abc"),
         "ERR value is not an integer or out of range"),
        (("FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "-1"),
         "ERR Invalid RETRYCOUNT value, must be >= 0"),
        (("FAIL",), "ERR wrong number of arguments for 'xnack' command"),
    ],
)  # fmt: skip
def test_refusals_change_nothing(store: rstore.Store, args: tuple[str, ...], line: str) -> None:
    delivered(store, 1)
    with pytest.raises(ResponseError) as caught:
        nack(store, *args)
    assert caught.value.line == line
    assert pending(store) == [[b"1-0", b"c1", 1]]


def test_a_missing_key_or_group_is_nogroup(store: rstore.Store) -> None:
    delivered(store, 1)
    for key, group in (("nokey", "g"), ("s", "nogroup")):
        with pytest.raises(ResponseError) as caught:
            store.execute("XNACK", key, group, "FAIL", "IDS", "1", "1-0")
        assert caught.value.line == f"NOGROUP No such key '{key}' or consumer group '{group}'"


def test_the_flexible_option_order(store: rstore.Store) -> None:
    delivered(store, 1)
    for args in (("FAIL", "FORCE", "IDS", "1", "1-0"), ("FAIL", "RETRYCOUNT", "5", "IDS", "1",
                 "1-0", "FORCE"), ("fail", "ids", "1", "1-0", "force")):  # fmt: skip
        assert nack(store, *args) == 1


def test_redis_py_method(store: rstore.Store) -> None:
    m1 = store.xadd("s", {"foo": "bar"})
    m2 = store.xadd("s", {"foo": "bar"})
    store.xgroup_create("s", "g", 0)
    store.xreadgroup("g", "c", streams={"s": ">"})
    assert store.xnack("s", "g", "SILENT", m1, m2) == 2
    assert store.xnack("s", "g", "FAIL", m1, retrycount=5, force=True) == 1
    for call in (
        lambda: store.xnack("s", "g", "INVALID", m1),
        lambda: store.xnack("s", "g", "FAIL"),
        lambda: store.xnack("s", "g", "FAIL", m1, retrycount=-1),
    ):
        with pytest.raises(rstore.DataError):
            call()


@pytest.mark.parametrize("server", ["valkey", "redis8"])
def test_files_hold_them_for_servers_without_xnack(
    store: rstore.Store, tmp_path: Path, server: str
) -> None:
    """RDB 9-12 have no entry without an owner: each released one is written pending to the
    consumer it was released from (or to "rstore:released"), delivered at time 0, so the
    server loads the file, and a DUMP under its deep checks (sanitize-dump-payload yes), and
    its next claim takes them."""
    binary = find_server_binary(server)
    if binary is None:
        pytest.skip(f"{server} is not installed")
    delivered(store, 3)
    nack(store, "FAIL", "IDS", "1", "1-0")
    store.execute("XADD", "s", "4-0", "f", "v4")
    nack(store, "FAIL", "IDS", "1", "4-0", "FORCE")
    version = 12 if server == "redis8" else 11
    store.save(tmp_path / "dump.rdb", rdb_version=version)
    payload = store.dump("s", rdb_version=version)
    store.restore("copy", 0, store.dump("s"))
    assert store.execute("XPENDING", "copy", "g")[3] == [[b"c1", b"3"], [b"rstore:released", b"1"]]
    (tmp_path / "server").mkdir()
    with ValkeyServer(binary, tmp_path / "server", rdb_file=str(tmp_path / "dump.rdb")) as served:
        client = redis.Redis(HOST, served.port)
        rows = client.xpending_range("s", "g", "-", "+", 10)
        assert [(r["message_id"], r["consumer"]) for r in rows] == [
            (b"1-0", b"c1"), (b"2-0", b"c1"), (b"3-0", b"c1"), (b"4-0", b"rstore:released")
        ]  # fmt: skip
        claimed = client.xautoclaim("s", "g", "c9", 60_000, "0", justid=True)
        assert claimed == [b"1-0", b"4-0"]  # delivered at time 0: idle long enough
        assert client.config_set("sanitize-dump-payload", "yes")
        assert client.restore("checked", 0, payload)
        assert client.xpending("checked", "g")["pending"] == 4
        client.close()
