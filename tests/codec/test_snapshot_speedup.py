"""The optional C loops of saving and restoring RDB files (rstore/codec/_rdbpack.c and
_rdbread.c) give the bytes and records the Python reference gives, and hand everything unusual
back to it: node, PEL and ID records packed alike, node and PEL records read alike (damage
reported by the same error at the same offset), and the writer's count checks kept."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import lzf, node_validate, speedups
from rstore.codec.node_validate import NodeFacts, _node_facts, node_facts
from rstore.errors import CorruptRDBError, InconsistentSnapshotError
from rstore.model import (
    ConsumerSnapshot,
    ConsumerState,
    GroupSnapshot,
    GroupState,
    PendingEntry,
    StreamNode,
    StreamSnapshot,
    StreamState,
)
from rstore.rdb import values, writer
from rstore.rdb.decoding import Source
from rstore.rdb.encoding import encode_length, encode_ms, encode_raw_id, encode_string

from .model import ID, ModelEntry, ref_node
from .strategies import (
    READABLE_FAILURES,
    ids,
    int_texts,
    long_strings,
    nodes_with_deletions,
    numberish,
)

pytestmark = [
    READABLE_FAILURES,
    pytest.mark.skipif(
        speedups.c_pack is None, reason="the C accelerator is not built (pure-Python install)"
    ),
]

# Strings of every encoding encode_string can pick: integers, near-integers, short, long,
# compressible and not.
strings = st.one_of(
    st.binary(max_size=40), int_texts, numberish, long_strings, st.binary(min_size=20)
)


def c_pack(kind: int, items: list[object], compress: bool = False) -> bytes:
    assert speedups.c_pack is not None
    chunks = []
    it = iter(items)
    while True:
        chunk, _, exhausted = speedups.c_pack(
            kind, it, len(items) + 1, lzf.compress if compress else None
        )
        chunks.append(chunk)
        if exhausted:
            return b"".join(chunks)


@given(st.lists(st.tuples(ids, strings), max_size=8), st.booleans())
def test_node_records_are_the_python_bytes(nodes: list[tuple[ID, bytes]], compress: bool) -> None:
    expected = b"".join(
        b"\x10" + encode_raw_id(mid) + encode_string(lp, compress=compress) for mid, lp in nodes
    )
    assert c_pack(0, [StreamNode(mid, lp) for mid, lp in nodes], compress) == expected
    assert c_pack(0, list(nodes), compress) == expected  # (master_id, listpack) pairs too


@given(
    st.lists(
        st.tuples(ids, st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**64 - 1)),
        max_size=8,
    )
)
def test_pel_records_are_the_python_bytes(pel: list[tuple[ID, int, int]]) -> None:
    expected = b"".join(encode_raw_id(i) + encode_ms(t) + encode_length(n) for i, t, n in pel)
    assert c_pack(1, [PendingEntry(i, t, n) for i, t, n in pel]) == expected


@given(st.lists(ids, max_size=20))
def test_consumer_ids_are_the_python_bytes(pel: list[ID]) -> None:
    assert c_pack(2, list(pel)) == b"".join(encode_raw_id(i) for i in pel)


def test_chunks_of_about_a_mebibyte() -> None:
    """Many nodes come back in several chunks, which together are the whole."""
    assert speedups.c_pack is not None
    nodes = [StreamNode((i, 0), bytes([i % 251]) * 5000) for i in range(600)]
    it = iter(nodes)
    chunk, got, exhausted = speedups.c_pack(0, it, 1000, None)
    assert 0 < got < 600 and not exhausted and len(chunk) >= 1 << 20
    assert c_pack(0, nodes) == b"".join(
        b"\x10" + encode_raw_id(n.master_id) + encode_string(n.listpack, compress=False)
        for n in nodes
    )


def _snapshot(nodes: list[StreamNode], declared: int, pel: int) -> StreamSnapshot:
    pending = [PendingEntry((1, i), 1000 + i, i + 1) for i in range(pel)]
    consumer = ConsumerSnapshot(ConsumerState(b"c", 5, 6, pel), [p.id for p in pending])
    group = GroupSnapshot(GroupState(b"g", (1, pel), pel, pel, 1), pending, [consumer])
    state = StreamState(len(nodes), (9, 9), (0, 0), None, len(nodes), 1)
    return StreamSnapshot(declared, nodes, state, [group])


def _encoded(snap: StreamSnapshot, monkeypatch: pytest.MonkeyPatch, c: bool) -> bytes:
    with monkeypatch.context() as m:
        if not c:
            m.setattr(writer, "c_pack", None)
        return b"".join(writer.encode_stream(snap, 21, compress=True))


@given(st.lists(nodes_with_deletions(), max_size=5), st.integers(0, 30))
@settings(max_examples=50)
def test_stream_values_are_byte_identical(nodes: list[tuple[ID, bytes]], pel: int) -> None:
    monkeypatch = pytest.MonkeyPatch()
    records = [StreamNode(mid, lp) for mid, lp in nodes]
    snap = _snapshot(records, len(records), pel)
    assert _encoded(snap, monkeypatch, True) == _encoded(snap, monkeypatch, False)


@pytest.mark.parametrize("declared", [0, 2, 4])
def test_a_wrong_count_is_refused_alike(declared: int, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [StreamNode((i, 0), b"x" * 30) for i in range(3)]
    messages = []
    for c in (True, False):
        with pytest.raises(InconsistentSnapshotError) as err:
            _encoded(_snapshot(nodes, declared, 2), monkeypatch, c)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "node count counts" in messages[0]


# ----------------------------------------------------------------------------- reading


def _records(nodes: list[tuple[ID, bytes]], compress: bool) -> bytes:
    return b"".join(
        b"\x10" + encode_raw_id(mid) + encode_string(lp, compress=compress) for mid, lp in nodes
    )


def _read(data: bytes, count: int, c: bool) -> tuple[list[StreamNode], object, int]:
    """The nodes read, the error (as text and offset) or None, and the CRC of what was read."""
    src = Source(io.BytesIO(data), len(data))
    saved = values.c_read_nodes
    values.c_read_nodes = saved if c else None  # type: ignore[assignment]
    out: list[StreamNode] = []
    error: object = None
    try:
        out.extend(values.read_nodes(src, count))
    except CorruptRDBError as exc:
        error = (str(exc), exc.offset)
    finally:
        values.c_read_nodes = saved  # type: ignore[assignment]
    return out, error, src.crc()


distinct_nodes = st.lists(nodes_with_deletions(), max_size=5, unique_by=lambda n: n[0]).map(sorted)


@given(distinct_nodes, st.booleans())
@settings(max_examples=100)
def test_node_records_read_alike(nodes: list[tuple[ID, bytes]], compress: bool) -> None:
    data = _records(nodes, compress)
    got = _read(data, len(nodes), True)
    assert got == _read(data, len(nodes), False)
    assert got[1] is None and [(n.master_id, n.listpack) for n in got[0]] == nodes


@given(distinct_nodes.filter(bool), st.booleans(), st.data())
@settings(max_examples=300)
def test_damaged_records_are_reported_alike(
    nodes: list[tuple[ID, bytes]], compress: bool, data: st.DataObject
) -> None:
    blob = bytearray(_records(nodes, compress))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    damaged = bytes(blob)
    assert _read(damaged, len(nodes), True) == _read(damaged, len(nodes), False)


@given(distinct_nodes.filter(bool))
@settings(max_examples=50)
def test_facts_of_nodes_read_in_c_are_the_checks_facts(nodes: list[tuple[ID, bytes]]) -> None:
    """What the C reader remembers for the importer is what the check itself says."""
    read, error, _ = _read(_records(nodes, False), len(nodes), True)
    assert error is None
    for node in read:
        assert node_facts(node.listpack, node.master_id) == _node_facts(
            node.listpack, node.master_id
        )


def test_a_node_across_the_buffer_end_is_read_in_python() -> None:
    """The C reader stops at the end of the read buffer; the rest still comes out."""
    nodes: list[tuple[ID, bytes]] = []
    for i in range(40):
        entries = [ModelEntry((i + 1, j), [b"f", bytes([65 + j % 26]) * 20000]) for j in range(2)]
        nodes.append(((i + 1, 0), ref_node(entries)))
    data = _records(nodes, False)  # about 1.6 MB: more than one 1 MiB read
    got = _read(data, len(nodes), True)
    assert got == _read(data, len(nodes), False)
    assert [(n.master_id, n.listpack) for n in got[0]] == nodes


def _read_pel(data: bytes, count: int, times: bool, c: bool) -> tuple[list[object], object, int]:
    src = Source(io.BytesIO(data), len(data))
    saved = values.c_read_pel
    values.c_read_pel = saved if c else None  # type: ignore[assignment]
    out: list[object] = []
    error: object = None
    try:
        reader = values._group_pel if times else values._consumer_pel
        out.extend(reader(src, count))
    except CorruptRDBError as exc:
        error = (str(exc), exc.offset)
    finally:
        values.c_read_pel = saved  # type: ignore[assignment]
    return out, error, src.offset


pel_entries = st.lists(
    st.tuples(ids, st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**64 - 1)),
    max_size=12,
    unique_by=lambda p: p[0],
).map(sorted)


@given(pel_entries, st.booleans(), st.data())
@settings(max_examples=300)
def test_pel_records_read_alike(
    pel: list[tuple[ID, int, int]], times: bool, data: st.DataObject
) -> None:
    """A group's PEL (ID, time, count) or a consumer's (IDs), intact or damaged (which may make
    the IDs repeat or go down, or cut a record short): the same records, the same error."""
    if times:
        blob = bytearray(
            b"".join(encode_raw_id(i) + encode_ms(t) + encode_length(n) for i, t, n in pel)
        )
    else:
        blob = bytearray(b"".join(encode_raw_id(i) for i, _, _ in pel))
    if blob and data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 3))):
            blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
        if data.draw(st.booleans()):
            blob = blob[: data.draw(st.integers(0, len(blob)))]
    got = _read_pel(bytes(blob), len(pel), times, True)
    assert got == _read_pel(bytes(blob), len(pel), times, False)


def test_the_importer_gets_the_readers_facts_once() -> None:
    """A node the reader checked is not checked again when its facts are asked for right
    after; the remembered facts serve once, and never another object with the same bytes."""
    entries = [ModelEntry((7, 0), [b"f", b"v"]), ModelEntry((7, 1), [b"f", b"w"])]
    blob = ref_node(entries)
    (node,), error, _ = _read(_records([((7, 0), blob)], False), 1, True)
    assert error is None
    calls: list[bytes] = []
    real = node_validate._node_facts

    def counting(n: bytes | bytearray, mid: ID) -> NodeFacts:
        calls.append(bytes(n))
        return real(n, mid)

    node_validate._node_facts = counting  # type: ignore[assignment]
    try:
        assert node_facts(node.listpack, (7, 0)) == NodeFacts(2, (7, 0), (7, 1), 0)
        assert calls == []  # the reader's check served
        assert node_facts(node.listpack, (7, 0)) == NodeFacts(2, (7, 0), (7, 1), 0)
        assert calls == [blob]  # once only: checked again
        copy = bytes(bytearray(node.listpack))
        node_facts(copy, (7, 0))
        assert len(calls) == 2  # another object is checked
    finally:
        node_validate._node_facts = real  # type: ignore[assignment]
