"""The optional C entry appender (rstore/codec/_append.c) writes exactly the bytes of the
Python reference (stream_node.append_entry without it), and hands back what it does not do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import speedups
from rstore.codec import stream_node as sn
from rstore.commands import argv as argv_module
from rstore.errors import DataError

from .strategies import READABLE_FAILURES, field_lists, ids, long_strings, values

pytestmark = [
    READABLE_FAILURES,
    pytest.mark.skipif(speedups.c_append_entry is None, reason="the C appender is not built"),
]


def _py_append(
    node: bytearray, master: tuple[int, int], eid: tuple[int, int], fv: list[bytes]
) -> None:
    saved = sn._c_append_entry
    sn._c_append_entry = None
    try:
        sn.append_entry(node, master, eid, fv)
    finally:
        sn._c_append_entry = saved


entries = st.lists(
    st.tuples(ids, field_lists, st.lists(st.one_of(values, long_strings), min_size=4, max_size=4)),
    min_size=1,
    max_size=140,  # past 127 entries: the live count outgrows one byte and the node moves
)


@settings(max_examples=300, deadline=None)
@given(field_lists, st.lists(values, min_size=4, max_size=4), ids, entries, st.booleans())
def test_c_append_gives_the_python_bytes(
    master_fields: list[bytes],
    master_values: list[bytes],
    master: tuple[int, int],
    more: list[tuple[tuple[int, int], list[bytes], list[bytes]]],
    reuse_master_fields: bool,
) -> None:
    first = [x for f, v in zip(master_fields, master_values) for x in (f, v)]
    c_node = sn.new_node(first)
    py_node = bytearray(c_node)
    for eid, fields, vals in more:
        if reuse_master_fields:
            fields = master_fields
        fv = [x for f, v in zip(fields, vals) for x in (f, v)]
        sn.append_entry(c_node, master, eid, fv)  # C when it can
        _py_append(py_node, master, eid, fv)
        assert c_node == py_node


def test_c_append_declines_what_it_does_not_do() -> None:
    assert speedups.c_append_entry is not None and speedups.c_entry_size is not None
    node = sn.new_node([b"f", b"v"])
    before = bytes(node)
    assert speedups.c_append_entry(node, 1, 0, 2, 0, ["f", b"v"]) is None  # a str item
    assert speedups.c_append_entry(node, 1, 0, 2, 0, [b"f"]) is None  # no value
    view = memoryview(node)  # an exported buffer cannot be resized
    assert speedups.c_append_entry(node, 1, 0, 2, 0, [b"f", b"v"]) is None
    view.release()
    assert bytes(node) == before
    assert speedups.c_entry_size([b"ab", b"c"]) == 3
    assert speedups.c_entry_size((b"ab", "c")) is None
    assert speedups.c_entry_size(iter([b"a"])) is None


def _python_encode_argv(argv: list[object]) -> list[bytes] | DataError | UnicodeError:
    saved = argv_module._c_encode_args
    argv_module._c_encode_args = None
    try:
        return argv_module.encode_argv(argv)
    except (DataError, UnicodeError) as exc:
        return exc
    finally:
        argv_module._c_encode_args = saved


arguments = st.one_of(
    st.binary(max_size=10),
    st.text(max_size=10),  # lone surrogates included: UTF-8 refuses them
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.binary(max_size=5).map(bytearray),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(arguments, max_size=12))
def test_c_argument_encoding_gives_the_python_bytes(argv: list[object]) -> None:
    """Pipelines encode every queued command with encode_argv; in C for str and bytes items,
    with the same bytes (and the same refusals, from the Python version) as without it."""
    expected = _python_encode_argv(argv)
    try:
        got: object = argv_module.encode_argv(argv)
    except (DataError, UnicodeError) as exc:
        got = exc
    if isinstance(expected, Exception):
        assert type(got) is type(expected) and str(got) == str(expected)
    else:
        assert got == expected and all(type(x) is bytes for x in expected)
        assert got is not argv  # a new list: the caller's stays as it was


def test_c_argument_encoding_declines_other_types() -> None:
    c = speedups.c_encode_args
    assert c is not None
    assert c([b"a", "\u00e9"]) == [b"a", "\u00e9".encode()]
    assert c([b"a", 1]) is None
    assert c(["\ud800"]) is None  # the Python version raises UnicodeEncodeError
    assert c((b"a",)) is None
