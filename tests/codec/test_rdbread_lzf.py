"""The C reader's LZF decompression (rstore/codec/_rdbread.c) on nodes whose repeats overlap
what they copy -- a back-reference at a distance shorter than its length, as LZF writes for
repeated bytes and for values repeated entry after entry: the node read is the node written,
and the C reader takes it (it does not leave it to the Python reader).  What it hands over is
left out of the cyclic GC."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import speedups
from rstore.rdb.encoding import encode_raw_id, encode_string

from .model import ModelEntry, ref_node
from .strategies import READABLE_FAILURES

pytestmark = [
    READABLE_FAILURES,
    pytest.mark.skipif(speedups.c_read_nodes is None, reason="the C accelerator is not built"),
]


def _pattern(period: bytes, length: int) -> bytes:
    return (period * (length // len(period) + 1))[:length]


@given(
    st.binary(min_size=1, max_size=20),
    st.integers(16, 400),
    st.integers(4, 30),
    st.integers(1, 2000),
)
@settings(max_examples=200)
def test_overlapping_repeats_decompress_to_the_node(
    period: bytes, length: int, entries: int, ms: int
) -> None:
    value = _pattern(period, length)
    node = ref_node(
        [ModelEntry((ms + i, 0), [b"f", value, b"g", value[: length // 2]]) for i in range(entries)]
    )
    record = encode_string(node, compress=True)
    assert record[0] == 0xC3  # LZF: it compresses
    data = b"\x10" + encode_raw_id((ms, 0)) + record
    assert speedups.c_read_nodes is not None
    run, end = speedups.c_read_nodes(data, 0, 1, False, 0, 0, True)
    assert end == len(data)
    assert [(n[0], n[1]) for n in run] == [((ms, 0), node)]


def test_the_runs_handed_over_are_left_out_of_the_cyclic_gc() -> None:
    # a restore's ~10^5 tuples of numbers and bytes, tracked, would set off collections that
    # walk them again and again; they can be in no cycle
    node = ref_node([ModelEntry((5 + i, 0), [b"f", b"v" * 30]) for i in range(20)])
    data = b"\x10" + encode_raw_id((5, 0)) + encode_string(node, compress=True)
    assert speedups.c_read_nodes is not None and speedups.c_read_pel is not None
    run, _ = speedups.c_read_nodes(data, 0, 1, False, 0, 0, True)
    assert len(run) == 1
    assert not any(gc.is_tracked(t) for t in (run[0], *run[0]))
    pel = encode_raw_id((7, 1)) + (123).to_bytes(8, "little") + b"\x02"
    entries: dict[bytes, tuple[int, int]] = {}
    speedups.c_read_pel(pel, 0, 1, True, False, 0, 0, entries)
    assert entries == {encode_raw_id((7, 1)): (123, 2)}
    assert not gc.is_tracked(entries) and not gc.is_tracked(entries[encode_raw_id((7, 1))])
