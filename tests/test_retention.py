"""Retention policies (rstore's own): maximum age and entries per stream or pattern, with a
reference policy, applied as ``~`` trimming when an XADD opens a node."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rstore
from rstore import Retention


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with rstore.Store(tmp_path / "store", sync=False, node_max_entries=10) as s:
        yield s


def add(store: rstore.Store, key: str, first: int, last: int) -> None:
    for i in range(first, last + 1):
        store.xadd(key, {"n": i}, id=f"{i}-0")


def ids(store: rstore.Store, key: str) -> list[int]:
    return [int(entry_id.split(b"-")[0]) for entry_id, _ in store.xrange(key)]


def test_max_entries_now_and_on_every_node_opened(store: rstore.Store) -> None:
    add(store, "orders", 1, 100)
    assert store.set_retention("orders", max_entries=30) == {b"orders": 70}
    assert ids(store, "orders") == list(range(71, 101))  # whole nodes: 71-80 ... 91-100
    add(store, "orders", 101, 110)  # 101 opens a node, but 31 - 10 is below the limit
    assert store.xlen("orders") == 40
    add(store, "orders", 111, 111)  # opens a node: 71-80 goes
    assert ids(store, "orders") == list(range(81, 112))


def test_max_age_by_the_entries_id_time(store: rstore.Store) -> None:
    now = int(time.time() * 1000)
    ages = [*range(9000, 8000, -100), 3000, 20, 10]  # a node of ten old ones, then a mixed one
    for age_s in ages:
        store.xadd("events", {"age": age_s}, id=f"{now - age_s * 1000}-0")
    store.xadd("other", {"f": "v"}, id="1-0")
    removed = store.set_retention("ev*", max_age_ms=3600_000)
    assert removed == {b"events": 10}  # other does not match
    assert [int(f[b"age"]) for _, f in store.xrange("events")] == [3000, 20, 10]


def test_acked_never_drops_what_a_group_has_not_acknowledged(store: rstore.Store) -> None:
    add(store, "q", 1, 50)
    store.xgroup_create("q", "g", "0")
    assert store.set_retention("q", max_entries=0, ref="acked") == {b"q": 0}
    delivered = store.xreadgroup("g", "c", {"q": ">"}, count=25)[0][1]
    store.xack("q", "g", *[entry_id for entry_id, _ in delivered[:15]])
    add(store, "q", 51, 51)  # opens a node: 1-10 read and acknowledged go; 11-20 not all
    assert ids(store, "q")[0] == 11
    store.xack("q", "g", *[entry_id for entry_id, _ in delivered[15:]])
    add(store, "q", 52, 61)
    assert ids(store, "q")[0] == 21  # 21-30 were never delivered: they stay
    assert store.xpending("q", "g")["pending"] == 0


def test_delref_drops_the_pending_references(store: rstore.Store) -> None:
    add(store, "q", 1, 40)
    store.xgroup_create("q", "g", "0")
    store.xreadgroup("g", "c", {"q": ">"})
    assert store.set_retention("q", max_entries=15, ref="delref") == {b"q": 20}
    assert store.xpending("q", "g")["pending"] == 20
    store.set_retention("q", max_entries=15)  # keepref: the references stay behind
    add(store, "q", 41, 41)
    assert store.xpending("q", "g")["pending"] == 20


def test_the_exact_name_then_the_longest_pattern_decides(store: rstore.Store) -> None:
    for key in ("logs:app:1", "logs:db", "orders"):
        add(store, key, 1, 50)
    store.set_retention("*", max_entries=40)
    store.set_retention("logs:*", max_entries=30)
    store.set_retention("logs:app:*", max_entries=20)
    store.set_retention("logs:db", max_entries=10)
    assert [store.xlen(k) for k in ("logs:app:1", "logs:db", "orders")] == [20, 10, 40]
    assert [p.pattern for p in store.retention_policies()] == [
        b"*", b"logs:*", b"logs:app:*", b"logs:db"
    ]  # fmt: skip
    assert store.xinfo_stream("logs:app:1")["retention-pattern"] == b"logs:app:*"
    assert store.clear_retention("logs:db") is True
    assert store.clear_retention("logs:db") is False
    assert store.xinfo_stream("logs:db")["retention-pattern"] == b"logs:*"


def test_xinfo_shows_the_policy_only_when_there_is_one(store: rstore.Store) -> None:
    add(store, "s", 1, 1)
    plain = store.execute("XINFO", "STREAM", "s")
    assert b"retention-pattern" not in plain
    store.set_retention("s", max_age_ms=7 * 86_400_000, ref="acked")
    reply = store.execute("XINFO", "STREAM", "s")
    assert reply[len(plain) :] == [
        b"retention-pattern", b"s", b"retention-max-age-ms", 604_800_000, b"retention-ref",
        b"acked",
    ]  # fmt: skip
    full = store.execute("XINFO", "STREAM", "s", "FULL")
    assert full[-2:] == [b"retention-ref", b"acked"]


def test_append_entries_applies_it(store: rstore.Store) -> None:
    store.set_retention("bulk", max_entries=20)
    store.append_entries(("bulk", f"{i}-0", ["n", str(i)]) for i in range(1, 101))
    assert 20 <= store.xlen("bulk") <= 30


def test_policies_live_in_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with rstore.Store(path, node_max_entries=10) as store:
        store.set_retention("q", max_entries=10)
    script = (
        "import sys, rstore\n"
        "with rstore.Store(sys.argv[1]) as store:\n"
        "    for i in range(1, 101):\n"
        "        store.xadd('q', {'n': i}, id=f'{i}-0')\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    with rstore.Store(path) as store:
        assert 10 <= store.xlen("q") <= 20
        assert store.retention_policies() == [Retention(b"q", None, 10, "keepref")]
        store.flushall()  # the data goes, the settings stay
        assert store.retention_policies() == [Retention(b"q", None, 10, "keepref")]
        assert store.check() == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pattern": "", "max_entries": 1}, "a pattern is 1 to 400 bytes"),
        ({"pattern": "x" * 401, "max_entries": 1}, "a pattern is 1 to 400 bytes"),
        ({"pattern": "s", "max_entries": 1, "ref": "nope"}, "ref must be"),
        ({"pattern": "s", "max_entries": -1}, "max_entries must be a non-negative"),
        ({"pattern": "s", "max_age_ms": -5}, "max_age_ms must be a non-negative"),
    ],
)
def test_bad_policies_store_nothing(
    store: rstore.Store, kwargs: dict[str, Any], message: str
) -> None:
    pattern = kwargs.pop("pattern")
    with pytest.raises(ValueError, match=message):
        store.set_retention(pattern, **kwargs)
    assert store.retention_policies() == []


@settings(max_examples=25, deadline=None)
@given(
    limit=st.integers(0, 60),
    node=st.integers(1, 12),
    count=st.integers(0, 150),
)
def test_max_entries_bounds(tmp_path_factory: pytest.TempPathFactory, limit: int, node: int,
                            count: int) -> None:  # fmt: skip
    """After any number of XADDs the stream holds all of them up to the limit, and beyond it
    at least ``limit`` and fewer than ``limit`` plus two nodes (whole nodes go, when one
    opens)."""
    path = tmp_path_factory.mktemp("bounds")
    with rstore.Store(path, sync=False, node_max_entries=node) as store:
        store.set_retention("s", max_entries=limit)
        for i in range(1, count + 1):
            store.xadd("s", {"n": i}, id=f"{i}-0")
        length = store.xlen("s")
        if count <= limit:
            assert length == count
        else:
            assert limit <= length < limit + 2 * node
        assert ids(store, "s") == list(range(count - length + 1, count + 1))


# ----------------------------------------------------------------------------- maximum bytes


@settings(max_examples=25, deadline=None)
@given(
    limit=st.integers(0, 6000),
    sizes=st.lists(st.integers(0, 300), max_size=120),
    node=st.sampled_from([200, 1000, 4096]),
)
def test_max_bytes_bounds(tmp_path_factory: pytest.TempPathFactory, limit: int,
                          sizes: list[int], node: int) -> None:  # fmt: skip
    """After any XADDs the stream keeps its newest entries, and its nodes hold at least
    ``limit`` bytes (or all it was given) and less than ``limit`` plus the two nodes it may
    keep above it: the head node it did not take, and the tail filling until one opens."""
    path = tmp_path_factory.mktemp("bytes")
    with rstore.Store(path, sync=False, node_max_bytes=node, node_max_entries=0) as store:
        store.set_retention("s", max_bytes=limit)
        for i, size in enumerate(sizes, 1):
            store.xadd("s", {"n": i, "v": "x" * size}, id=f"{i}-0")
        length, held = store.xlen("s"), store.stream_bytes("s")
        assert ids(store, "s") == list(range(len(sizes) - length + 1, len(sizes) + 1))
        biggest = max([node, *(s + 40 for s in sizes)])  # a node holds one entry at least
        assert held < limit + 2 * biggest or length == len(sizes)
        assert store.check() == []  # the byte count is the sum of the node sizes


def test_max_bytes_with_acked_keeps_what_a_group_has_not_acknowledged(
    store: rstore.Store,
) -> None:
    add(store, "q", 1, 200)
    store.xgroup_create("q", "g", "0")
    delivered = store.xreadgroup("g", "c", {"q": ">"}, count=100)[0][1]
    store.xack("q", "g", *[entry_id for entry_id, _ in delivered[:55]])
    removed = store.set_retention("q", max_bytes=0, ref="acked")
    assert removed == {b"q": 50}  # the nodes of 1-50; 51-60 holds unacknowledged entries
    assert ids(store, "q") == list(range(51, 201))


def test_node_bytes_follow_every_change(tmp_path: Path) -> None:
    """Each way nodes change keeps the count: the sum of the node listpacks' sizes."""

    def listpack_bytes(store: rstore.Store, key: bytes) -> int:
        return store.view(lambda v: sum(len(node) for _, node in v.nodes(key)))

    with rstore.Store(tmp_path / "s", node_max_entries=10) as store:
        add(store, "a", 1, 95)
        add(store, "e", 1, 35)
        first = store.stream_bytes("a")
        store.xdel("a", "5-0", "95-0")
        store.xtrim("a", maxlen=42)  # exact: tombstones inside a node
        store.xtrim("a", maxlen=20, approximate=True)  # whole nodes
        nodes = store.view(lambda v: list(v.nodes(b"e")))
        store.append_nodes((b"b", master, node) for master, node in nodes)
        store.execute("RESTORE", "c", 0, store.execute("DUMP", "a"))
        store.execute("RENAME", "c", "d")
        store.append_entries(("d", f"{i}-0", ["n", str(i)]) for i in range(96, 300))
        store.delete("e")
        assert store.check() == []
    with rstore.Store(tmp_path / "s") as store:
        assert store.check() == []
        for key in (b"a", b"b", b"d"):
            assert store.stream_bytes(key) == listpack_bytes(store, key) > 0
        assert store.stream_bytes("a") < first
        assert store.stream_bytes("e") == 0


def test_a_format_3_store_counts_a_stream_when_first_asked(tmp_path: Path) -> None:
    """Format 3 kept no byte count: a read-only open counts from the nodes; the first open
    that may write records format 4, and each stream is counted when a policy or a caller
    first asks, then kept."""
    from store_formats import downgrade

    path = tmp_path / "s"
    with rstore.Store(path, node_max_entries=10) as store:
        add(store, "a", 1, 100)
        counted = store.stream_bytes("a")
    downgrade(str(path), 3)
    with rstore.Store(path, readonly=True) as store:
        assert (store.format, store.stream_bytes("a")) == (3, counted)
    with rstore.Store(path, node_max_entries=10) as store:
        assert store.format == rstore.FORMAT_VERSION
        add(store, "a", 101, 120)  # not counted yet: nothing to add to
        store.set_retention("a", max_bytes=counted // 2)
        assert counted // 2 <= store.stream_bytes("a") < counted
        add(store, "a", 121, 200)
        assert store.check() == []
