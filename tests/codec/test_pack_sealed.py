"""``_rdbpack.pack_sealed`` (records straight from a store, rstore/codec/_rdbpack.c) writes the
bytes the Python writer writes for the same records once unsealed, stops at the end of the key
range, and stops at -- and names -- any record whose seal does not match."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import lzf, speedups
from rstore.codec.sealed_records import IDS, NODES, PENDING
from rstore.rdb.encoding import encode_length, encode_ms, encode_string
from rstore.storage.records import layout

from .strategies import READABLE_FAILURES, long_strings

pytestmark = [
    READABLE_FAILURES,
    pytest.mark.skipif(
        speedups.c_pack_sealed is None,
        reason="the C accelerator is not built (pure-Python install)",
    ),
]

PREFIX = struct.pack(">Q", 7)
ids = st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))


def _raw_id(i: tuple[int, int]) -> bytes:
    return layout.ID_PACK(*i)


def pack_all(
    kind: int, records: list[tuple[bytes, bytes]], compress: bool, prefix: bytes = PREFIX
) -> tuple[bytes, int, bytes | None]:
    """Every chunk pack_sealed gives for ``records`` as LMDB views would hand them over."""
    assert speedups.c_pack_sealed is not None
    it = iter([(memoryview(k), memoryview(v)) for k, v in records])
    chunks, n = [], 0
    while True:
        chunk, got, exhausted, problem = speedups.c_pack_sealed(kind, it, prefix, 1 << 30, compress)
        chunks.append(chunk)
        n += got
        if problem is not None or exhausted:
            return b"".join(chunks), n, problem


def sealed(key: bytes, payload: bytes) -> tuple[bytes, bytes]:
    return key, layout.seal(key, payload)


@given(
    st.lists(st.tuples(ids, st.one_of(st.binary(max_size=60), long_strings)), max_size=8),
    st.booleans(),
)
@settings(max_examples=100)
def test_nodes_are_packed_as_the_python_writer_packs_them(
    nodes: list[tuple[tuple[int, int], bytes]], compress: bool
) -> None:
    records = [sealed(PREFIX + _raw_id(i), lp) for i, lp in nodes]
    expected = b"".join(
        b"\x10" + _raw_id(i) + encode_string(lp, compress=compress) for i, lp in nodes
    )
    assert pack_all(NODES, records, compress) == (expected, len(nodes), None)


@given(st.lists(st.tuples(ids, st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**64 - 1))))
def test_pending_entries_are_packed_as_the_python_writer_packs_them(
    entries: list[tuple[tuple[int, int], int, int]],
) -> None:
    records = [sealed(PREFIX + _raw_id(i), layout.pack_nack(t, n, b"owner")) for i, t, n in entries]
    expected = b"".join(_raw_id(i) + encode_ms(t) + encode_length(n) for i, t, n in entries)
    assert pack_all(PENDING, records, False) == (expected, len(entries), None)


@given(st.lists(ids), st.binary(max_size=20))
def test_consumer_ids_are_packed_as_the_python_writer_packs_them(
    owned: list[tuple[int, int]], name: bytes
) -> None:
    prefix = layout.consumer_pel_prefix(7, name)
    records = [sealed(prefix + _raw_id(i), b"") for i in owned]
    expected = b"".join(_raw_id(i) for i in owned)
    assert pack_all(IDS, records, False, prefix) == (expected, len(owned), None)


@pytest.mark.parametrize("kind", [NODES, PENDING, IDS])
def test_the_range_ends_at_the_first_key_outside_the_prefix(kind: int) -> None:
    payload = layout.pack_nack(5, 1, b"c") if kind == PENDING else b""
    inside = [sealed(PREFIX + _raw_id((1, i)), payload) for i in range(3)]
    outside = sealed(struct.pack(">Q", 8) + _raw_id((0, 0)), payload)
    data, n, problem = pack_all(kind, [*inside, outside, *inside], False)
    assert (n, problem) == (3, None)
    assert data == pack_all(kind, inside, False)[0]


@given(st.data())
@settings(max_examples=100)
def test_a_record_whose_seal_fails_stops_packing_and_is_named(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from([NODES, PENDING, IDS]))
    payloads = {
        NODES: st.binary(max_size=80),
        PENDING: st.builds(layout.pack_nack, st.integers(0, 99), st.integers(0, 9), st.binary()),
        IDS: st.just(b""),
    }
    records = [sealed(PREFIX + _raw_id((1, i)), data.draw(payloads[kind])) for i in range(5)]
    bad = data.draw(st.integers(0, 4))
    key, value = records[bad]
    damaged = bytearray(value)
    damaged[data.draw(st.integers(0, len(value) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    records[bad] = (key, bytes(damaged))
    packed, n, problem = pack_all(kind, records, False)
    assert (n, problem) == (bad, key)
    assert packed == pack_all(kind, records[:bad], False)[0]  # nothing of it was written


@pytest.mark.parametrize(
    ("kind", "key", "payload"),
    [
        (NODES, PREFIX + b"\x00" * 15, b"lp"),  # a key one byte short of an ID
        (PENDING, PREFIX + b"\x00" * 17, layout.pack_nack(1, 1, b"")),  # one byte long
        (PENDING, PREFIX + b"\x00" * 16, b"\x00" * 15),  # a PEL value too short for its fields
        (NODES, PREFIX + b"\x00" * 16, None),  # shorter than a seal
    ],
)
def test_records_the_store_never_writes_are_left_to_python(
    kind: int, key: bytes, payload: bytes | None
) -> None:
    value = b"\x01\x02" if payload is None else layout.seal(key, payload)
    assert pack_all(kind, [(key, value)], False) == (b"", 0, key)


def test_chunks_end_near_1_mib_and_the_next_call_goes_on() -> None:
    assert speedups.c_pack_sealed is not None
    nodes = [sealed(PREFIX + _raw_id((i, 0)), bytes([i % 251]) * 300_000) for i in range(10)]
    it = iter(nodes)
    chunks, counts, exhausted = [], [], False
    while not exhausted:
        chunk, got, exhausted, problem = speedups.c_pack_sealed(NODES, it, PREFIX, 100, False)
        assert problem is None
        chunks.append(chunk)
        counts.append(got)
    assert counts == [4, 4, 2]  # 300 kB records: a call stops once it holds 1 MiB
    assert all(len(c) >= 1 << 20 for c in chunks[:-1])
    assert b"".join(chunks) == pack_all(NODES, nodes, False)[0]
    # and a limit stops it after that many records
    _, got, exhausted, _ = speedups.c_pack_sealed(NODES, iter(nodes), PREFIX, 2, False)
    assert (got, exhausted) == (2, False)


@given(
    st.one_of(
        st.binary(max_size=400),
        long_strings,
        st.builds(lambda b, k: b * k, st.binary(min_size=1, max_size=9), st.integers(1, 600)),
    ),
    st.integers(-2, 5000),
)
@settings(max_examples=400)
def test_the_lzf_port_is_the_python_ports(data: bytes, budget: int) -> None:
    """_rdbpack's LZF (which compresses nodes where they lie) gives rstore.codec.lzf's bytes
    and fits / does-not-fit decision, at any budget, and liblzf's under Redis's budget."""
    from rstore.codec import _rdbpack  # type: ignore[attr-defined]

    assert _rdbpack.lzf_compress(data, budget) == lzf.py_compress(data, budget)
    if len(data) > 20:
        assert _rdbpack.lzf_compress(data, len(data) - 4) == lzf.compress(data, len(data) - 4)
