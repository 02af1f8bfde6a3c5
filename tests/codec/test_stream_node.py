"""Stream nodes: built byte-for-byte like Redis, read back like a naive model, tombstoned in place
(docs/listpack.md#stream-nodes)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import listpack as lp
from rstore.codec import stream_node as sn
from rstore.codec.node_validate import validate_node

from .model import ID, U64, ModelEntry, live_entries, ref_node
from .strategies import READABLE_FAILURES, entry_lists, ids

Entry = tuple[ID, list[bytes]]

pytestmark = READABLE_FAILURES


def build(entries: list[ModelEntry]) -> tuple[ID, bytearray]:
    """The node created by ``entries[0]`` with the rest appended (no deletions applied)."""
    master = entries[0].id
    node = sn.new_node(entries[0].fv)
    for e in entries[1:]:
        sn.append_entry(node, master, e.id, e.fv)
    return master, node


def delete(node: bytearray, master: ID, entries: list[ModelEntry], indices: set[int]) -> int:
    """Tombstone ``entries[i]`` for ``i`` in ``indices`` (live ones) with one mark_deleted call."""
    targets = {i for i in indices if i < len(entries) and not entries[i].deleted}
    positions = [pos for i, (_, _, pos) in enumerate(sn.iter_ids(node, master)) if i in targets]
    for i in targets:
        entries[i].deleted = True
    return sn.mark_deleted(node, positions)


def model_flags(entries: list[ModelEntry], e: ModelEntry) -> int:
    return (2 if e.fields == entries[0].fields else 0) | (1 if e.deleted else 0)


# --------------------------------------------------------------------------- verified bytes


def test_example_c_one_entry_node() -> None:
    expected = "1d000000 0a00 0101 0001 0101 816102 0001 0201 0001 0001 816202 0401 ff"
    assert sn.new_node([b"a", b"b"]) == bytes.fromhex(expected)


def test_worked_node_with_mixed_fields() -> None:
    master = (1700000000000, 0)
    node = sn.new_node([b"sensor", b"temp", b"value", b"21"])
    sn.append_entry(node, master, (1700000000001, 0), [b"sensor", b"temp", b"value", b"22"])
    fv = [b"sensor", b"hum", b"value", b"55", b"unit", b"pct"]
    sn.append_entry(node, master, (1700000000002, 0), fv)
    expected = (
        "69000000 1d00 0301 0001 0201 8673656e736f7207 8576616c756506 0001"
        " 0201 0001 0001 8474656d7005 1501 0501"
        " 0201 0101 0001 8474656d7005 1601 0501"
        " 0001 0201 0001 0301 8673656e736f7207 8368756d04 8576616c756506 3701"
        " 8475 6e6974 05 83706374 04 0a01 ff"
    )
    assert node == bytes.fromhex(expected)


def test_negative_and_wrapping_deltas() -> None:
    master = (5, 3)
    node = sn.new_node([b"f", b"v"])
    sn.append_entry(node, master, (6, 0), [b"f", b"v"])
    sn.append_entry(node, master, (U64, U64), [b"f", b"v"])
    elements = lp.decode(node)
    # master: 1.. | entry 6-0: flags 2, ms 1, seq -3 | entry max-max: flags 2, ms -6, seq -4
    assert elements[-10:] == [2, 1, -3, b"v", 4, 2, -6, -4, b"v", 4]
    assert bytes.fromhex("0201 0101 dffd02") in node
    assert [i for i, _, _ in sn.iter_ids(node, master)] == [(5, 3), (6, 0), (U64, U64)]


@pytest.mark.parametrize(
    ("fields", "same"),
    [
        ([b"1", b"a"], True),  # master field 1 is stored as an integer, compared as text
        ([b"01", b"a"], False),
        ([b"1"], False),
        ([b"a", b"1"], False),
        ([b"1", b"a", b"a"], False),
    ],
)
def test_samefields_compares_names_as_text(fields: list[bytes], same: bool) -> None:
    master = (1, 0)
    node = sn.new_node([b"1", b"x", b"a", b"y"])
    sn.append_entry(node, master, (2, 0), [x for f in fields for x in (f, b"v")])
    (_, first), (_, second) = [(i, flags) for i, flags, _ in sn.iter_ids(node, master)]
    assert first == sn.FLAG_SAMEFIELDS
    assert second == (sn.FLAG_SAMEFIELDS if same else sn.FLAG_NONE)


def test_samefields_with_non_minimal_master_encoding() -> None:
    """A node from elsewhere may hold the master field "1" as a 13-bit integer; names are
    still compared as text, as Redis does."""
    elements = [b"\x01\x01", b"\x00\x01", b"\x01\x01", b"\xc0\x01\x02", b"\x00\x01"]
    elements += [b"\x02\x01", b"\x00\x01", b"\x00\x01", lp.encode_value(b"v"), b"\x04\x01"]
    node = bytearray(lp.build(elements))
    assert validate_node(node, (1, 0)) == 1
    sn.append_entry(node, (1, 0), (2, 0), [b"1", b"w"])
    assert [flags for _, flags, _ in sn.iter_ids(node, (1, 0))] == [2, 2]
    assert sn.first_live_entry(node, (1, 0)) == ((1, 0), [b"1", b"v"])
    assert list(sn.iter_raw(node, (1, 0)))[1].fields_values == [b"1", b"w"]


NON_MINIMAL_TWO = [b"\xc0\x02\x02", b"\x81\x32\x02", b"\xf4\x02" + bytes(7) + b"\x09"]


@pytest.mark.parametrize("flags", NON_MINIMAL_TWO)
def test_tombstoning_non_minimal_flags(flags: bytes) -> None:
    """Flags 2 stored as a 13-bit int, as the string "2" or as a 64-bit int is valid (Redis's
    deep check accepts it); tombstoning such entries must still leave a valid node."""
    elements = [b"\x03\x01", b"\x00\x01", b"\x01\x01", lp.encode_value(b"f"), b"\x00\x01"]
    for ms_delta, flag in enumerate([b"\x02\x01", flags, flags]):
        elements += [flag, lp.encode_int(ms_delta), b"\x00\x01", lp.encode_value(b"x"), b"\x04\x01"]
    node = bytearray(lp.build(elements))
    master = (1, 0)
    positions = [pos for _, _, pos in sn.iter_ids(node, master)]
    assert sn.mark_deleted(node, positions[1:]) == 1
    assert validate_node(node, master) == 3
    assert sn.node_counts(node) == (1, 2)
    assert [(i, f) for i, f, _ in sn.iter_ids(node, master)] == [
        ((1, 0), 2),
        ((2, 0), 3),
        ((3, 0), 3),
    ]
    assert sn.first_live_entry(node, master) == ((1, 0), [b"f", b"x"])


# --------------------------------------------------------------------------- properties


@settings(deadline=None)
@given(entry_lists())
def test_built_node_is_byte_identical_to_the_reference(entries: list[ModelEntry]) -> None:
    master, node = build(entries)
    assert node == ref_node(entries)
    assert validate_node(node, master) == len(entries)


@settings(deadline=None, max_examples=150)
@given(entry_lists(), st.lists(st.sets(st.integers(0, 24)), max_size=3))
def test_readers_agree_with_the_model(entries: list[ModelEntry], batches: list[set[int]]) -> None:
    master, node = build(entries)
    header_count = node[4:6]
    for batch in batches:
        size = len(node)
        live_before = sum(not e.deleted for e in entries)
        killed = {i for i in batch if i < len(entries) and not entries[i].deleted}
        assert delete(node, master, entries, batch) == live_before - len(killed)
        assert abs(len(node) - size) <= 2  # only the counters may change width
        assert node[4:6] == header_count  # no element added or removed
    assert node == ref_node(entries)
    live = live_entries(entries)
    assert sn.node_counts(node) == (len(live), len(entries) - len(live))
    assert validate_node(node, master) == len(entries)

    raw = list(sn.iter_raw(node, master))
    assert [(r.id, r.flags, r.fields_values) for r in raw] == [
        (e.id, model_flags(entries, e), e.fv) for e in entries
    ]
    assert list(sn.iter_ids(node, master)) == [(r.id, r.flags, r.flags_pos) for r in raw]
    for r in raw:
        assert lp.read_int(node, r.flags_pos)[0] == r.flags
    fields, first_flags = sn.master_fields(node)
    assert fields == entries[0].fields
    assert first_flags == raw[0].flags_pos
    assert sn.last_entry_id(node, master) == entries[-1].id
    assert sn.first_live_entry(node, master) == (live[0] if live else None)

    forward: list[Entry] = []
    backward: list[Entry] = []
    assert sn.scan_forward(node, master, (0, 0), (U64, U64), 0, forward) is False
    assert sn.scan_backward(node, master, (0, 0), (U64, U64), 0, backward) is False
    assert forward == live
    assert backward == live[::-1]


def model_forward(
    entries: list[ModelEntry], start: ID, end: ID, limit: int, have: int
) -> tuple[list[Entry], bool]:
    out: list[Entry] = []
    for e in entries:
        if e.id > end:
            return out, True
        if e.deleted or e.id < start:
            continue
        out.append((e.id, e.fv))
        if limit > 0 and have + len(out) >= limit:
            return out, True
    return out, False


def model_backward(
    entries: list[ModelEntry], start: ID, end: ID, limit: int, have: int
) -> tuple[list[Entry], bool]:
    out: list[Entry] = []
    for e in reversed(entries):
        if e.id < start:
            return out, True
        if e.deleted or e.id > end:
            continue
        out.append((e.id, e.fv))
        if limit > 0 and have + len(out) >= limit:
            return out, True
    return out, False


@st.composite
def bounds(draw: st.DrawFn, entries: list[ModelEntry]) -> tuple[ID, ID]:
    near = [e.id for e in entries]
    near += [(ms, seq + d) for ms, seq in near for d in (-1, 1) if 0 <= seq + d <= U64]
    edge = st.one_of(st.sampled_from(near), ids)
    a, b = draw(edge), draw(edge)
    return (a, b) if draw(st.booleans()) else (min(a, b), max(a, b))


@settings(deadline=None, max_examples=200)
@given(entry_lists(), st.sets(st.integers(0, 24)), st.integers(0, 6), st.data())
def test_bounded_scans_follow_the_contract(
    entries: list[ModelEntry], dead: set[int], limit: int, data: st.DataObject
) -> None:
    master, node = build(entries)
    delete(node, master, entries, dead)
    start, end = data.draw(bounds(entries))
    have = data.draw(st.integers(0, 2))
    prefix: list[Entry] = [((0, 0), [b"already"])] * have
    for scan, model in ((sn.scan_forward, model_forward), (sn.scan_backward, model_backward)):
        out = list(prefix)
        stop = scan(node, master, start, end, limit, out)
        expected, expected_stop = model(entries, start, end, limit, have)
        assert out == prefix + expected
        assert stop is expected_stop


@settings(deadline=None, max_examples=150)
@given(
    entry_lists(max_size=30),
    st.lists(st.integers(1, 29), max_size=5),
    st.sets(st.integers(0, 29)),
    st.integers(0, 8),
    st.data(),
)
def test_scans_chained_over_nodes_give_the_range(
    entries: list[ModelEntry],
    cuts: list[int],
    dead: set[int],
    limit: int,
    data: st.DataObject,
) -> None:
    """What XRANGE / XREVRANGE rely on: scanning node after node until told to stop yields
    exactly the live entries in the range, in order, at most ``limit`` of them."""
    edges = sorted({0, len(entries), *(c for c in cuts if c < len(entries))})
    nodes = []
    for a, b in itertools.pairwise(edges):
        chunk = entries[a:b]
        master, node = build(chunk)
        delete(node, master, chunk, {i - a for i in dead if a <= i < b})
        nodes.append((master, node))
    start, end = data.draw(bounds(entries))
    wanted = [x for x in live_entries(entries) if start <= x[0] <= end]
    for scan, order, expected in (
        (sn.scan_forward, nodes, wanted),
        (sn.scan_backward, nodes[::-1], wanted[::-1]),
    ):
        out: list[Entry] = []
        for master, node in order:
            if scan(node, master, start, end, limit, out):
                break
        assert out == (expected[:limit] if limit else expected)


@pytest.mark.parametrize("total", [127, 128, 129, 4095, 4096, 4097])
def test_counters_change_width_in_place(total: int) -> None:
    """count/deleted are rewritten with the smallest encoding as they cross 127/128 and
    4095/4096; the rest of the node shifts accordingly."""
    entries = [ModelEntry((i + 1, 0), [b"f", b"%d" % i]) for i in range(total)]
    master, node = build(entries)
    assert node == ref_node(entries)
    for batch in ({0, 1}, {5}, set(range(10, total - 1, 2)), {total - 1}):
        delete(node, master, entries, batch)
        assert node == ref_node(entries)
        assert validate_node(node, master) == total
    dead = sum(e.deleted for e in entries)
    assert sn.node_counts(node) == (total - dead, dead)
    out: list[Entry] = []
    sn.scan_backward(node, master, (0, 0), (U64, U64), 0, out)
    assert out == live_entries(entries)[::-1]


def test_header_count_saturates_while_appending() -> None:
    """7 elements per entry: the count goes 65534 -> 65541, so it must be clamped to 65535
    ("unknown") rather than wrap, and stay there."""
    fv = [b"a", b"1", b"b", b"2", b"c", b"3"]
    entries = [ModelEntry((1, i), fv) for i in range(9400)]
    master, node = build(entries)
    assert node[4:6] == b"\xff\xff"
    assert node == ref_node(entries)
    assert lp.validate(node, deep=True) == 7 + 7 * 9400
    assert validate_node(node, master) == 9400


def test_fully_tombstoned_node_still_reads() -> None:
    """A node can be left with count 0 (Redis's XTRIM MINID quirk); it stays valid."""
    entries = [ModelEntry((1, 0), [b"f", b"a"]), ModelEntry((2, 0), [b"g", b"b"])]
    master, node = build(entries)
    assert delete(node, master, entries, {0, 1}) == 0
    assert node == ref_node(entries)
    assert validate_node(node, master) == 2
    assert sn.first_live_entry(node, master) is None
    assert sn.last_entry_id(node, master) == (2, 0)
    out: list[Entry] = []
    assert sn.scan_forward(node, master, (0, 0), (U64, U64), 0, out) is False
    assert out == []
