"""The server's reply writer with its C fast path and without it: for any reply the command
layer or the server can give, in RESP2 and RESP3, both write the same bytes -- the C writer
writes the common kinds itself and hands everything else to the Python writer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore import NIL_ARRAY, ResponseError, RespReply
from rstore.server import resp
from rstore.server.resp import Double, Map, Verbatim, encode_py

pytestmark = pytest.mark.skipif(resp.c_encode is None, reason="the C writer was not built")

_leaf = st.one_of(
    st.binary(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=2**63, max_value=2**70),  # beyond 64 bits: the fallback's
    st.integers(max_value=-(2**63) - 1, min_value=-(2**70)),
    st.text(max_size=10),  # statuses: ASCII in C, anything else (and CR / LF) in Python
    st.sampled_from(["OK", "QUEUED", "a\r\nb", "é"]),
    st.none(),
    st.just(NIL_ARRAY),
    st.booleans(),
    st.floats(allow_nan=True).map(Double),
    st.binary(max_size=10).map(Verbatim),
    st.sampled_from([ResponseError("ERR bad"), ResponseError("NOGROUP no\r\ngroup")]),
    st.binary(max_size=5).map(bytearray),
    st.sampled_from([RespReply(b"*0\r\n"), RespReply(b"*1\r\n:7\r\n")]),  # written already
)


def _maps(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    pairs = st.lists(st.tuples(children, children), max_size=4).map(Map)
    odd = st.lists(st.lists(children, min_size=2, max_size=2), min_size=1, max_size=2).map(
        Map
    )  # pairs that are lists, not tuples: the fallback's
    return st.one_of(pairs, odd)


_reply = st.recursive(
    _leaf,
    lambda children: st.one_of(st.lists(children, max_size=5), _maps(children)),
    max_leaves=30,
)


def _python(reply: Any, proto: int) -> bytes:
    out: list[bytes] = []
    encode_py(reply, proto, out)
    return b"".join(out)


@settings(max_examples=600, deadline=None)
@given(_reply, st.sampled_from([2, 3]))
def test_c_writer_writes_what_the_python_writer_writes(reply: Any, proto: int) -> None:
    assert resp.c_encode is not None
    assert resp.c_encode(reply, proto) == _python(reply, proto)


def test_an_entries_reply_in_both_protocols() -> None:
    """The shape most replies have: entries of fields and values, inside a RESP3 map."""
    entries = [[b"1-0", [b"f", b"v"]], [b"2-0", [b"a", b"", b"b", b"x" * 300]]]
    reply = Map([(b"s", entries)])
    assert resp.c_encode is not None
    assert resp.c_encode(reply, 3) == (
        b"%1\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
        b"*2\r\n$3\r\n2-0\r\n*4\r\n$1\r\na\r\n$0\r\n\r\n$1\r\nb\r\n$300\r\n" + b"x" * 300 + b"\r\n"
    )
    assert resp.c_encode(reply, 2).startswith(b"*2\r\n$1\r\ns\r\n*2\r\n")


def test_a_part_written_already_is_written_as_it_is() -> None:
    """A :class:`rstore.RespReply` inside a reply (XINFO STREAM FULL's entries and pending
    entries, for a network front) is its own RESP bytes, not a bulk string, in both."""
    part = RespReply(b"*1\r\n*2\r\n$3\r\n1-0\r\n*0\r\n")
    reply = [b"entries", part]
    want = b"*2\r\n$7\r\nentries\r\n" + part
    assert _python(reply, 2) == want
    assert resp.c_encode is not None
    assert resp.c_encode(reply, 3) == want


def test_a_reply_nested_too_deep_is_an_error_not_a_crash() -> None:
    reply: list[Any] = []
    for _ in range(100_000):
        reply = [reply]
    assert resp.c_encode is not None
    with pytest.raises(RecursionError):
        resp.c_encode(reply, 2)


def test_an_unknown_kind_is_refused_as_in_python() -> None:
    assert resp.c_encode is not None
    with pytest.raises(TypeError, match="no RESP form for object"):
        resp.c_encode([b"a", object()], 2)
