"""The lag rules (rstore/streams/lag.py) without a server: a scenario of XADD, XDEL, XTRIM,
XGROUP CREATE/SETID and XREADGROUP, with what Redis 8.2.3 answered to XINFO GROUPS after every
step (``name, last-delivered-id, entries-read, lag``; recorded by running the same steps on the
server with redis-py, RESP2).  Deletions after a group's position make its counter unknowable
(nil), trims and reads to the end make it known again.  valkey-server 8.0.1 answers the same
but in the three steps marked, where its lag ignores what the trim removed
(docs/semantics.md, "Consumer group lag").

The live oracle tests (tests/oracle/test_random_groups.py) compare many more sequences with a
running server; this tier runs everywhere, and names the rule that broke."""

from __future__ import annotations

from pathlib import Path

import pytest

import rstore
from rstore.streams.lag import counters, group_lag

Row = tuple[str, str, int | None, int | None]

# (command, XINFO GROUPS s after it) as Redis 8.2.3 answered
REDIS_8_2: list[tuple[list[str], list[Row]]] = [
    (["XADD", "s", "1-0", "f", "1"], []),
    (["XADD", "s", "2-0", "f", "2"], []),
    (["XADD", "s", "3-0", "f", "3"], []),
    (["XADD", "s", "4-0", "f", "4"], []),
    (["XADD", "s", "5-0", "f", "5"], []),
    (["XGROUP", "CREATE", "s", "g", "0"], [("g", "0-0", None, 5)]),
    (["XGROUP", "CREATE", "s", "tail", "$"], [("g", "0-0", None, 5), ("tail", "5-0", None, 0)]),
    (
        ["XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"],
        [("g", "2-0", 2, 3), ("tail", "5-0", None, 0)],
    ),
    (["XDEL", "s", "4-0"], [("g", "2-0", 2, None), ("tail", "5-0", None, 0)]),
    (
        ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"],
        [("g", "3-0", None, None), ("tail", "5-0", None, 0)],
    ),
    (
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        [("g", "5-0", 5, 0), ("tail", "5-0", None, 0)],
    ),
    (
        ["XGROUP", "SETID", "s", "tail", "0", "ENTRIESREAD", "1"],
        [("g", "5-0", 5, 0), ("tail", "0-0", 1, None)],
    ),
    (["XDEL", "s", "1-0"], [("g", "5-0", 5, 0), ("tail", "0-0", 1, None)]),
    (
        ["XGROUP", "CREATE", "s", "fromzero", "0"],
        [("fromzero", "0-0", None, None), ("g", "5-0", 5, 0), ("tail", "0-0", 1, None)],
    ),
    (
        ["XGROUP", "SETID", "s", "tail", "2-0"],
        [("fromzero", "0-0", None, None), ("g", "5-0", 5, 0), ("tail", "2-0", None, None)],
    ),
    (
        ["XADD", "s", "6-0", "f", "6"],
        [("fromzero", "0-0", None, None), ("g", "5-0", 5, 1), ("tail", "2-0", None, None)],
    ),
    (  # valkey: g's lag 1 (an empty stream has nothing left to read)
        ["XTRIM", "s", "MAXLEN", "0"],
        [("fromzero", "0-0", None, 0), ("g", "5-0", 5, 0), ("tail", "2-0", None, 0)],
    ),
    (  # valkey: g's lag 1
        ["XGROUP", "CREATE", "s", "late", "0"],
        [
            ("fromzero", "0-0", None, 0),
            ("g", "5-0", 5, 0),
            ("late", "0-0", None, 0),
            ("tail", "2-0", None, 0),
        ],
    ),
    (  # valkey: g's lag 2 (g is before the first entry: the stream's length is its lag)
        ["XADD", "s", "7-0", "f", "7"],
        [
            ("fromzero", "0-0", None, 1),
            ("g", "5-0", 5, 1),
            ("late", "0-0", None, 1),
            ("tail", "2-0", None, 1),
        ],
    ),
]


def _groups(store: rstore.Store) -> list[Row]:
    rows = []
    for g in store.execute("XINFO", "GROUPS", "s"):
        d = dict(zip(g[0::2], g[1::2], strict=True))
        rows.append(
            (d[b"name"].decode(), d[b"last-delivered-id"].decode(), d[b"entries-read"], d[b"lag"])
        )
    return rows


@pytest.mark.parametrize("reopen", [False, True], ids=["open", "reopened-each-step"])
def test_xinfo_groups_lag_follows_redis_step_by_step(tmp_path: Path, reopen: bool) -> None:
    path = str(tmp_path / "s")
    store = rstore.Store(path, sync=False)
    try:
        for step, (argv, want) in enumerate(REDIS_8_2):
            store.execute(*argv)
            if reopen:
                store.close()
                store = rstore.Store(path, sync=False)
            assert _groups(store) == want, f"step {step}: {' '.join(argv)}"
    finally:
        store.close()


def test_the_pure_rule_gives_the_same_lag_as_the_store(tmp_path: Path) -> None:
    """group_lag over the stream's state (as an RDB file holds it) answers as XINFO does."""
    with rstore.Store(str(tmp_path / "s"), sync=False) as store:
        for argv, want in REDIS_8_2:
            store.execute(*argv)
            state = store.view(lambda v: v.state(b"s"))
            assert state is not None
            for name, last, entries_read, lag in want:
                ms, seq = (int(x) for x in last.split("-"))
                got = group_lag(
                    counters(state), (ms, seq), -1 if entries_read is None else entries_read
                )
                assert got == lag, f"{' '.join(argv)}: group {name}"


def test_files_without_counters_are_read_as_redis_loads_them() -> None:
    """RDB type 15 (Redis < 7.0) has no first ID, max deleted ID or entries added: loading
    such a file, Redis takes no deletions, every live entry as added, and the first live
    entry's ID as the first ID (rdb.c, after the nodes are loaded)."""
    from rstore.model import StreamState

    old = StreamState(3, (9, 0), None, None, None, 1)
    c = counters(old, (1, 0))
    assert (c.first_id, c.max_deleted_entry_id, c.entries_added) == ((1, 0), (0, 0), 3)
    assert group_lag(c, (9, 0), None) == 0  # at the last ID: everything read
    assert group_lag(c, (0, 0), None) == 3  # before the first entry: nothing read
    assert group_lag(c, (1, 0), None) == 2  # at the first entry: one read
    assert counters(StreamState(0, (0, 0), None, None, None, 0)).first_id == (0, 0)
