"""Runs of records sealed in one step (rstore.storage.records.sealed, what a restore writes): the C
sealing (_sealed.c) gives the bytes of the Python reference, which is layout.seal per record,
and a store restored through it reads back and passes its own check."""

from __future__ import annotations

import gc
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstore
from rstore.storage.records import layout, sealed

needs_c = pytest.mark.skipif(not sealed.ENABLED, reason="the C accelerator is not built")

U64 = st.integers(0, 2**64 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
# sizes around the C CRC's 16- and 64-byte blocks, and nodes' sizes
PAYLOAD = st.one_of(st.binary(max_size=300), st.binary(min_size=900, max_size=5000))


@needs_c
@given(PAYLOAD, st.integers(0, 2**32 - 1), st.integers(0, 15))
def test_c_crc32_is_zlibs(data: bytes, start: int, skip: int) -> None:
    assert sealed.c_crc32 is not None
    view = memoryview(data)[min(skip, len(data)) :]  # any alignment
    assert sealed.c_crc32(view, start) == zlib.crc32(view, start)
    assert sealed.c_crc32(data) == zlib.crc32(data)


@needs_c
def test_c_crc32_on_every_length_up_to_a_few_blocks() -> None:
    data = os.urandom(600)
    assert sealed.c_crc32 is not None
    for n in range(len(data)):
        assert sealed.c_crc32(data[:n], n) == zlib.crc32(data[:n], n), n
    big = os.urandom(1 << 17)  # past the size that releases the GIL
    assert sealed.c_crc32(big, 7) == zlib.crc32(big, 7)


needs_c_seal = pytest.mark.skipif(
    layout.seal is layout.seal_py, reason="the C accelerator is not built (or is turned off)"
)


@needs_c_seal
@given(st.binary(max_size=600), PAYLOAD, st.integers(0, 15))
def test_c_seal_and_unseal_are_the_references(key: bytes, payload: bytes, skip: int) -> None:
    value = layout.seal(key, bytearray(payload))
    assert value == layout.seal_py(key, payload)
    view = memoryview(value)
    assert layout.unseal(key, view) == layout.unseal_py(key, view) == payload
    damaged = bytearray(value)
    damaged[min(skip, len(damaged) - 1)] ^= 0x01  # any one bit flipped, checksum included
    assert layout.unseal(key, damaged) is None is layout.unseal_py(key, damaged)
    short = value[: min(skip, 3)]  # shorter than a checksum
    assert layout.unseal(key, short) is None is layout.unseal_py(key, short)


def _node_list(ids: list[tuple[int, int]], payloads: list[bytes]) -> list[tuple[Any, ...]]:
    # the shape of a NodeRun's nodes: (master ID, listpack, live, first live, last)
    return [(mid, lp, 1, mid, mid) for mid, lp in zip(ids, payloads)]


@given(
    U64,
    st.lists(st.tuples(U64, U64), max_size=8),
    st.lists(PAYLOAD, min_size=8, max_size=8),
)
def test_node_items_are_layout_seal_of_node_keys(
    handle: int, ids: list[tuple[int, int]], payloads: list[bytes]
) -> None:
    nodes = _node_list(ids, payloads)
    expected = [
        (layout.node_key(handle, mid), layout.seal(layout.node_key(handle, mid), lp))
        for mid, lp, *_ in nodes
    ]
    assert sealed.node_items_py(handle, nodes) == expected
    items = sealed.node_items(handle, nodes)  # C when built
    assert items == expected
    if sealed.ENABLED:  # two bytes objects each: in no cycle, left out of the cyclic GC
        assert not any(gc.is_tracked(item) for item in items)
    for key, value in expected:
        assert layout.unseal(key, value) == value[: -layout.CHECKSUM_SIZE]


def _nack_reference(
    pel_prefix: bytes, owned_prefix: bytes, owner: bytes, nacks: list[tuple[bytes, int, int]]
) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    pel = [
        (pel_prefix + raw, layout.seal(pel_prefix + raw, layout.pack_nack(when, count, owner)))
        for raw, when, count in nacks
    ]
    owned = [(owned_prefix + raw, layout.seal(owned_prefix + raw, b"")) for raw, _, _ in nacks]
    return pel, owned


@given(
    st.binary(min_size=8, max_size=8),
    st.binary(max_size=80),
    st.binary(max_size=300),
    st.lists(st.tuples(st.binary(min_size=16, max_size=16), I64, U64), max_size=20),
)
def test_nack_items_are_layout_seal_of_pel_records(
    pel_prefix: bytes, owned_prefix: bytes, owner: bytes, nacks: list[tuple[bytes, int, int]]
) -> None:
    expected = _nack_reference(pel_prefix, owned_prefix, owner, nacks)
    assert sealed.nack_items_py(pel_prefix, owned_prefix, owner, nacks) == expected
    assert sealed.nack_items(pel_prefix, owned_prefix, owner, nacks) == expected


@pytest.mark.parametrize(
    "bad", [(b"r" * 16, 2**63, 1), (b"r" * 16, -(2**63) - 1, 1), (b"r" * 16, 0, 2**64)]
)
def test_out_of_range_nacks_raise_what_the_python_packing_raises(
    bad: tuple[bytes, int, int],
) -> None:
    nacks = [(b"q" * 16, 5, 1), bad]
    with pytest.raises(struct.error):
        sealed.nack_items_py(b"p" * 8, b"o", b"c", nacks)
    with pytest.raises(struct.error):
        sealed.nack_items(b"p" * 8, b"o", b"c", nacks)


def test_values_the_c_sealing_does_not_take_go_through_python() -> None:
    # a bytearray listpack, an int subclass: the C side declines, the reference answers
    class Big(int):
        pass

    nodes: list[tuple[Any, ...]] = [((1, 2), bytearray(b"abc")), ((Big(3), 4), b"def")]
    assert sealed.node_items(9, nodes) == sealed.node_items_py(9, nodes)
    nacks = [(b"r" * 16, Big(5), 6)]
    assert sealed.nack_items(b"p" * 8, b"o", b"c", nacks) == sealed.nack_items_py(
        b"p" * 8, b"o", b"c", nacks
    )


def test_a_restored_store_reads_back_and_checks(tmp_path: Path) -> None:
    source = rstore.Store(str(tmp_path / "a"))
    with source:
        for i in range(3000):
            source.xadd("s", {"f": str(i), "g": "v" * (i % 50)})
        source.xgroup_create("s", "g", "0")
        source.xreadgroup("g", "c1", {"s": ">"}, count=700)
        source.xreadgroup("g", "c2", {"s": ">"}, count=900)
        source.save(str(tmp_path / "dump.rdb"))
        expected = (
            source.xrange("s"),
            source.xpending_range("s", "g", "-", "+", 5000),
            source.xinfo_consumers("s", "g"),
        )
    with rstore.Store(str(tmp_path / "b")) as target:
        target.restore_file(str(tmp_path / "dump.rdb"))
        got = (
            target.xrange("s"),
            target.xpending_range("s", "g", "-", "+", 5000),
            target.xinfo_consumers("s", "g"),
        )
        assert target.check() == []
    assert got[0] == expected[0]

    def owners(pending: Any) -> list[tuple[bytes, bytes, int]]:  # the times move on
        return [(p["message_id"], p["consumer"], p["times_delivered"]) for p in pending]

    assert owners(got[1]) == owners(expected[1])
    assert len(got[1]) == 1600
    assert [(c["name"], c["pending"]) for c in got[2]] == [
        (c["name"], c["pending"]) for c in expected[2]
    ]
