"""Runs of automatic-ID entries appended to one node (rstore.codec.stream_append): the C version
writes the Python reference's bytes, and both write what the naive node model (tests/codec/
model.py, from docs/listpack.md) says a node holding those entries is, stopping where XADD's
node rule and ID rule say."""

from __future__ import annotations

from typing import Any

import pytest
from appenders import python_appenders
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import speedups, stream_append
from rstore.codec import stream_node as sn

from .model import U64, ModelEntry, ref_node
from .strategies import READABLE_FAILURES, entry_lists, field_lists, u64s, values

pytestmark = READABLE_FAILURES

needs_c = pytest.mark.skipif(speedups.c_append_auto is None, reason="the C appender is not built")


@st.composite
def start_nodes(draw: st.DrawFn) -> list[ModelEntry]:
    """The entries of a node to append to, some maybe deleted; sometimes more than 127 of them
    (the live count's element then grows as entries are added)."""
    entries = draw(entry_lists(max_size=draw(st.sampled_from([3, 25]))))
    for e in entries:
        e.deleted = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:  # counters near and past 127
        last = entries[-1].id
        extra = draw(st.integers(100, 140))
        fv = entries[0].fv
        entries += [ModelEntry((last[0], last[1] + 1 + k), fv) for k in range(extra)]
        entries = [e for e in entries if e.id[1] <= U64]
    return entries


def plain_entries(master_fields: list[bytes]) -> st.SearchStrategy[list[Any]]:
    """XADD argvs ``[b"XADD", key, b"*", field, value, ...]`` (lists or tuples): most reuse the
    master's field names, some do not; a few are not plain (an odd item count, a str item)."""
    names = st.one_of(st.just(master_fields), field_lists, st.just([b"x"] * 3))
    plain = st.builds(
        lambda ns, vs: [b"XADD", b"k", b"*"] + [x for n, v in zip(ns, vs) for x in (n, v)],
        names,
        st.lists(values, min_size=4, max_size=4),
    )
    odd = plain.map(lambda argv: argv[:-1])
    text = plain.map(lambda argv: [*argv[:-1], argv[-1].decode("latin-1")])
    as_tuple = plain.map(tuple)
    return st.lists(
        st.one_of(plain, plain, plain, plain, plain, plain, odd, text, as_tuple),
        min_size=1,
        max_size=40,
    )


limits = st.tuples(
    st.one_of(st.just(1 << 30), st.integers(50, 6000)),  # max_bytes (0 is normalised by callers)
    st.one_of(st.just(0), st.integers(1, 150)),  # max_entries, 0 = no limit
)

last_ids = st.one_of(
    st.tuples(u64s, u64s),
    st.just((U64, U64)),
    st.tuples(st.just(U64), st.sampled_from([U64 - 2, U64 - 1])),
    st.tuples(st.sampled_from([U64 - 1, 5]), st.sampled_from([U64 - 1, U64])),
)


def run(
    append: Any, node: bytearray, master: tuple[int, int], last: tuple[int, int], now: int,
    entries: list[Any], start: int, lim: tuple[int, int],
) -> tuple[int, tuple[int, int], list[bytes]]:  # fmt: skip
    ids: list[bytes] = [b"before"]
    nxt, last_id = append(node, master, last, now, entries, start, len(entries), 3, *lim, ids)
    assert ids[0] == b"before"  # appended to, never replaced
    return nxt, last_id, ids[1:]


@settings(max_examples=200, deadline=None)
@given(start_nodes(), st.data(), limits, last_ids, u64s, st.integers(0, 2))
def test_a_run_is_the_model_node_and_stops_where_xadd_would(
    existing: list[ModelEntry],
    data: st.DataObject,
    lim: tuple[int, int],
    last: tuple[int, int],
    now: int,
    start: int,
) -> None:
    entries = data.draw(plain_entries(existing[0].fields))
    start = min(start, len(entries))
    master = existing[0].id
    node = bytearray(ref_node(existing))
    c_node = bytearray(node)

    # what XADD does entry by entry: the ID rule, the node rule, then the model's node
    model = list(existing)
    used = len(existing)
    expected_ids: list[bytes] = []
    ms, seq = last
    i = start
    while i < len(entries):
        argv = entries[i]
        fv = list(argv[3:])
        if len(fv) % 2 or not all(type(x) is bytes for x in fv):
            break
        if (ms, seq) == (U64, U64):
            break
        max_bytes, max_entries = lim
        if 0 < max_entries <= used:
            break
        if max_bytes < 1 << 30 and len(ref_node(model)) + sum(map(len, fv)) >= max_bytes:
            break
        ms, seq = (now, 0) if now > ms else (ms, seq + 1) if seq < U64 else (ms + 1, 0)
        model.append(ModelEntry((ms, seq), fv))
        expected_ids.append(b"%d-%d" % (ms, seq))
        used += 1
        i += 1

    with python_appenders():
        got = run(stream_append.append_auto, node, master, last, now, entries, start, lim)
    assert got == (i, (ms, seq), expected_ids)
    assert node == ref_node(model)
    if speedups.c_append_auto is not None:
        assert run(stream_append.append_auto, c_node, master, last, now, entries, start, lim) == got
        assert c_node == node


@needs_c
def test_the_c_run_declines_what_it_does_not_do() -> None:
    c = speedups.c_append_auto
    assert c is not None
    node = sn.new_node([b"f", b"v"])
    before = bytes(node)
    entries = [[b"XADD", b"k", b"*", b"f", b"w"]]
    ids: list[bytes] = []
    assert c(node, 1, 0, 1, 0, 5, tuple(entries), 0, 1, 3, 4096, 100, ids) is None  # not a list
    assert c(node, 1, 0, 1, 0, 5, entries, 0, 2, 3, 4096, 100, ids) is None  # stop past the end
    assert c(bytearray(b"\x07\x00\x00\x00\x00\x00\xff"), 1, 0, 1, 0, 5, entries, 0, 1, 3, 4096,
             100, ids) is None  # fmt: skip  # no master entry
    view = memoryview(node)  # an exported buffer cannot be resized
    assert c(node, 1, 0, 1, 0, 5, entries, 0, 1, 3, 4096, 100, ids) is None
    view.release()
    assert bytes(node) == before and ids == []
    assert c(node, 1, 0, 1, 0, 5, entries, 0, 1, 3, 4096, 100, ids) == (1, 5, 0)
    assert ids == [b"5-0"]


@needs_c
def test_large_values_cross_the_string_encodings_in_one_run() -> None:
    """Values of 63/64 and 4095/4096 bytes and a 1 MB one: the run and the reference agree."""
    sizes = [63, 64, 4095, 4096, 1 << 20]
    entries: list[Any] = [[b"XADD", b"k", b"*", b"f", b"x" * n] for n in sizes]
    node = sn.new_node([b"f", b"v"])
    py_node = bytearray(node)
    c_ids: list[bytes] = []
    py_ids: list[bytes] = []
    done = stream_append.append_auto(node, (1, 0), (1, 0), 1, entries, 0, 5, 3, 1 << 30, 0, c_ids)
    with python_appenders():
        assert stream_append.append_auto(
            py_node, (1, 0), (1, 0), 1, entries, 0, 5, 3, 1 << 30, 0, py_ids
        ) == done  # fmt: skip
    assert done == (5, (1, 5)) and c_ids == py_ids and node == py_node
    assert sn.node_counts(node) == (6, 0)
