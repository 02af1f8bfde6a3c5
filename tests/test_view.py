"""Store.view (rstore.StoreView) and rstore.iter_columns: the read APIs that Spark, exports and
replay plan and read with -- one snapshot, node boundaries, the same entries XRANGE gives."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import rstore
from rstore import StoreView, iter_columns


@pytest.fixture
def store(tmp_path: Path) -> rstore.Store:
    s = rstore.Store(str(tmp_path / "s"), node_max_entries=10)
    yield s
    s.close()


def _xrange(store: rstore.Store, key: str, start: str = "-", end: str = "+") -> list[object]:
    """XRANGE's reply, each entry as a ``(id, [field, value, ...])`` tuple."""
    return [tuple(e) for e in store.execute("XRANGE", key, start, end)]


def _decoded(
    nodes: list[tuple[tuple[int, int], bytes]],
    start: tuple[int, int] = (0, 0),
    end: tuple[int, int] = (2**64 - 1, 2**64 - 1),
) -> list[tuple[bytes, list[bytes]]]:
    return [(b"%d-%d" % i, f) for b in iter_columns(nodes, start, end) for i, f in b.entries()]


def test_view_gives_keys_states_nodes_and_index(store: rstore.Store) -> None:
    for i in range(95):
        store.xadd("events:a", {"n": i}, id=f"{i + 1}-0")
    store.xadd("events:b", {"x": "y"}, id="5-5")
    store.xadd("other", {"x": "y"})
    store.xdel("events:a", "3-0", "4-0")

    def plan(view: StoreView) -> tuple[object, ...]:
        return (
            view.keys(),
            view.keys(b"events:*"),
            view.state(b"events:a"),
            view.state(b"missing"),
            view.node_index(b"events:a"),
            list(view.nodes(b"events:a")),
            list(view.nodes(b"events:a", (41, 0), (57, 0))),
        )

    keys, matching, state, missing, index, nodes, middle = store.view(plan)
    assert keys == [b"events:a", b"events:b", b"other"]
    assert matching == [b"events:a", b"events:b"]
    assert state is not None and (state.length, state.last_id) == (93, (95, 0))
    assert state.max_deleted_entry_id == (4, 0)
    assert missing is None
    assert sum(n.entries for n in index) == 93
    assert [n.master_id for n in index] == [m for m, _ in nodes]
    assert all(n.offset is None for n in index)
    assert _decoded(nodes) == _xrange(store, "events:a")
    assert [m for m, _ in middle] == [(41, 0), (51, 0)]  # only the nodes that hold 41..57
    assert _decoded(middle, (41, 0), (57, 0)) == _xrange(store, "events:a", "41", "57")


def test_a_view_cannot_be_used_after_its_function_returned(store: rstore.Store) -> None:
    store.xadd("s", {"a": 1})
    kept = store.view(lambda view: view)
    with pytest.raises(rstore.RStoreError, match="after the function"):
        kept.keys()


def test_a_view_is_one_snapshot_while_writers_append(store: rstore.Store) -> None:
    store.xadd("s", {"a": 0})
    go, wrote = threading.Event(), threading.Event()

    def writer() -> None:
        go.wait(5)
        with rstore.Store(store.path) as other:
            for i in range(50):
                other.xadd("s", {"a": i + 1})
        wrote.set()

    t = threading.Thread(target=writer)
    t.start()

    def plan(view: StoreView) -> tuple[object, object]:
        before = view.state(b"s")
        go.set()
        wrote.wait(5)
        return before, (view.state(b"s"), sum(n.entries for n in view.node_index(b"s")))

    before, (after, indexed) = store.view(plan)
    t.join()
    assert wrote.is_set()
    assert before == after and indexed == 1  # the 50 appends are not in this snapshot
    assert store.xlen("s") == 51


def test_iter_columns_cuts_batches_at_node_boundaries(store: rstore.Store) -> None:
    for i in range(250):
        store.xadd("s", {"i": i, "dup": "a", "dup": "b"}, id=f"{i + 1}-1")  # noqa: F601
    store.execute("XADD", "s", "300-0", "f", "1", "f", "2", "g", "3")
    nodes = store.view(lambda v: list(v.nodes(b"s")))
    batches = list(iter_columns(nodes, batch_entries=25))
    assert [b.count for b in batches] == [30] * 8 + [11]  # whole 10-entry nodes, >= 25 each
    flat = [e for b in batches for e in b.entries()]
    assert [(b"%d-%d" % i, f) for i, f in flat] == _xrange(store, "s")
    assert flat[-1][1] == [b"f", b"1", b"f", b"2", b"g", b"3"]  # pairs kept, in order
    last = next(iter(iter_columns(nodes[-1:], dedupe=True))).entries()[-1]
    assert last[1] == [b"f", b"2", b"g", b"3"]  # what a map holds: the last value
    assert list(iter_columns(nodes, (5, 0), (4, 0))) == []
    with pytest.raises(ValueError):
        list(iter_columns(nodes, batch_entries=0))
