"""XREADGROUP ... CLAIM (Redis 8.4) and the reply limits MAXCOUNT / MAXSIZE of XREAD and
XREADGROUP (Redis 8.10).

No server of those versions can be installed here: the expected replies and error texts are
Redis's own tests' (``stream-cgroups.tcl``), its documentation's and redis-py 8.1's tests'
(``docs/semantics.md`` lists them)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore import ResponseError


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with rstore.Store(tmp_path / "store", sync=False) as s:
        yield s


def refused(store: rstore.Store, *argv: Any) -> str:
    with pytest.raises(ResponseError) as caught:
        store.execute(*argv)
    return caught.value.line


def fill(store: rstore.Store, key: str, n: int, group: str | None = "g") -> None:
    for i in range(1, n + 1):
        store.execute("XADD", key, f"{i}-0", "f", f"v{i}")
    if group is not None:
        store.execute("XGROUP", "CREATE", key, group, "0")


def claim(store: rstore.Store, consumer: str, idle: int, *options: str, key: str = "s") -> Any:
    return store.execute(
        "XREADGROUP", "GROUP", "g", consumer, *options, "CLAIM", str(idle), "STREAMS", key, ">"
    )


# ----------------------------------------------------------------------------- CLAIM


def test_claimed_entries_come_first_with_idle_time_and_deliveries(store: rstore.Store) -> None:
    """redis-py's test_xreadgroup_with_claim_min_idle_time, and the reply's element types."""
    fill(store, "s", 2)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    time.sleep(0.11)
    store.execute("XADD", "s", "3-0", "f", "v3")
    [[key, entries]] = claim(store, "c2", 100)
    assert key == b"s"
    assert [e[0] for e in entries] == [b"1-0", b"2-0", b"3-0"]
    for _, _, idle, deliveries in entries[:2]:
        assert type(idle) is int and idle >= 100
        assert deliveries == 1  # delivered once before this claim
    assert entries[2][1:] == [[b"f", b"v3"], 0, 0]
    pending = store.execute("XPENDING", "s", "g", "-", "+", "10")
    assert [(p[0], p[1], p[3]) for p in pending] == [
        (b"1-0", b"c2", 2), (b"2-0", b"c2", 2), (b"3-0", b"c2", 1)
    ]  # fmt: skip


def test_entries_not_idle_enough_stay_with_their_owner(store: rstore.Store) -> None:
    fill(store, "s", 2)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    assert claim(store, "c2", 60_000) is None
    assert store.execute("XPENDING", "s", "g")[3] == [[b"c1", b"2"]]


def test_count_covers_claimed_and_new_the_longest_idle_first(store: rstore.Store) -> None:
    fill(store, "s", 6)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "COUNT", "3", "STREAMS", "s", ">")
    now = int(time.time() * 1000)
    for entry_id, age in (("1-0", 30_000), ("2-0", 50_000), ("3-0", 40_000)):
        store.execute("XCLAIM", "s", "g", "c1", "0", entry_id, "TIME", str(now - age))
    [[_, entries]] = claim(store, "c2", 10, "COUNT", "2")
    assert [e[0] for e in entries] == [b"2-0", b"3-0"]
    [[_, entries]] = claim(store, "c2", 10_000_000, "COUNT", "2")
    assert [e[0] for e in entries] == [b"4-0", b"5-0"]  # nothing idle that long: new ones
    assert [e[2:] for e in entries] == [[0, 0], [0, 0]]


def test_noack_applies_to_new_entries_only(store: rstore.Store) -> None:
    fill(store, "s", 1)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    store.execute("XADD", "s", "2-0", "f", "v2")
    [[_, entries]] = claim(store, "c2", 0, "NOACK")
    assert [e[0] for e in entries] == [b"1-0", b"2-0"]
    assert store.execute("XPENDING", "s", "g")[0] == 1  # 1-0 claimed, 2-0 not pending


def test_deleted_entries_are_not_claimed(store: rstore.Store) -> None:
    fill(store, "s", 2)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    store.execute("XTRIM", "s", "MAXLEN", "0")
    assert claim(store, "c2", 0) is None


def test_claim_with_a_history_id_is_ignored(store: rstore.Store) -> None:
    fill(store, "s", 3)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    reply = store.execute("XREADGROUP", "GROUP", "g", "c1", "CLAIM", "1000", "STREAMS", "s", "0")
    assert [len(e) for e in reply[0][1]] == [2, 2, 2]


def test_claim_over_several_streams(store: rstore.Store) -> None:
    fill(store, "a", 2)
    fill(store, "b", 2)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "a", "b", ">", ">")
    store.execute("XADD", "a", "3-0", "f", "x")
    reply = store.execute(
        "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "0", "STREAMS", "a", "b", ">", ">"
    )
    assert [(k, [e[0] for e in es]) for k, es in reply] == [
        (b"a", [b"1-0", b"2-0", b"3-0"]), (b"b", [b"1-0", b"2-0"])
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (("CLAIM", "test"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "5.5"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "+10"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "-0"), "ERR min-idle-time is not an integer"),
        (("CLAIM", "-10"), "ERR min-idle-time must be a positive integer"),
    ],
)
def test_claim_refusals(store: rstore.Store, argv: tuple[str, ...], line: str) -> None:
    fill(store, "s", 1)
    got = refused(store, "XREADGROUP", "GROUP", "g", "c", *argv, "STREAMS", "s", ">")
    assert got == line
    assert store.execute("XPENDING", "s", "g")[0] == 0


def test_claim_belongs_to_xreadgroup(store: rstore.Store) -> None:
    fill(store, "s", 1, group=None)
    line = refused(store, "XREAD", "COUNT", "2", "CLAIM", "10", "STREAMS", "s", "0-0")
    assert line.startswith("ERR The CLAIM option is only supported")
    assert refused(store, "XREADGROUP", "GROUP", "g", "CLAIM", "50", "c", "STREAMS", "s", ">") == (
        "ERR syntax error"
    )


def test_a_blocked_claim_wakes_when_an_entry_becomes_idle(store: rstore.Store) -> None:
    fill(store, "s", 1)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    started = time.monotonic()
    reply = claim(store, "c2", 300, "BLOCK", "5000")
    waited = time.monotonic() - started
    assert [e[0] for e in reply[0][1]] == [b"1-0"]
    assert 0.25 <= waited < 1.5


def test_a_blocked_claim_wakes_on_a_new_entry(store: rstore.Store, tmp_path: Path) -> None:
    fill(store, "s", 1)
    store.execute("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    got: list[Any] = []
    reader = threading.Thread(
        target=lambda: got.append(claim(store, "c2", 60_000, "BLOCK", "5000"))
    )
    reader.start()
    time.sleep(0.2)
    with rstore.Store(tmp_path / "store", sync=False) as writer:
        writer.execute("XADD", "s", "2-0", "f", "v2")
    reader.join(10)
    assert [e[0] for e in got[0][0][1]] == [b"2-0"]


def test_redis_py_gives_claimed_entries_as_four_tuples(store: rstore.Store) -> None:
    fill(store, "s", 1)
    store.xreadgroup("g", "c1", {"s": ">"})
    store.xadd("s", {"f": "v2"}, id="2-0")
    [[_, entries]] = store.xreadgroup("g", "c2", {"s": ">"}, claim_min_idle_time=0)
    assert [(e[0], e[1], e[3]) for e in entries] == [
        (b"1-0", {b"f": b"v1"}, 1), (b"2-0", {b"f": b"v2"}, 0)
    ]  # fmt: skip


# ----------------------------------------------------------------------------- MAXCOUNT / MAXSIZE


def test_maxcount_limits_the_reply_across_streams_in_order(store: rstore.Store) -> None:
    fill(store, "s1", 2, group=None)
    fill(store, "s2", 2, group=None)
    reply = store.execute("XREAD", "COUNT", "2", "MAXCOUNT", "3", "STREAMS", "s1", "s2", "0", "0")
    assert [(k, len(es)) for k, es in reply] == [(b"s1", 2), (b"s2", 1)]
    reply = store.execute("XREAD", "MAXCOUNT", "2", "STREAMS", "s1", "s2", "0", "0")
    assert [(k, len(es)) for k, es in reply] == [(b"s1", 2)]  # s2 left out


def test_maxsize_always_gives_one_entry(store: rstore.Store) -> None:
    fill(store, "s1", 2, group=None)
    fill(store, "s2", 1, group=None)
    reply = store.execute("XREAD", "MAXSIZE", "1", "STREAMS", "s1", "s2", "0", "0")
    assert reply == [[b"s1", [[b"1-0", [b"f", b"v1"]]]]]
    store.execute("XADD", "big", "1-0", "f", "x" * 100_000)
    assert len(store.execute("XREAD", "MAXSIZE", "10", "STREAMS", "big", "0")[0][1]) == 1
    everything = store.execute("XREAD", "MAXSIZE", "65536", "STREAMS", "s1", "s2", "0", "0")
    assert [len(es) for _, es in everything] == [2, 1]


def test_maxsize_counts_reply_bytes(store: rstore.Store) -> None:
    """Each entry of ``XADD s N-0 f v<N>`` is 32 bytes in a RESP2 reply (``*2``, ``$3 N-0``,
    ``*2``, ``$1 f``, ``$2 vN``, each line ending in CRLF); no entry is taken once the reply
    has reached MAXSIZE."""
    fill(store, "s", 5, group=None)
    assert len(store.execute("XREAD", "MAXSIZE", "32", "STREAMS", "s", "0")[0][1]) == 1
    assert len(store.execute("XREAD", "MAXSIZE", "64", "STREAMS", "s", "0")[0][1]) == 2
    assert len(store.execute("XREAD", "MAXSIZE", "65", "STREAMS", "s", "0")[0][1]) == 3


def test_xreadgroup_delivers_only_what_the_limits_let_through(store: rstore.Store) -> None:
    fill(store, "s1", 3)
    fill(store, "s2", 3)
    reply = store.execute(
        "XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "MAXCOUNT", "4", "STREAMS", "s1", "s2",
        ">", ">",
    )  # fmt: skip
    assert [(k, len(es)) for k, es in reply] == [(b"s1", 3), (b"s2", 1)]
    assert store.execute("XPENDING", "s2", "g")[0] == 1  # what was not sent is not pending
    history = store.execute(
        "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "s1", "s2", "0", "0"
    )
    assert [(k, len(es)) for k, es in history] == [(b"s1", 2)]
    again = store.execute("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s2", ">")
    assert [e[0] for e in again[0][1]] == [b"2-0", b"3-0"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (("MAXCOUNT", "0"), "ERR MAXCOUNT must be a positive integer"),
        (("MAXCOUNT", "-1"), "ERR MAXCOUNT must be a positive integer"),
        (("MAXSIZE", "0"), "ERR MAXSIZE must be a positive integer"),
        (("MAXCOUNT", "x"), "ERR value is not an integer or out of range"),
        (("COUNT", "2", "MAXCOUNT", "1"), "ERR MAXCOUNT must be greater than or equal to COUNT"),
        (("MAXCOUNT", "1", "COUNT", "2"), "ERR MAXCOUNT must be greater than or equal to COUNT"),
    ],
)
def test_limit_refusals(store: rstore.Store, argv: tuple[str, ...], line: str) -> None:
    fill(store, "s", 1)
    assert refused(store, "XREAD", *argv, "STREAMS", "s", "0") == line
    assert refused(store, "XREADGROUP", "GROUP", "g", "c", *argv, "STREAMS", "s", ">") == line
    assert store.execute("XPENDING", "s", "g")[0] == 0


def test_redis_py_methods_send_the_limits(store: rstore.Store) -> None:
    """redis-py's test_xread_max_count_cumulative_across_streams and its XREADGROUP twin."""
    for key in ("a", "b"):
        for i in range(3):
            store.xadd(key, {"i": i})
    reply = store.xread({"a": 0, "b": 0}, count=3, max_count=4)
    assert sum(len(entries) for _, entries in reply) == 4
    store.xgroup_create("a", "g", 0)
    store.xgroup_create("b", "g", 0)
    reply = store.xreadgroup("g", "c", {"a": ">", "b": ">"}, count=3, max_count=4)
    assert sum(len(entries) for _, entries in reply) == 4
    assert len(store.xread({"a": 0}, max_size=1)[0][1]) == 1
