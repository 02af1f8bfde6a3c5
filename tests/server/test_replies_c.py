"""The C encoder of stream entries (``rstore/server/_replies.c``) writes the bytes of its Python
reference, which writes what the generic encoder writes of the same reply; on an entry of
another shape it declines (None) and Python does the work."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.commands.reply import entries_reply
from rstore.server import resp

ids = st.tuples(st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 64) - 1))
fields = st.lists(st.binary(max_size=300), max_size=12)
entries = st.lists(st.tuples(ids, fields), max_size=30)

needs_c = pytest.mark.skipif(resp.c_encode_entries is None, reason="the C encoder is not built")


@settings(max_examples=300, deadline=None)
@given(entries)
def test_python_writes_what_the_generic_encoder_writes(got: list) -> None:
    out: list[bytes] = []
    for item in entries_reply(got):
        resp.encode(item, 2, out)
    assert resp.encode_entries_py(got) == b"".join(out)
    assert resp.encode_entries(got) == b"".join(out)


@needs_c
@settings(max_examples=300, deadline=None)
@given(entries)
def test_c_writes_the_bytes_of_python(got: list) -> None:
    assert resp.c_encode_entries is not None
    assert resp.c_encode_entries(got) == resp.encode_entries_py(got)


@needs_c
@pytest.mark.parametrize(
    "odd",
    [
        [((1, 2), ["text"])],  # a str field
        [((-1, 2), [b"a"])],  # an ID below zero
        [((1 << 64, 0), [b"a"])],  # an ID past 64 bits
        [([1, 2], [b"a"])],  # the ID a list
        [((1, 2), (b"a",))],  # the fields a tuple
        [((1, 2), [b"a"], b"x")],  # three parts
        ((1, 2), [b"a"]),  # not a list
    ],
)
def test_c_declines_what_is_not_a_scan_s_shape(odd: object) -> None:
    assert resp.c_encode_entries is not None
    assert resp.c_encode_entries(odd) is None  # type: ignore[arg-type]
