"""The optional C node decoder gives exactly what the Python reference gives, hands anything
unusual back to it, and survives corrupt nodes (rstore/codec/_speedups.c)."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import speedups
from rstore.codec import stream_node as sn
from rstore.errors import CorruptDataError

from .model import ID, U64, ModelEntry, ref_node
from .strategies import (
    READABLE_FAILURES,
    damaged,
    ids,
    long_strings,
    nodes_with_deletions,
    values,
)

pytestmark = [
    READABLE_FAILURES,
    pytest.mark.skipif(
        not speedups.ENABLED, reason="the C accelerator is not built (pure-Python install)"
    ),
]

Entry = tuple[ID, list[bytes]]


def c_scan(node: bytes, master: ID, start: ID, end: ID, limit: int, out: list[Entry]) -> object:
    assert speedups.c_scan_forward is not None
    return speedups.c_scan_forward(node, *master, *start, *end, limit, out)


def py_scan(node: bytes, master: ID, start: ID, end: ID, limit: int) -> tuple[bool, list[Entry]]:
    out: list[Entry] = []
    return sn.scan_forward_py(node, master, start, end, limit, out), out


@given(nodes_with_deletions(), ids, ids, st.integers(-1, 30), st.integers(0, 3))
@settings(max_examples=400)
def test_c_decoder_equals_the_python_reference(
    node: tuple[ID, bytes], start: ID, end: ID, limit: int, already: int
) -> None:
    master, blob = node
    prefix: list[Entry] = [((0, i), [b"x"]) for i in range(already)]  # `out` may hold entries
    cap = limit if limit <= 0 else limit + already
    out, ref = list(prefix), list(prefix)
    done = c_scan(blob, master, start, end, cap, out)
    want_done = sn.scan_forward_py(blob, master, start, end, cap, ref)
    assert done is want_done
    assert out == ref


@given(st.lists(st.one_of(values, long_strings), min_size=1, max_size=6))
def test_every_value_encoding_decodes_alike(vals: list[bytes]) -> None:
    fv: list[bytes] = []
    for i, v in enumerate(vals):
        fv += [b"f%d" % i, v]
    entries = [ModelEntry((5, 5), fv), ModelEntry((5, 6), fv[::-1])]
    blob = ref_node(entries)
    out: list[Entry] = []
    assert c_scan(blob, (5, 5), (0, 0), (U64, U64), 0, out) is False
    assert out == [((5, 5), fv), ((5, 6), fv[::-1])]


@given(nodes_with_deletions(), st.data())
@settings(max_examples=300)
def test_corrupt_nodes_never_crash_and_leave_out_alone(
    node: tuple[ID, bytes], data: st.DataObject
) -> None:
    master, blob = node
    mutated = damaged(data, blob)
    sentinel: Entry = ((9, 9), [b"kept"])
    out: list[Entry] = [sentinel]
    done = c_scan(mutated, master, (0, 0), (U64, U64), 0, out)
    if done is None:
        assert out == [sentinel]  # handed back untouched; the Python version decides
        return
    # whatever C accepted, the reference reads the same way (or calls it corrupt, when only a
    # check the C decoder leaves to Python fails)
    try:
        ref_done, ref = py_scan(mutated, master, (0, 0), (U64, U64), 0)
    except (CorruptDataError, IndexError, ValueError):
        return
    assert done is ref_done
    assert out[1:] == ref


def test_unknown_encodings_are_handed_back() -> None:
    entries = [ModelEntry((1, 1), [b"f", b"v"])]
    blob = bytearray(ref_node(entries))
    blob[6] = 0xF5  # the master count's encoding byte: not a listpack encoding
    out: list[Entry] = []
    assert c_scan(bytes(blob), (1, 1), (0, 0), (U64, U64), 0, out) is None
    assert out == []
    with pytest.raises(CorruptDataError):
        sn.scan_forward(bytes(blob), (1, 1), (0, 0), (U64, U64), 0, [])


def test_the_environment_switch_turns_it_off() -> None:
    code = "import rstore.codec.speedups as s; print(s.ENABLED)"
    env = {**os.environ, "RSTORE_NO_SPEEDUPS": "1"}
    off = subprocess.run(
        [sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True
    )
    assert off.stdout.strip() == "False", off.stderr


def _py_facts(blob: bytes, master: ID) -> tuple[int, int, int, bool, ID, ID | None] | None:
    """What check_node reports, computed with the Python reference (None: invalid)."""
    from rstore.codec.node_validate import validate_node

    try:
        entries = validate_node(blob, master, deep=True)
        ids = [i for i, _, _ in sn.iter_ids(blob, master)]
        count, deleted = sn.node_counts(blob)
        first = sn.first_live_entry(blob, master)
    except (CorruptDataError, IndexError, ValueError):
        return None
    rising = all(a < b for a, b in itertools.pairwise(ids)) and all(i >= master for i in ids)
    return entries, count, deleted, rising, ids[-1], None if first is None else first[0]


def _c_facts(blob: bytes, master: ID) -> tuple[int, int, int, bool, ID, ID | None] | None:
    assert speedups.c_check_node is not None
    got = speedups.c_check_node(blob, *master)
    if got is None:
        return None
    entries, count, deleted, rising, last_ms, last_seq, first_ms, first_seq = got
    first = None if first_ms < 0 else (first_ms, first_seq)
    return entries, count, deleted, rising, (last_ms, last_seq), first


@given(nodes_with_deletions())
@settings(max_examples=300)
def test_c_node_check_agrees_with_python(node: tuple[ID, bytes]) -> None:
    master, blob = node
    assert _c_facts(blob, master) == _py_facts(blob, master)


@given(nodes_with_deletions(), st.data())
@settings(max_examples=500)
def test_c_node_check_never_accepts_what_python_refuses(
    node: tuple[ID, bytes], data: st.DataObject
) -> None:
    master, blob = node
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        mutated[at] = data.draw(st.integers(0, 255))
    got = _c_facts(bytes(mutated), master)
    if got is not None:  # C accepted: Python must accept it too, with the same facts
        assert got == _py_facts(bytes(mutated), master)


def test_out_of_order_ids_are_reported() -> None:
    fv = [b"f", b"v"]
    node = sn.new_node(fv)
    sn.append_entry(node, (5, 5), (5, 5), fv)  # not after its predecessor
    facts = _c_facts(bytes(node), (5, 5))
    assert facts is not None and facts[3] is False
    assert _py_facts(bytes(node), (5, 5)) == facts


def test_deleted_flags_must_agree_with_the_count() -> None:
    """A tombstone flag on an entry the master still counts live: both versions refuse it."""
    from rstore.codec.node_validate import node_facts

    fv = [b"f", b"v"]
    node = sn.new_node(fv)
    sn.append_entry(node, (5, 5), (5, 6), fv)
    positions = [pos for _, _, pos in sn.iter_ids(node, (5, 5))]
    node[positions[1]] |= sn.FLAG_DELETED  # flag it, leave the master's count at 2
    assert _c_facts(bytes(node), (5, 5)) is None
    with pytest.raises(CorruptDataError, match="live entries"):
        node_facts(bytes(node), (5, 5))


# ----------------------------------------------------------------------------- parse_ids

PLAIN = st.builds(
    lambda ms, seq: b"%d-%d" % (ms, seq), st.integers(0, 10**19 - 1), st.integers(0, 10**19 - 1)
)
ID_LIKE = st.one_of(
    PLAIN,
    st.from_regex(rb"\A[0-9]{0,21}-?[0-9]{0,21}[*\n]?\Z"),
    st.sampled_from([b"-", b"+", b"$", b">", b"0", b"1-", b"-1", b"01-02", b"1-2\0", b" 1-2"]),
    st.binary(max_size=8),
)


@given(st.lists(ID_LIKE, max_size=6))
@settings(max_examples=500)
def test_c_parse_ids_is_the_reference_or_hands_back(args: list[bytes]) -> None:
    from rstore import ids as ids_module
    from rstore.errors import ResponseError

    assert speedups.c_parse_ids is not None
    out = speedups.c_parse_ids(args)
    try:
        reference: object = ids_module.parse_ids(args)
    except ResponseError as exc:
        reference = exc
    if out is None:  # something not plain: the reference parses (or refuses) it
        assert any(re.fullmatch(rb"[0-9]{1,19}-[0-9]{1,19}", a) is None for a in args)
    else:
        assert out == reference


@given(st.lists(PLAIN, min_size=1, max_size=20))
def test_c_parse_ids_takes_every_plain_id(args: list[bytes]) -> None:
    assert speedups.c_parse_ids is not None
    assert speedups.c_parse_ids(args) == [tuple(int(p) for p in a.split(b"-")) for a in args]


# ----------------------------------------------------------------------------- dict entries


@given(nodes_with_deletions(), ids, ids, st.integers(-1, 30), st.integers(0, 3))
@settings(max_examples=400)
def test_c_dict_entries_are_the_reference_reshaped(
    node: tuple[ID, bytes], start: ID, end: ID, limit: int, already: int
) -> None:
    """With ``dicts``, the C scan gives what the reference scan gives, each entry as
    ``dict_entry`` reshapes it (a repeated field keeps its last value), and stops alike."""
    master, blob = node
    prefix = [(b"0-%d" % i, {b"x": b"y"}) for i in range(already)]
    cap = limit if limit <= 0 else limit + already
    out: list[object] = list(prefix)
    assert speedups.c_scan_forward is not None
    done = speedups.c_scan_forward(blob, *master, *start, *end, cap, out, True)
    ref: list[Entry] = [((0, i), [b"x", b"y"]) for i in range(already)]
    want_done = sn.scan_forward_py(blob, master, start, end, cap, ref)
    assert done is want_done
    assert out == prefix + [sn.dict_entry(e) for e in ref[already:]]


@given(nodes_with_deletions(), ids, ids, st.integers(-1, 30), st.integers(0, 3))
@settings(max_examples=200)
def test_the_python_dict_scan_is_the_reference_reshaped(
    node: tuple[ID, bytes], start: ID, end: ID, limit: int, already: int
) -> None:
    """The fallback (a node the C scan hands back, or no C at all) gives the same."""
    master, blob = node
    prefix = [(b"0-%d" % i, {b"x": b"y"}) for i in range(already)]
    cap = limit if limit <= 0 else limit + already
    out: list[object] = list(prefix)
    saved, sn._c_scan_forward = sn._c_scan_forward, None
    try:
        done = sn.scan_forward(blob, master, start, end, cap, out, dicts=True)
    finally:
        sn._c_scan_forward = saved
    ref: list[Entry] = [((0, i), [b"x", b"y"]) for i in range(already)]
    assert done is sn.scan_forward_py(blob, master, start, end, cap, ref)
    assert out == prefix + [sn.dict_entry(e) for e in ref[already:]]


def test_a_page_of_dict_entries_leaves_the_collector_nothing_to_walk() -> None:
    """Entries of bytes come untracked by the garbage collector (as it would untrack them at
    its first look): a page of them sets off no collection that walks them."""
    import gc

    fv = [b"user", b"12345", b"action", b"click"]
    blob = ref_node([ModelEntry((5, i), fv) for i in range(100)])
    out: list[object] = []
    assert speedups.c_scan_forward is not None
    assert speedups.c_scan_forward(blob, 5, 0, 0, 0, U64, U64, 0, out, True) is False
    assert len(out) == 100 and out[0] == (b"5-0", {b"user": b"12345", b"action": b"click"})
    assert not any(gc.is_tracked(e) or gc.is_tracked(e[1]) for e in out)  # type: ignore[index]


ENTRIES = st.lists(
    st.tuples(
        st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
        st.lists(st.sampled_from([b"a", b"b", b"", b"x" * 40]), max_size=8),
    ),
    max_size=20,
)


@given(ENTRIES)
def test_c_dict_entries_are_the_reference(entries: list[tuple[ID, list[bytes]]]) -> None:
    """Scanned entries reshaped in C: each as dict_entry reshapes it, or handed back (None)
    when one is not the shape a scan gives (an odd field list)."""
    assert speedups.c_dict_entries is not None
    out = speedups.c_dict_entries(entries)
    if out is None:
        assert any(len(fv) % 2 for _, fv in entries)
        return
    assert out == [sn.dict_entry(e) for e in entries]
    assert sn.dict_entries(entries) == out
    assert speedups.c_dict_entries([((-1, 0), [])]) is None  # not an ID: handed back
