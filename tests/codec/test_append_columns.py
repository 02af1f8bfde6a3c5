"""Nodes built from a batch of columns (rstore.codec.stream_append.append_columns and open_node,
rstore.NodeBuilder): the C versions write the Python references' bytes, and the builder writes
the nodes XADD writes for the same entries (Store.append_entries, one XADD after another), with
any node limits; entries XADD could not take after the ones before are refused, in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore.codec import speedups, stream_append
from rstore.codec import stream_node as sn
from rstore.codec.columns import Columns

from .model import U64
from .strategies import FIELD_POOL, READABLE_FAILURES, small_values, u64s

pytestmark = READABLE_FAILURES

needs_c = pytest.mark.skipif(
    speedups.c_append_columns is None, reason="the C column appender is not built"
)

Entry = tuple[tuple[int, int], list[bytes]]


@st.composite
def entries(draw: st.DrawFn, rising: bool = True) -> list[Entry]:
    """Entries with IDs that rise (or, unless ``rising``, sometimes do not); most share field
    names, some have other names or more pairs, integer-like values often."""
    ms = draw(st.one_of(st.integers(1, 5), st.sampled_from([2**63 - 3, U64 - 60])))
    seq = draw(u64s.filter(lambda s: s < U64 - 200))
    shared = draw(st.lists(st.sampled_from(FIELD_POOL), min_size=1, max_size=3))
    out: list[Entry] = []
    for _ in range(draw(st.integers(1, 60))):
        step = draw(st.sampled_from([1, 1, 1, 2, 1000]))
        if not rising and draw(st.integers(0, 9)) == 0:
            step = -draw(st.integers(0, 3))  # at or below the last ID
        seq = max(0, seq + step)
        names = (
            shared
            if draw(st.integers(0, 3))
            else draw(st.lists(st.sampled_from(FIELD_POOL), min_size=1, max_size=5))
        )
        flat = [x for name in names for x in (name, draw(small_values))]
        out.append(((ms, seq), flat))
    return out


def columns(items: list[Entry]) -> Columns:
    cols = Columns()
    for entry_id, flat in items:
        cols.add_entry(entry_id, flat)
    return cols


limits = st.tuples(
    st.sampled_from([0, 1, 60, 200, 4096]),  # max bytes (0: no limit)
    st.sampled_from([0, 1, 3, 100]),  # max entries (0: no limit)
)


@needs_c
@given(items=entries(rising=False), lim=limits, start=st.integers(1, 5))
def test_c_appends_what_python_appends(
    items: list[Entry], lim: tuple[int, int], start: int
) -> None:
    cols = columns(items)
    start = min(start, cols.count)
    first_id, first_flat = items[0]
    max_bytes = lim[0] or 1 << 30
    nodes = [sn.new_node(first_flat), sn.new_node(first_flat)]
    c_done = stream_append.append_columns(
        nodes[0], first_id, first_id, cols, start, max_bytes, lim[1]
    )
    py_done = stream_append.append_columns_py(
        nodes[1], first_id, first_id, cols, start, max_bytes, lim[1]
    )
    assert c_done == py_done
    assert nodes[0] == nodes[1]
    if c_done[0] > start:  # what was appended reads back
        found: list[Any] = []
        sn.scan_forward(bytes(nodes[0]), first_id, (0, 0), (U64, U64), 0, found)
        assert [(e[0], list(e[1])) for e in found[1:]] == items[start : c_done[0]]


@needs_c
@given(items=entries())
def test_c_opens_the_node_python_opens(items: list[Entry]) -> None:
    cols = columns(items)
    for i in range(cols.count):
        assert stream_append.open_node(cols, i) == sn.new_node(items[i][1])
    empty = Columns()
    empty.add_entry((1, 1), [])
    assert stream_append.open_node(empty, 0) is None


@pytest.fixture(params=["c", "python"])
def accelerated(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The builder with the C column appender (when built), or with the Python references."""
    if request.param == "python":
        monkeypatch.setattr(stream_append, "_c_append_columns", None)
        monkeypatch.setattr(stream_append, "_c_new_node_columns", None)
    return str(request.param)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(items=entries(rising=False), lim=limits, cut=st.integers(0, 60))
def test_the_builder_builds_the_nodes_xadd_builds(
    tmp_path_factory: pytest.TempPathFactory,
    accelerated: str,
    items: list[Entry],
    lim: tuple[int, int],
    cut: int,
) -> None:
    """Columns in two batches (cut anywhere), then the same entries one by one: the nodes are
    XADD's, and the entries refused are exactly those XADD refuses after what came before."""
    max_bytes, max_entries = lim
    taken: list[Entry] = []
    refused_by_xadd: list[int] = []
    last = (0, 0)
    for i, (entry_id, flat) in enumerate(items):  # what XADD takes, one after another
        if entry_id > last:
            taken.append((entry_id, flat))
            last = entry_id
        else:
            refused_by_xadd.append(i)
    path: Path = tmp_path_factory.mktemp("xadd") / "store"
    with rstore.Store(
        path, sync=False, node_max_bytes=max_bytes, node_max_entries=max_entries
    ) as s:
        s.append_entries([(b"s", entry_id, flat) for entry_id, flat in taken])
        expected = s.view(lambda v: list(v.nodes(b"s")))

    cols = columns(items)
    builder = rstore.NodeBuilder(max_bytes, max_entries)
    built: list[rstore.BuiltNode] = []
    refused: list[int] = []
    for lo, hi in ((0, min(cut, len(items))), (min(cut, len(items)), len(items))):
        part = columns(items[lo:hi])
        i = 0
        while i < part.count:
            i = builder.add_columns(part, i)
            built += builder.take()
            if i < part.count:
                refused.append(lo + i)
                i += 1
    built += builder.finish()
    assert [(b.master_id, b.node) for b in built] == expected
    assert refused == refused_by_xadd
    for b in built:  # the facts are what the node check finds
        assert b.facts == rstore.node_facts(b.node, b.master_id)

    one = rstore.NodeBuilder(max_bytes, max_entries)  # one entry at a time, in Python
    took = [one.add(entry_id, flat) for entry_id, flat in items]
    assert [(b.master_id, b.node) for b in one.finish()] == expected
    assert [e for e, ok in zip(items, took) if ok] == taken
    assert cols.count == len(items)


def test_limits_as_redis_reads_them() -> None:
    unlimited = rstore.NodeBuilder(0, 0)
    for seq in range(1, 501):
        assert unlimited.add((1, seq), [b"f", b"v"])
    [node] = unlimited.finish()
    assert node.facts.live == 500
    with pytest.raises(ValueError, match="at least 0"):
        rstore.NodeBuilder(-1, 10)
