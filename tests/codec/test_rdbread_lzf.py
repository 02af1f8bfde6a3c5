"""The C reader's LZF decompression (rstore/codec/_rdbread.c) on nodes whose repeats overlap
what they copy -- a back-reference at a distance shorter than its length, as LZF writes for
repeated bytes and for values repeated entry after entry: the node read is the node written,
and the C reader takes it (it does not leave it to the Python reader)."""

from __future__ import annotations

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
