"""Streamed XRANGE / XREVRANGE (``rstore serve``): :func:`count_range` counts exactly the
entries :func:`scan_nodes` gives, without decoding the nodes wholly inside the range, and
:func:`range_pages` gives those entries in order, a page at a time -- the array length a
streamed reply writes first must match what follows."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rstore
from rstore.codec.resp_entries import entries_resp
from rstore.ids import MAX_ID, MIN_ID
from rstore.streams.keyspace import lookup_stream
from rstore.streams.read import copy_range, count_range, range_pages, range_resp, scan_nodes

ID = tuple[int, int]


def _all_nodes(store: rstore.Store, reverse: bool, end: ID) -> list[tuple[ID, bytes]]:
    """Every node of the stream in walk order (more than a range needs)."""
    nodes = store.view(lambda v: list(v.nodes(b"s")))
    return [n for n in reversed(nodes) if n[0] <= end] if reverse else nodes


def _copied(
    store: rstore.Store, start: ID, end: ID, count: int, reverse: bool
) -> list[tuple[ID, bytes]]:
    """What XRANGE copies out of its transaction (``copy_range``)."""

    def copy(txn: object) -> list[tuple[ID, bytes]]:
        stream = lookup_stream(txn, b"s")  # type: ignore[arg-type]
        if stream is None:
            return []
        return copy_range(txn, stream, start, end, count, reverse=reverse)  # type: ignore[arg-type]

    return store._live_env().read(copy)


@settings(max_examples=60, deadline=None)
@given(
    length=st.integers(0, 120),
    node=st.integers(1, 9),
    deleted=st.sets(st.integers(1, 120), max_size=40),
    bounds=st.tuples(st.integers(0, 125), st.integers(0, 125)),
    count=st.integers(0, 50),
    reverse=st.booleans(),
    page=st.sampled_from([1, 60, 400, 1 << 20]),
)
def test_the_count_and_the_pages_agree_with_the_scan(
    tmp_path_factory: pytest.TempPathFactory, length: int, node: int, deleted: set[int],
    bounds: tuple[int, int], count: int, reverse: bool, page: int,
) -> None:  # fmt: skip
    path: Path = tmp_path_factory.mktemp("pages")
    with rstore.Store(path, sync=False, node_max_entries=node) as store:
        for i in range(1, length + 1):
            store.xadd("s", {"n": i}, id=f"{i}-0")
        gone = [f"{i}-0" for i in deleted if i <= length]
        if gone:
            store.xdel("s", *gone)
        start, end = (bounds[0], 0), (bounds[1], 0)
        for nodes in (_all_nodes(store, reverse, end), _copied(store, start, end, count, reverse)):
            want = scan_nodes(nodes, start, end, count, reverse=reverse)
            assert count_range(nodes, start, end, count, reverse=reverse) == len(want)
            pages = list(range_pages(nodes, start, end, count, reverse=reverse, page_bytes=page))
            assert [e for p in pages for e in p] == want
            assert all(pages)  # no empty page is written
            resp = list(range_resp(nodes, start, end, count, reverse=reverse, page_bytes=page))
            assert b"".join(chunk for chunk, _ in resp) == entries_resp(want)
            assert sum(n for _, n in resp) == len(want) and all(n for _, n in resp)
        nodes = _all_nodes(store, reverse, MAX_ID)
        full = scan_nodes(nodes, MIN_ID, MAX_ID, reverse=reverse)
        assert count_range(nodes, MIN_ID, MAX_ID, reverse=reverse) == len(full)
        assert full == [(tuple(map(int, i.split(b"-"))), [b"n", f[b"n"]]) for i, f in
                        (store.xrevrange("s") if reverse else store.xrange("s"))]  # fmt: skip
