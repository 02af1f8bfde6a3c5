"""Stream entries in RESP straight from a node (``rstore.codec.resp_entries``): the C scan
(``scan_resp``) writes the bytes of the Python reference, in both directions and with any
limit, and the reference writes what the server's generic encoder writes of the reply built
whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rstore
from rstore.codec import resp_entries
from rstore.codec import stream_node as sn
from rstore.commands.reply import entries_reply
from rstore.server.resp import encode_py

needs_c = pytest.mark.skipif(resp_entries.c_scan_resp is None, reason="the C scan is not built")

values = st.one_of(
    st.binary(max_size=80),
    st.integers(-(1 << 63), (1 << 63) - 1).map(lambda i: str(i).encode()),  # stored as ints
)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from([("a", "b"), ("a",), ("x", "y", "z")]),
                            st.lists(values, min_size=3, max_size=3)), min_size=1, max_size=40),
    deleted=st.sets(st.integers(2, 39), max_size=10),  # entry 1 stays: the node with it
    bounds=st.tuples(st.integers(0, 45), st.integers(0, 45)),
    limit=st.integers(0, 12),
    reverse=st.booleans(),
)  # fmt: skip
def test_a_node_in_resp_is_the_reply_built_whole(
    tmp_path_factory: pytest.TempPathFactory, rows: list, deleted: set[int],
    bounds: tuple[int, int], limit: int, reverse: bool,
) -> None:  # fmt: skip
    path: Path = tmp_path_factory.mktemp("resp")
    with rstore.Store(path, sync=False, node_max_entries=0, node_max_bytes=1 << 20) as store:
        for i, (names, vals) in enumerate(rows, 1):
            store.xadd("s", dict(zip(names, vals, strict=False)), id=f"{i}-0")
        gone = [f"{i}-0" for i in deleted if i <= len(rows)]
        if gone:
            store.xdel("s", *gone)
        ((master, node),) = store.view(lambda v: list(v.nodes(b"s")))  # one node
    start, end = (bounds[0], 0), (bounds[1], 0)
    entries: list = []
    scan = sn.scan_backward_py if reverse else sn.scan_forward_py
    scan(node, master, start, end, limit, entries)
    whole: list[bytes] = []
    for item in entries_reply(entries):
        encode_py(item, 2, whole)
    out = bytearray(b"before")
    assert resp_entries.node_resp_py(node, master, start, end, limit, out, reverse) == len(entries)
    assert out == b"before" + b"".join(whole)
    if resp_entries.c_scan_resp is not None:
        fast = bytearray(b"before")
        assert resp_entries.node_resp(node, master, start, end, limit, fast, reverse) == len(
            entries
        )
        assert fast == out


@needs_c
def test_the_c_scan_declines_a_damaged_node_and_leaves_out_alone() -> None:
    assert resp_entries.c_scan_resp is not None
    out = bytearray(b"kept")
    assert resp_entries.c_scan_resp(b"\x00" * 10, 1, 0, 0, 0, 9, 9, 0, out, False) is None
    assert out == b"kept"
