"""Store.append_nodes: whole stream nodes appended unchanged -- the stream ends as XADD of each
entry with its ID would leave it (entries, length, first/last ID, entries-added, what later
XADDs and group reads see), all or nothing, every node checked before anything is written."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rstore import CorruptDataError, ResponseError, Store

_INFO_KEPT = (b"length", b"last-generated-id", b"entries-added", b"first-entry", b"last-entry")


def _public_state(store: Store, key: str) -> tuple[Any, ...]:
    """What a user can see of a stream, node boundaries aside."""
    info = store.execute("XINFO", "STREAM", key)
    fields = dict(zip(info[::2], info[1::2]))
    return (
        store.execute("XRANGE", key, "-", "+"),
        store.execute("XREVRANGE", key, "+", "-", "COUNT", 3),
        [fields[name] for name in _INFO_KEPT],
    )


def _nodes(store: Store, key: str) -> list[tuple[tuple[int, int], bytes]]:
    return store.view(lambda v: list(v.nodes(key.encode())))


entries_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # ms step
        st.lists(
            st.tuples(st.sampled_from(["f", "g", "n"]), st.binary(max_size=40)),
            min_size=1,
            max_size=3,
        ),
    ),
    min_size=1,
    max_size=120,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=entries_strategy, node_max_entries=st.sampled_from([3, 100]))
def test_copied_nodes_read_as_xadd_of_each_entry(
    tmp_path_factory: pytest.TempPathFactory, entries: list[Any], node_max_entries: int
) -> None:
    base = tmp_path_factory.mktemp("nodes")
    with (
        Store(base / "src", node_max_entries=node_max_entries, node_max_bytes=300) as src,
        Store(base / "by_xadd") as by_xadd,
        Store(base / "copy") as copy,
    ):
        ms = 1_700_000_000_000
        seq = 0
        for step, pairs in entries:
            ms, seq = (ms + step, 0) if step else (ms, seq + 1)
            flat = [x for f, v in pairs for x in (f.encode(), v)]
            src.execute("XADD", "s", f"{ms}-{seq}", *flat)
            by_xadd.execute("XADD", "s", f"{ms}-{seq}", *flat)
        nodes = _nodes(src, "s")
        report = copy.append_nodes([("s", master, node) for master, node in nodes])
        assert report.added == len(entries) and report.applied
        assert report.streams == {b"s": (len(entries), b"%d-%d" % (ms, seq))}
        assert _nodes(copy, "s") == nodes  # unchanged, one for one
        assert _public_state(copy, "s") == _public_state(by_xadd, "s")
        # later writes and reads behave the same on both
        for store in (copy, by_xadd):
            store.execute("XADD", "s", f"{ms + 1}-0", "after", "copy")
            store.execute("XGROUP", "CREATE", "s", "g", "0")
        assert _public_state(copy, "s") == _public_state(by_xadd, "s")
        assert copy.execute("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") == (
            by_xadd.execute("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
        )


def _source(tmp_path: Path) -> list[tuple[tuple[int, int], bytes]]:
    with Store(tmp_path / "src", node_max_entries=4) as src:
        for i in range(1, 13):
            src.execute("XADD", "s", f"{i}-0", "f", str(i))
        return _nodes(src, "s")


def test_nodes_go_after_what_the_stream_holds(tmp_path: Path) -> None:
    nodes = _source(tmp_path)  # entries 1..12, four a node
    with Store(tmp_path / "dst") as dst:
        dst.execute("XADD", "s", "0-5", "before", "x")
        dst.append_nodes([("s", m, n) for m, n in nodes[1:]])  # entries 5..12
        assert [e[0] for e in dst.execute("XRANGE", "s", "-", "+")] == [
            b"0-5",
            *[b"%d-0" % i for i in range(5, 13)],
        ]
        assert dst.execute("XLEN", "s") == 9
        # a node not above the stream's last ID: XADD's line, nothing written
        before = _public_state(dst, "s")
        with pytest.raises(ResponseError, match="equal or smaller than the target stream top"):
            dst.append_nodes([("t", m, n) for m, n in nodes[2:]] + [("s", *nodes[0])])
        assert _public_state(dst, "s") == before
        assert dst.execute("EXISTS", "t") == 0  # the first node of the batch went too


def test_damaged_nodes_and_tombstones_are_refused_writing_nothing(tmp_path: Path) -> None:
    nodes = _source(tmp_path)
    (m0, n0), (m1, n1) = nodes[0], nodes[1]
    with Store(tmp_path / "dst") as dst:
        damaged = bytearray(n1)
        damaged[-3] ^= 0xFF
        with pytest.raises(CorruptDataError):
            dst.append_nodes([("s", m0, n0), ("s", m1, bytes(damaged))])
        assert dst.execute("EXISTS", "s") == 0
    with Store(tmp_path / "holes", node_max_entries=4) as holes:
        for i in range(1, 5):
            holes.execute("XADD", "h", f"{i}-0", "f", str(i))
        holes.execute("XDEL", "h", "2-0")
        ((master, node),) = _nodes(holes, "h")
        with Store(tmp_path / "dst2") as dst:
            with pytest.raises(ValueError, match="deleted entries"):
                dst.append_nodes([("h", master, node)])
            assert dst.execute("EXISTS", "h") == 0


def test_bookmark_and_batch_are_written_with_the_nodes(tmp_path: Path) -> None:
    nodes = _source(tmp_path)
    with Store(tmp_path / "dst") as dst:
        first = dst.append_nodes([("s", *nodes[0])], batch=("copy", 1), bookmark=("cp", b"1"))
        again = dst.append_nodes([("s", *nodes[1])], batch=("copy", 1), bookmark=("cp", b"2"))
        assert first.applied and not again.applied and again.added == 0
        assert dst.bookmark("cp") == b"1" and dst.last_batch("copy") == 1
        with pytest.raises(ResponseError):
            dst.append_nodes([("s", *nodes[0])], bookmark=("cp", b"3"))
        assert dst.bookmark("cp") == b"1" and dst.execute("XLEN", "s") == 4


@pytest.mark.parametrize("how", ["nodes", "entries"])
def test_a_blocked_reader_is_woken_by_a_bulk_load(tmp_path: Path, how: str) -> None:
    """A reader blocked on a stream that does not exist yet gets the loaded entries at once
    (from ID 0, so a reader that starts late still gets them; it must not wait out its 20 s)."""
    nodes = _source(tmp_path)
    with Store(tmp_path / "dst") as dst:
        got: list[Any] = []

        def read() -> None:
            got.append(dst.execute("XREAD", "BLOCK", 20_000, "STREAMS", "s", "0-0"))

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.3)  # most often the reader is blocked by now
        started = time.monotonic()
        if how == "nodes":
            dst.append_nodes([("s", *nodes[0])])
        else:
            dst.append_entries([("s", (1, 0), [b"f", b"1"])])
        reader.join(20)
        assert time.monotonic() - started < 10
        assert got and got[0][0][1][0] == [b"1-0", [b"f", b"1"]]
