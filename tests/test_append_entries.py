"""Store.append_entries: many XADDs in one transaction -- the same IDs, nodes, counters and
error lines as XADD one by one (checked against rstore's XADD, itself checked against
valkey-server by the oracle tests), all or nothing, bounded memory, idempotent batches."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore import ResponseError, Store


def _state(store: Store, key: str) -> tuple[Any, ...]:
    """Everything XADD decides: entries, IDs, node layout (bytes), stream counters."""
    nodes = store.view(lambda v: list(v.nodes(key.encode())))
    info = store.execute("XINFO", "STREAM", key)
    return (store.execute("XRANGE", key, "-", "+"), nodes, info)


def _xadd_all(store: Store, entries: list[tuple[str, str | None, list[str]]]) -> None:
    for name, sid, fv in entries:
        store.execute("XADD", name, "*" if sid is None else sid, *fv)


# Explicit IDs (every XADD form) and automatic IDs after a last ID in the future, so that
# both stores must choose the same automatic IDs; field sets that change (not SAMEFIELDS),
# integers (stored as listpack integers), long values (a new node by size) and a value that
# is not UTF-8.
FUTURE = 9_000_000_000_000
MIXED: list[tuple[str, str | None, list[Any]]] = [
    ("a", "5-1", ["f", "v"]),
    ("a", "5-*", ["f", "v2"]),
    ("a", "7", ["g", "1", "h", "-12"]),
    ("b", f"{FUTURE}-3", ["x", "y"]),
    ("a", f"{FUTURE}", ["f", "future"]),
    ("a", None, ["f", "v3"]),
    ("b", None, ["x", "y" * 3000]),
    ("b", "*", ["x", "z"]),
    ("b", f"{FUTURE + 1}-*", ["only", "one"]),
    *[("c", f"1-{i}", ["n", str(i), "bin", "\udcff" if i == 3 else "ok"]) for i in range(1, 40)],
    ("a", None, ["f", "v4", "f", "dup"]),
]


def _encoded(entries: list[tuple[str, str | None, list[Any]]]) -> list[Any]:
    return [(n, i, [x.encode("utf-8", "surrogateescape") for x in fv]) for n, i, fv in entries]


@pytest.mark.parametrize("node_max_entries", [100, 5, 0])
def test_same_entries_nodes_and_counters_as_xadd(tmp_path: Path, node_max_entries: int) -> None:
    with (
        Store(tmp_path / "x", node_max_entries=node_max_entries, node_max_bytes=512) as by_xadd,
        Store(tmp_path / "b", node_max_entries=node_max_entries, node_max_bytes=512) as bulk,
    ):
        # Existing streams: the load continues their last node, as XADD would.
        for s in (by_xadd, bulk):
            s.execute("XADD", "a", "1-1", "f", "v")
            s.execute("XADD", "c", "1-0", "n", "0", "bin", "ok")
        entries = _encoded(MIXED)
        _xadd_all(by_xadd, entries)
        report = bulk.append_entries(entries)
        for key in ("a", "b", "c"):
            assert _state(bulk, key) == _state(by_xadd, key)
        assert report.applied
        assert report.added == len(MIXED)
        assert report.streams[b"c"] == (39, b"1-39")
        assert (
            report.streams[b"b"][1]
            == by_xadd.execute("XINFO", "STREAM", "b")[
                by_xadd.execute("XINFO", "STREAM", "b").index(b"last-generated-id") + 1
            ]
        )


def test_automatic_ids_follow_xadd_under_one_time_snapshot(tmp_path: Path) -> None:
    import time

    with Store(tmp_path / "s") as store:
        before = time.time_ns() // 1_000_000
        store.append_entries(("fresh", None, ["k", str(i)]) for i in range(250))
        after = time.time_ns() // 1_000_000
        ids = [e[0] for e in store.xrange("fresh")]
        ms = {int(i.split(b"-")[0]) for i in ids}
        assert len(ms) == 1 and before <= ms.pop() <= after  # one snapshot for the batch
        assert [int(i.split(b"-")[1]) for i in ids] == list(range(250))


@pytest.mark.parametrize(
    ("entries", "bad"),
    [
        ([("s", "5-0", ["f", "v"]), ("t", "1-1", ["f", "v"]), ("s", "5-0", ["f", "v"])], 2),
        ([("t", "1-1", ["f", "v"]), ("s", "3-0", ["f", "v"])], 1),  # s's last ID is 4-0
        ([("s", "0-0", ["f", "v"])], 0),
        ([("t", "1-1", ["f", "v"]), ("s", "5-x", ["f", "v"])], 1),
        ([("s", None, ["f"])], 0),
        ([("s", "0-0", ["f"])], 0),  # XADD checks the arity before the 0-0 rule
        ([("s", None, [])], 0),
        ([("t", "18446744073709551615-18446744073709551615", ["f", "v"]), ("t", None, ["f"])], 1),
        (
            [
                ("t", "18446744073709551615-18446744073709551615", ["f", "v"]),
                ("t", None, ["f", "v"]),
            ],
            1,
        ),
    ],
)
def test_refused_entry_gives_xadds_line_and_changes_nothing(
    tmp_path: Path, entries: list[Any], bad: int
) -> None:
    with Store(tmp_path / "b") as store, Store(tmp_path / "x") as oracle:
        for s in (store, oracle):
            s.execute("XADD", "s", "4-0", "f", "v")
        before = (store.execute("KEYS", "*"), _state(store, "s"))
        with pytest.raises(ResponseError) as refused:
            store.append_entries(entries)
        # What XADD answers for the same entry after the ones before it.
        with pytest.raises(ResponseError) as expected:
            for name, sid, fv in entries:
                oracle.execute("XADD", name, "*" if sid is None else sid, *fv)
        assert refused.value.line == expected.value.line
        if sys.version_info >= (3, 11):  # exceptions have notes
            assert f"entry {bad} " in refused.value.__notes__[0]
        assert (store.execute("KEYS", "*"), _state(store, "s")) == before


class _Lazy:
    """A re-iterable load made on the fly: holds nothing but a count."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.passes = 0

    def __iter__(self) -> Iterator[tuple[bytes, None, list[bytes]]]:
        self.passes += 1
        value = b"v" * 400
        for i in range(self.n):
            yield (b"s%d" % (i % 3), None, [b"i", b"%d" % i, b"payload", value])


def test_a_big_load_runs_in_bounded_memory_and_survives_map_growth(tmp_path: Path) -> None:
    n = 15_000  # ~6 MB of entries into a 1 MiB map: it must grow, and the load start over
    entries = _Lazy(n)
    with Store(tmp_path / "s", sync=False, map_size=1 << 20) as store:
        tracemalloc.start()
        try:
            report = store.append_entries(entries)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert entries.passes > 1  # the map grew mid-way: read again from the start
        assert report.added == n
        assert sum(store.xlen(f"s{k}") for k in range(3)) == n
        assert store.xrange("s1", count=1)[0][1] == {b"i": b"1", b"payload": b"v" * 400}
        assert peak < 2 << 20, peak  # the entries alone are ~6 MB


def test_one_shot_iterator_that_must_be_read_twice_is_refused_writing_nothing(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "s", sync=False, map_size=1 << 20) as store:
        gen = ((b"s", None, [b"payload", b"v" * 200]) for _ in range(40_000))
        with pytest.raises(ValueError, match="one-shot iterator"):
            store.append_entries(gen)
        assert store.execute("KEYS", "*") == []
        # Small enough not to grow: a generator is fine.
        report = store.append_entries((b"s", None, [b"k", b"%d" % i]) for i in range(100))
        assert report.added == 100


def test_batches_apply_once(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as store:
        assert store.last_batch("q1") is None
        first = store.append_entries([("s", None, ["k", "1"])], batch=("q1", 0))
        assert first.applied and store.last_batch("q1") == 0
        again = store.append_entries([("s", None, ["k", "1"])], batch=("q1", 0))
        assert again == rstore.AppendReport(0, {}, False)
        older = store.append_entries([("s", None, ["k", "1"])], batch=("q1", 0))
        assert not older.applied
        other = store.append_entries([("s", None, ["k", "2"])], batch=("q2", 0))
        assert other.applied
        assert store.append_entries([("s", None, ["k", "3"])], batch=("q1", 5)).applied
        assert store.last_batch("q1") == 5 and store.last_batch(b"q2") == 0
        assert [e[1][b"k"] for e in store.xrange("s")] == [b"1", b"2", b"3"]
        # A refused load records no batch number.
        with pytest.raises(ResponseError):
            store.append_entries([("s", "1-1", ["k", "4"])], batch=("q1", 6))
        assert store.last_batch("q1") == 5
        with pytest.raises(ValueError):
            store.append_entries([], batch=("", 1))
        with pytest.raises(ValueError):
            store.append_entries([], batch=("q", -1))


def test_bookmarks_are_recorded_with_the_entries_or_not_at_all(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as store:
        assert store.bookmark("r") is None
        store.append_entries([("s", "1-1", ["k", "1"])], bookmark=("r", b"\x00pos 1"))
        assert store.bookmark("r") == b"\x00pos 1"
        store.append_entries([("s", "2-1", ["k", "2"])], bookmark=(b"r", b"pos 2"))
        assert store.bookmark(b"r") == b"pos 2"
        # A refused load leaves the bookmark of the last load that was committed.
        with pytest.raises(ResponseError):
            store.append_entries(
                [("s", "3-1", ["k", "3"]), ("s", "1-1", ["k", "4"])], bookmark=("r", b"pos 3")
            )
        assert store.bookmark("r") == b"pos 2"
        assert [e[0] for e in store.xrange("s")] == [b"1-1", b"2-1"]
        # A batch skipped as applied before records nothing.
        store.append_entries([("s", "4-1", ["k", "5"])], batch=("b", 1))
        skipped = store.append_entries(
            [("s", "5-1", ["k", "6"])], batch=("b", 1), bookmark=("r", b"x")
        )
        assert not skipped.applied and store.bookmark("r") == b"pos 2"
        # An empty load moves the bookmark alone; bookmarks are not keys.
        store.append_entries([], bookmark=("r", b""))
        assert store.bookmark("r") == b"" and store.keys() == [b"s"]
        with pytest.raises(ValueError):
            store.append_entries([], bookmark=("r", "text"))  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            store.append_entries([], bookmark=("", b"x"))


def test_ids_as_tuples_are_explicit_ids(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as store:
        store.append_entries([("s", (5, 1), ["k", "1"]), ("s", (5, 2), ["k", "2"])])
        assert [e[0] for e in store.xrange("s")] == [b"5-1", b"5-2"]
        for bad in [(5, -1), (1 << 64, 0), (5,), ("5", 3)]:
            with pytest.raises(ResponseError) as err:
                store.append_entries([("s", bad, ["k", "v"])])
            assert err.value.line == "ERR Invalid stream ID specified as stream command argument"
        with pytest.raises(ResponseError, match="equal or smaller"):
            store.append_entries([("s", (5, 2), ["k", "3"])])
