"""``node_validate.validate_node``: accepts every node rstore builds, rejects broken structure, and
for any bytes either returns or raises ``CorruptDataError`` -- and a node it accepts can be read
by every reader without errors (docs/listpack.md#checking-a-node)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import listpack as lp
from rstore.codec import stream_node as sn
from rstore.codec.node_validate import validate_node
from rstore.errors import CorruptDataError

from .model import ID, U64, ModelEntry
from .strategies import READABLE_FAILURES, entry_lists
from .test_stream_node import Entry, build, delete

ANY: tuple[ID, ID] = ((0, 0), (U64, U64))

pytestmark = READABLE_FAILURES


def elements_of(buf: bytes | bytearray) -> list[bytes]:
    """The encoded elements (with backlen) of a listpack, in order."""
    out = []
    p = lp.first_element(buf)
    while p is not None and p < len(buf) - 1:
        q = lp.next_element(buf, p)
        out.append(bytes(buf[p:q]))
        p = q
    return out


def lp_count_indices(entries: list[ModelEntry]) -> list[int]:
    """Element index of each entry's lp_count, from the layout in docs/listpack.md#entries."""
    n_master = len(entries[0].fields)
    i = n_master + 4
    out = []
    for e in entries:
        i += n_master + 4 if e.fields == entries[0].fields else 2 * len(e.fields) + 5
        out.append(i - 1)
    return out


def read_everything(node: bytes, master: ID) -> None:
    """Every reader, on a node that validated: none may raise."""
    sn.node_counts(node)
    sn.master_fields(node)
    raw = list(sn.iter_raw(node, master))
    assert [r[:3] for r in raw] == list(sn.iter_ids(node, master))
    sn.first_live_entry(node, master)
    assert sn.last_entry_id(node, master) == raw[-1].id
    forward: list[Entry] = []
    backward: list[Entry] = []
    sn.scan_forward(node, master, *ANY, 0, forward)
    sn.scan_backward(node, master, *ANY, 0, backward)
    assert backward == forward[::-1]


@settings(deadline=None, max_examples=150)
@given(entry_lists(), st.sets(st.integers(0, 24)))
def test_every_built_node_validates(entries: list[ModelEntry], dead: set[int]) -> None:
    master, node = build(entries)
    delete(node, master, entries, dead)
    assert validate_node(node, master, deep=True) == len(entries)
    validate_node(node, master, deep=False)  # the shallow checks pass too
    read_everything(bytes(node), master)


# --------------------------------------------------------------------------- broken structure

Mutation = Callable[[list[bytes], list[ModelEntry]], list[bytes]]


def _set(index: int, element: bytes) -> Mutation:
    def mutate(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
        els[index] = element
        return els

    return mutate


def _counter_plus_one(index: int) -> Mutation:
    def mutate(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
        els[index] = lp.encode_int(lp.read_int(els[index], 0)[0] + 1)
        return els

    return mutate


def _lp_count(delta: int) -> Mutation:
    def mutate(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
        i = lp_count_indices(entries)[-1]
        els[i] = lp.encode_int(lp.read_int(els[i], 0)[0] + delta)
        return els

    return mutate


def _terminator(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
    els[len(entries[0].fields) + 3] = lp.encode_int(1)
    return els


def _drop_last_entry(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
    ends = lp_count_indices(entries)
    return els[: ends[-2] + 1] if len(ends) > 1 else els[: len(entries[0].fields) + 4]


def _duplicate_last_entry(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
    ends = lp_count_indices(entries)
    start = ends[-2] + 1 if len(ends) > 1 else len(entries[0].fields) + 4
    return els + els[start:]


def _first_entry_head(k: int, element: bytes) -> Mutation:
    """Replace the first entry's flags (k=0), ms delta (1) or seq delta (2)."""

    def mutate(els: list[bytes], entries: list[ModelEntry]) -> list[bytes]:
        els[len(entries[0].fields) + 4 + k] = element
        return els

    return mutate


STRUCTURAL: dict[str, Mutation] = {
    "count + 1": _counter_plus_one(0),
    "deleted + 1": _counter_plus_one(1),
    "count is text": _set(0, lp.encode_string(b"one")),
    "master field count too big": _set(2, lp.encode_int(10**6)),
    "master terminator not 0": _terminator,
    "lp_count + 1": _lp_count(1),
    "lp_count - 1": _lp_count(-1),
    "last entry dropped": _drop_last_entry,
    "last entry duplicated": _duplicate_last_entry,
    "flags is text": _first_entry_head(0, lp.encode_string(b"x")),
    "ms delta is text": _first_entry_head(1, lp.encode_string(b"1x")),
    "seq delta is text": _first_entry_head(2, lp.encode_string(b"")),
}


@settings(deadline=None, max_examples=30)
@pytest.mark.parametrize("name", sorted(STRUCTURAL))
@given(entries=entry_lists(max_size=8), dead=st.sets(st.integers(0, 7)))
def test_broken_structure_is_rejected(name: str, entries: list[ModelEntry], dead: set[int]) -> None:
    master, node = build(entries)
    delete(node, master, entries, dead)
    els = STRUCTURAL[name](elements_of(node), entries)
    broken = lp.build(els)
    assert lp.validate(broken, deep=True) == len(els)  # still a well-formed listpack
    with pytest.raises(CorruptDataError):
        validate_node(broken, master, deep=True)


@pytest.mark.parametrize(
    "buf",
    [
        bytes.fromhex("07000000 0000 ff"),  # empty listpack
        bytes.fromhex("08000000 0000 0101"),  # wrong total, no EOF
        b"",
    ],
)
def test_shallow_problems_are_rejected_in_both_modes(buf: bytes) -> None:
    for deep in (False, True):
        with pytest.raises(CorruptDataError):
            validate_node(buf, (0, 0), deep=deep)


# --------------------------------------------------------------------------- fuzzing


def outcome(buf: bytes, master: ID) -> bool:
    """``True`` if accepted (and then fully readable), ``False`` if rejected as corrupt."""
    try:
        validate_node(buf, master, deep=True)
    except CorruptDataError:
        return False
    read_everything(buf, master)
    return True


@settings(deadline=None, max_examples=300)
@given(
    entry_lists(max_size=8),
    st.sampled_from(["flip", "set", "insert"]),
    st.integers(0, 10**6),
    st.integers(0, 255),
    st.binary(min_size=1, max_size=6),
    st.booleans(),
)
def test_mutated_nodes_are_rejected_or_readable(
    entries: list[ModelEntry], how: str, where: int, byte: int, junk: bytes, fix_total: bool
) -> None:
    master, node = build(entries)
    pos = where % len(node)
    if how == "flip":
        node[pos] ^= 1 << (byte % 8)
    elif how == "set":
        node[pos] = byte
    else:
        node[pos:pos] = junk
    if fix_total:
        node[0:4] = len(node).to_bytes(4, "little")
    outcome(bytes(node), master)


@settings(deadline=None, max_examples=200)
@given(entry_lists(max_size=8), st.integers(0, 10**6), st.binary(max_size=8))
def test_truncated_or_extended_nodes_are_rejected(
    entries: list[ModelEntry], where: int, junk: bytes
) -> None:
    """Cut the element area short or add bytes before the EOF, with total_bytes and the EOF
    repaired: the element count no longer matches, so this is always caught."""
    master, node = build(entries)
    cut = 6 + where % (len(node) - 7)
    if junk:
        changed = node[:-1] + junk + b"\xff"
    else:
        changed = node[:cut] + b"\xff"
    changed[0:4] = len(changed).to_bytes(4, "little")
    assert outcome(bytes(changed), master) is False


@settings(deadline=None, max_examples=300)
@given(st.binary(min_size=7, max_size=80))
def test_arbitrary_bytes_are_rejected_or_readable(body: bytes) -> None:
    buf = len(body).to_bytes(4, "little") + body[4:-1] + b"\xff"
    outcome(buf, (1, 2))
