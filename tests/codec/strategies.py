"""Hypothesis strategies shared by the codec tests."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from .model import ID, INT64_MAX, INT64_MIN, U64, ModelEntry, ref_node

# When a property fails, hypothesis imports libcst to write a patch file; libcst 1.0 uses the
# deprecated mypy_extensions.TypedDict, and with ``filterwarnings = error`` that warning turns the
# failure report into an INTERNALERROR that hides the falsifying example.  Test modules that use
# hypothesis set ``pytestmark = READABLE_FAILURES``.
READABLE_FAILURES = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
)

# The first and last value of every integer encoding, and their neighbours outside it.
INT_BOUNDARIES = sorted(
    {
        b + d
        for b in (0, 127, -4096, 4095, -32768, 32767, -8388608, 8388607, -(2**31), 2**31 - 1)
        for d in (-1, 0, 1)
    }
    | {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX}
)

# Strings that look numeric but are not canonical int64 decimals: they stay strings.
NOT_INT_TEXTS = [
    b"007", b"-0", b"+1", b" 1", b"1 ", b"", b"-", b"00", b"1.0", b"0x10", b"1e3", b"--1",
    b"9223372036854775808", b"-9223372036854775809", b"12345678901234567890",
    b"123456789012345678901", b"\x001", b"1\x00",
]  # fmt: skip

int64s = st.one_of(st.sampled_from(INT_BOUNDARIES), st.integers(INT64_MIN, INT64_MAX))

int_texts = int64s.map(lambda v: b"%d" % v)

# Short strings over an alphabet that makes near-integers likely.
numberish = st.text(alphabet="0123456789-+ .", max_size=22).map(str.encode)

# Lengths on both sides of the 6-bit / 12-bit / 32-bit string boundaries.
long_strings = st.builds(
    lambda n, b: bytes([b]) * n,
    st.sampled_from([62, 63, 64, 65, 4094, 4095, 4096, 4097]),
    st.integers(0, 255),
)

values = st.one_of(
    st.binary(max_size=70),
    int_texts,
    numberish,
    st.sampled_from(NOT_INT_TEXTS),
    long_strings,
)

# Small values only (for strategies that build many entries).
small_values = st.one_of(
    st.binary(max_size=20), int_texts, numberish, st.sampled_from(NOT_INT_TEXTS)
)

FIELD_POOL = [b"a", b"b", b"1", b"-7", b"", b"007", b"field", b"\xff\x00"]
field_lists = st.lists(st.sampled_from(FIELD_POOL), min_size=1, max_size=4)

u64s = st.one_of(
    st.integers(0, 5),
    st.sampled_from([127, 128, 4095, 4096, 2**63 - 1, 2**63, 2**63 + 1, U64 - 1, U64]),
    st.integers(0, U64),
)

ids = st.tuples(u64s, u64s)


@st.composite
def entry_lists(draw: st.DrawFn, min_size: int = 1, max_size: int = 25) -> list[ModelEntry]:
    """Entries with strictly increasing IDs; about half reuse the first entry's field names."""
    sorted_ids: list[ID] = sorted(draw(st.sets(ids, min_size=min_size, max_size=max_size)))
    master_fields = draw(field_lists)
    out = []
    for sid in sorted_ids:
        names = draw(st.one_of(st.just(master_fields), field_lists)) if out else master_fields
        fv: list[bytes] = []
        for name in names:
            fv += [name, draw(small_values)]
        out.append(ModelEntry(sid, fv))
    return out


@st.composite
def nodes_with_deletions(draw: st.DrawFn) -> tuple[ID, bytes]:
    """A node of random entries, some deleted: ``(master_id, listpack)``."""
    entries = draw(entry_lists())
    for e in entries:
        e.deleted = draw(st.booleans())
    return entries[0].id, ref_node(entries)


def damaged(data: st.DataObject, blob: bytes) -> bytes:
    """``blob`` with one to four bytes overwritten, and maybe cut short."""
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        mutated[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        mutated = mutated[: data.draw(st.integers(0, len(mutated)))]
    return bytes(mutated)
