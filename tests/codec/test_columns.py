"""Nodes decoded into column buffers (rstore/codec/columns.py, rstore/codec/_columns.c): the
entries the range walk gives, byte for byte the same from C and from Python, and a damaged node
never crashes the decoder nor leaves half an entry in a batch."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import columns as cl
from rstore.codec import speedups
from rstore.codec import stream_node as sn
from rstore.errors import CorruptDataError

from .model import ID, U64, ModelEntry, ref_node
from .strategies import READABLE_FAILURES, damaged, ids, nodes_with_deletions

pytestmark = READABLE_FAILURES

Entry = tuple[ID, list[bytes]]
needs_c = pytest.mark.skipif(
    not speedups.ENABLED or speedups.c_columns_append is None,
    reason="the C accelerator is not built (pure-Python install)",
)


def last_value_only(flat: list[bytes]) -> list[bytes]:
    """What a map holds: each name once, at its last value, where its last occurrence is."""
    last = {name: i for i, name in enumerate(flat[0::2])}
    return [
        x for i, name in enumerate(flat[0::2]) if last[name] == i for x in (name, flat[2 * i + 1])
    ]


def walk(node: bytes, master: ID, start: ID, end: ID, limit: int) -> tuple[bool, list[Entry]]:
    out: list[Entry] = []
    return sn.scan_forward_py(node, master, start, end, limit, out), out


@given(
    st.lists(nodes_with_deletions(), min_size=1, max_size=3),
    ids,
    ids,
    st.integers(0, 20),
    st.booleans(),
)
@settings(max_examples=300)
def test_python_columns_hold_the_entries_the_range_walk_gives(
    nodes: list[tuple[ID, bytes]], start: ID, end: ID, limit: int, dedupe: bool
) -> None:
    cols = cl.Columns()
    want: list[Entry] = []
    for master, blob in nodes:
        done, found = walk(blob, master, start, end, limit)
        n, got_done = cl.append_node_py(cols, blob, master, start, end, limit, dedupe)
        assert (n, got_done) == (len(found), done)
        want += [(i, last_value_only(f) if dedupe else f) for i, f in found]
    assert cols.entries() == want
    assert cols.count == len(want)
    ids_text = cols.id_data.decode()
    assert ids_text == "".join(f"{ms}-{seq}" for (ms, seq), _ in want)
    signed = [v for (v,) in struct.iter_unpack("<q", cols.ms)]
    assert [v % 2**64 for v in signed] == [ms for (ms, _), _ in want]


@needs_c
@given(
    st.lists(nodes_with_deletions(), min_size=1, max_size=3),
    ids,
    ids,
    st.integers(0, 20),
    st.booleans(),
)
@settings(max_examples=400)
def test_c_columns_are_byte_identical_to_python(
    nodes: list[tuple[ID, bytes]], start: ID, end: ID, limit: int, dedupe: bool
) -> None:
    c_cols, py_cols = cl.Columns(), cl.Columns()
    for master, blob in nodes:
        got = cl.append_node(c_cols, blob, master, start, end, limit, dedupe=dedupe)
        want = cl.append_node_py(py_cols, blob, master, start, end, limit, dedupe)
        assert got == want
    assert c_cols.buffers() == py_cols.buffers()


@needs_c
@given(nodes_with_deletions(), st.data())
@settings(max_examples=400)
def test_damaged_nodes_never_crash_the_c_decoder_nor_leave_half_entries(
    node: tuple[ID, bytes], data: st.DataObject
) -> None:
    master, blob = node
    mutated = damaged(data, blob)
    cols = cl.Columns()
    cl.append_node_py(cols, blob, master, (0, 0), (U64, U64), 0, False)  # a batch already started
    before = cols.buffers()
    before_copy = tuple(bytes(b) for b in before)
    assert speedups.c_columns_append is not None
    result = speedups.c_columns_append(mutated, *master, 0, 0, U64, U64, 0, False, cols.buffers())
    if result is None:  # handed back untouched: the Python reference decides
        assert tuple(bytes(b) for b in cols.buffers()) == before_copy
        return
    try:
        ref = cl.Columns()
        cl.append_node_py(ref, blob, master, (0, 0), (U64, U64), 0, False)
        ref_result = cl.append_node_py(ref, mutated, master, (0, 0), (U64, U64), 0, False)
    except (CorruptDataError, IndexError, ValueError, struct.error):
        return  # C accepted what only a check it leaves to Python refuses
    assert result == ref_result
    assert cols.buffers() == ref.buffers()


def test_without_the_c_decoder_the_python_one_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [ModelEntry((5, i), [b"f", b"%d" % i, b"g", b"x" * i]) for i in range(10)]
    blob, master = ref_node(entries), entries[0].id
    monkeypatch.setattr(cl, "_c_append_node", None)
    cols = cl.Columns()
    n, _ = cl.append_node(cols, blob, master, (0, 0), (U64, U64))
    assert n == len(entries)
    assert cols.entries() == walk(blob, master, (0, 0), (U64, U64), 0)[1]


def test_a_column_past_two_gib_is_refused_before_arrow_sees_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cl, "_MAX_OFFSET", 10)
    offsets, data = bytearray(struct.pack("<i", 0)), bytearray()
    cl._append_string(offsets, data, b"0123456789")
    with pytest.raises(ValueError, match="2 GiB"):
        cl._append_string(offsets, data, b"x")
