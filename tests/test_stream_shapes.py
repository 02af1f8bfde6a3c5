"""The shapes of stream entries, each with a C twin that gives exactly what its Python
reference gives, or hands the work back to it (``None``) when the input is not the shape it
expects: the redis-py shape (``rstore.client.shapes.parse_stream_list``, ``_shapes.c``) and the
internal reply a scan's entries make (``rstore.commands.reply.entries_reply``,
``codec/_speedups.c``)."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rstore
from rstore.client import append, shapes
from rstore.codec.speedups import c_entries_reply
from rstore.commands.reply import entries_reply, entries_reply_py

needs_c = pytest.mark.skipif(
    shapes._c_stream_list is None, reason="the C accelerator is not built (or is turned off)"
)

TEXT = st.one_of(st.binary(max_size=12), st.text(max_size=12))
FIELDS = st.one_of(
    st.none(),
    st.lists(TEXT, max_size=10),  # even or odd: odd is not the expected shape
    st.lists(TEXT, max_size=10).map(tuple),
    st.integers(),  # not a sequence at all
)
ENTRY = st.one_of(
    st.none(),
    st.tuples(TEXT, FIELDS).map(list),
    st.tuples(TEXT, FIELDS, st.integers()).map(list),  # extra items (CLAIM's) are left out
    st.tuples(TEXT, FIELDS),
    st.lists(TEXT, max_size=1),  # too short
)
REPLY = st.one_of(st.none(), st.lists(ENTRY, max_size=8), st.text(max_size=3))


def _outcome(shape: Any, reply: Any) -> tuple[str, Any]:
    try:
        return "ok", shape(reply)
    except Exception as exc:  # a malformed reply: the error, by its type
        return "error", type(exc)


@needs_c
@given(REPLY)
def test_the_c_shape_is_the_python_shape(reply: Any) -> None:
    """Whatever the reply, the C twin gives the reference's result or hands it back (None);
    so the function the methods call gives the reference's result or error."""
    assert shapes._c_stream_list is not None
    shaped = _outcome(shapes._c_stream_list, reply)
    reference = _outcome(shapes.parse_stream_list_py, reply)
    assert shaped in (("ok", None), reference)
    assert _outcome(shapes.parse_stream_list, reply) == reference


@needs_c
@given(st.lists(st.one_of(st.none(), st.tuples(TEXT, st.lists(TEXT, max_size=8))), max_size=8))
def test_well_formed_replies_are_shaped_in_c(raw: list[Any]) -> None:
    """An XRANGE-like reply -- entries of an ID and an even list of fields and values, or nil
    -- is shaped by the C twin itself, with later duplicates of a field winning, as in dict()."""
    reply = [None if e is None else [e[0], e[1][: len(e[1]) // 2 * 2]] for e in raw]
    assert shapes._c_stream_list is not None
    shaped = shapes._c_stream_list(reply)
    assert shaped == shapes.parse_stream_list_py(reply)
    assert all(type(entry) is tuple for entry in shaped or [])


def test_claim_extras_are_kept_by_the_reference() -> None:
    """XREADGROUP with CLAIM adds the idle time and the delivery count after the fields: only
    the Python reference shapes them, whatever is built."""
    reply = [[b"1-0", [b"f", b"v"], 10, 2]]
    assert shapes.parse_stream_list(reply, claim_min_idle_time=5) == [(b"1-0", {b"f": b"v"}, 10, 2)]
    assert shapes.parse_stream_list(reply) == [(b"1-0", {b"f": b"v"})]


U64 = st.integers(0, 2**64 - 1)
FIELD_LIST = st.lists(st.binary(max_size=8), max_size=6)


@pytest.mark.skipif(c_entries_reply is None, reason="the C accelerator is not built")
@given(st.lists(st.tuples(st.tuples(U64, U64), FIELD_LIST), max_size=20))
def test_the_c_entries_reply_is_the_python_one(entries: list[Any]) -> None:
    assert c_entries_reply is not None
    assert c_entries_reply(entries) == entries_reply_py(entries) == entries_reply(entries)


@pytest.mark.skipif(c_entries_reply is None, reason="the C accelerator is not built")
@pytest.mark.parametrize(
    "entries",
    [
        [((1, 2), [b"f"]), ((1, 3),)],  # an entry of one item
        [([1, 2], [b"f"])],  # an ID that is not a tuple
        [((1, -2), [b"f"])],  # a negative sequence
        [((2**64, 0), [b"f"])],  # past 64 bits
        ((((1, 2), [b"f"]),)),  # not a list
    ],
)
def test_the_c_entries_reply_hands_other_shapes_back(entries: Any) -> None:
    assert c_entries_reply is not None
    assert c_entries_reply(entries) is None


# ----------------------------------------------------------------------------- built as dicts

ENTRY_FIELDS = st.lists(
    st.tuples(st.sampled_from([b"a", b"b", b"user", b"x" * 70]), st.binary(max_size=80)),
    min_size=1,
    max_size=4,
)  # a repeated field name: redis-py's dict keeps its last value


@given(st.lists(ENTRY_FIELDS, min_size=1, max_size=250), st.data())
@settings(max_examples=25, deadline=None)
def test_store_ranges_are_the_commands_reply_shaped(
    entries: list[list[tuple[bytes, bytes]]], data: st.DataObject
) -> None:
    """``Store.xrange`` / ``xrevrange`` build redis-py's entries straight from the nodes (no
    internal reply in between): the same as shaping what ``execute`` gives, and plain lists
    of tuples, whatever the range and count; with ``decode_responses`` too."""
    with tempfile.TemporaryDirectory() as path, rstore.Store(path) as store:
        ids = [store.xadd("s", dict(fv)) for fv in entries]  # the dict: redis-py's last wins
        for i, fv in enumerate(entries):
            if len({f for f, _ in fv}) < len(fv):
                flat = [x for pair in fv for x in pair]
                store.execute("XADD", "s", f"{i + 2**60}-0", *flat)  # repeated fields kept
        ids += [i for i, _ in store.xrange("s", f"{2**60}", "+")]
        lo, hi = sorted(data.draw(st.sampled_from(ids)) for _ in range(2))
        count = data.draw(st.none() | st.integers(1, 300))
        for method, args, cmd in (
            (store.xrange, (lo, hi), ["XRANGE", "s", lo, hi]),
            (store.xrevrange, (hi, lo), ["XREVRANGE", "s", hi, lo]),
            (store.xrange, (b"(" + lo, "+"), ["XRANGE", "s", b"(" + lo, "+"]),
        ):
            tail = [] if count is None else ["COUNT", count]
            got = method("s", *args, count=count)
            assert type(got) is list and all(type(e) is tuple for e in got)
            assert got == shapes.parse_stream_list_py(store.execute(*cmd, *tail))
    with tempfile.TemporaryDirectory() as path, rstore.Store(path, decode_responses=True) as s:
        s.xadd("s", {"f": "v"}, id="1-1")
        assert s.xrange("s") == [("1-1", {"f": "v"})]


# ----------------------------------------------------------------------------- XADD's argv

ARG = st.one_of(st.binary(max_size=8), st.text(max_size=8), st.integers(), st.floats(), st.none())


@pytest.mark.skipif(append._c_xadd_argv is None, reason="the C accelerator is not built")
@given(ARG, ARG, st.one_of(st.dictionaries(ARG, ARG, max_size=5), st.lists(ARG, max_size=2)))
def test_the_c_xadd_argv_is_the_python_argv(name: Any, id: Any, fields: Any) -> None:
    """A plain XADD's argv, built in C, is what the Python branch builds (encode_argv then
    encodes either) -- or None, for the Python branch to refuse, exactly when the fields are not
    a non-empty dict."""
    assert append._c_xadd_argv is not None
    out = append._c_xadd_argv(name, id, fields)
    if out is None:
        assert type(fields) is not dict or not fields
        return
    want = [b"XADD", name, id]
    for pair in fields.items():
        want += pair
    assert type(out) is list and len(out) == len(want) and out[0] == b"XADD"
    assert all(a is b for a, b in zip(out[1:], want[1:]))  # the very objects, left to encode


def test_xadd_refuses_what_redis_py_refuses_either_way(tmp_path: Any) -> None:
    with rstore.Store(str(tmp_path)) as store:
        for fields in ({}, [("f", "v")], None):
            with pytest.raises(rstore.DataError, match="non-empty dict"):
                store.xadd("s", fields)  # type: ignore[arg-type]
        assert store.xadd("s", {"f": 1, b"g": 2.5}, id="1-1") == b"1-1"
        assert store.xrange("s") == [(b"1-1", {b"f": b"1", b"g": b"2.5"})]
        assert store.xlen("s") == 1


def test_store_reads_are_the_commands_reply_shaped(tmp_path: Any) -> None:
    """``Store.xread`` / ``xreadgroup`` of new entries build redis-py's form straight from the
    entries: the same as shaping what ``execute`` gives; a history read (deleted entries as
    ``None``) and a read that found nothing keep the usual path."""
    with rstore.Store(str(tmp_path)) as store:
        for i in range(250):
            store.xadd("a", {"f": str(i), "g": "x" * (i % 50)})
            store.xadd("b", {"n": str(i)})
        store.execute("XADD", "a", "*", "f", "1", "f", "2")  # a repeated field: its last value
        for group in ("g1", "g2"):
            store.xgroup_create("a", group, id="0")
            store.xgroup_create("b", group, id="0")
        for count in (1, 100, None):
            got = store.xreadgroup("g1", "c", {"a": ">", "b": ">"}, count=count)
            tail = [] if count is None else ["COUNT", count]
            raw = store.execute(
                "XREADGROUP", "GROUP", "g2", "c", *tail, "STREAMS", "a", "b", ">", ">"
            )
            assert got == shapes.parse_xread(raw)
            assert type(got) is list and got
            first = store.xread({"a": "0", "b": "0-1"}, count=count)
            assert first == shapes.parse_xread(
                store.execute("XREAD", *tail, "STREAMS", "a", "b", "0", "0-1")
            )
        assert store.xreadgroup("g1", "c", {"a": ">", "b": ">"}) == []
        history = store.xreadgroup("g1", "c", {"a": "0"}, count=2)
        store.xdel("a", history[0][1][0][0])
        assert store.xreadgroup("g1", "c", {"a": "0"}, count=2)[0][1][0] == (
            history[0][1][0][0],
            {},
        )  # a deleted entry of the history, as redis-py shapes its nil body
