"""``listpack.validate``: the shallow/deep checks Redis makes, and arbitrary bytes in -> a count
or a ``CorruptDataError``, never anything else (docs/listpack.md#validation)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import listpack as lp
from rstore.errors import CorruptDataError

from .strategies import READABLE_FAILURES, values
from .test_listpack import backward_offsets, forward_offsets

pytestmark = READABLE_FAILURES


def frame(body: bytes, count: int = 1) -> bytes:
    """A listpack with a correct total and EOF around ``body`` (so only deep checks can fail)."""
    total = 6 + len(body) + 1
    return total.to_bytes(4, "little") + count.to_bytes(2, "little") + body + b"\xff"


def check_accepted_is_walkable(buf: bytes) -> None:
    """Whatever deep validation accepts must decode and walk both ways without errors."""
    try:
        count = lp.validate(buf, deep=True)
    except CorruptDataError:
        return
    assert len(lp.decode(buf)) == count
    forward = forward_offsets(buf)
    assert len(forward) == count
    assert backward_offsets(buf) == forward


# --------------------------------------------------------------------------- shallow


@pytest.mark.parametrize(
    "buf",
    [
        b"",
        b"\x06\x00\x00\x00\x00\x00",  # shorter than 7 bytes
        b"\x08\x00\x00\x00\x00\x00\xff",  # total says 8, holds 7
        b"\x07\x00\x00\x00\x00\x00\x00",  # no EOF byte
        b"\x08\x00\x00\x00\x01\x00\x01\xff\x00",  # total right, last byte not EOF
    ],
)
def test_shallow_checks_reject_in_both_modes(buf: bytes) -> None:
    with pytest.raises(CorruptDataError):
        lp.validate(buf)
    with pytest.raises(CorruptDataError):
        lp.validate(buf, deep=True)


@pytest.mark.parametrize(
    "buf",
    [
        frame(b"\xf5\x01"),  # unused encoding byte
        frame(b"\xfe\x01"),
        frame(b"\xff"),  # EOF before the end
        frame(b"\x81a\x03"),  # backlen says 3, element is 2 bytes
        frame(b"\x81a"),  # no backlen
        frame(b"\xe0\x40abc"),  # 64-byte string cut short
        frame(b"\xf0\xff\xff\x00\x00ab"),  # 32-bit length beyond the buffer
        frame(b"\xf4\x01\x02"),  # 64-bit int cut short
        frame(b"\xc1"),  # 13-bit int without its second byte
        frame(b"\x01\x81\x81\x81\x81\x81\x81"),  # backlen run longer than 5 bytes
        # A 6-byte backlen run (into the payload) that decodes to 6 and so points right back at
        # the element's start: only the 5-byte limit catches it.
        frame(b"\x8aabcde\x00\x80\x80\x80\x80\x86"),
        frame(b"\x01\x01", count=2),  # header count disagrees
        frame(b"\x01\x01\x01\x01", count=1),
    ],
)
def test_deep_checks_reject_what_shallow_misses(buf: bytes) -> None:
    lp.validate(buf)  # the frame itself is fine
    with pytest.raises(CorruptDataError):
        lp.validate(buf, deep=True)


def test_non_minimal_encodings_are_accepted_like_redis() -> None:
    # 5 as a 13-bit int and as a 64-bit int; "ab" as a 12-bit string.
    body = b"\xc0\x05\x02" + b"\xf4" + (5).to_bytes(8, "little") + b"\x09" + b"\xe0\x02ab\x04"
    buf = frame(body, count=3)
    assert lp.validate(buf, deep=True) == 3
    assert lp.decode(buf) == [5, 5, b"ab"]


# --------------------------------------------------------------------------- fuzzing


@settings(deadline=None, max_examples=300)
@given(st.binary(max_size=80))
def test_arbitrary_bytes_give_a_count_or_corrupt_data(buf: bytes) -> None:
    check_accepted_is_walkable(buf)


@settings(deadline=None, max_examples=500)
@given(st.binary(max_size=60), st.integers(0, 70000))
def test_arbitrary_framed_bodies_give_a_count_or_corrupt_data(body: bytes, count: int) -> None:
    check_accepted_is_walkable(frame(body, count % 65536))


MUTATIONS = st.sampled_from(["flip", "set", "truncate", "extend", "insert"])


@settings(deadline=None, max_examples=500)
@given(
    st.lists(values, min_size=1, max_size=12),
    MUTATIONS,
    st.integers(0, 10**9),
    st.integers(0, 255),
    st.binary(min_size=1, max_size=8),
    st.booleans(),
)
def test_mutated_listpacks_give_a_count_or_corrupt_data(
    items: list[bytes], how: str, where: int, byte: int, junk: bytes, fix_total: bool
) -> None:
    buf = bytearray(lp.build_values(items))
    pos = where % len(buf)
    if how == "flip":
        buf[pos] ^= 1 << (byte % 8)
    elif how == "set":
        buf[pos] = byte
    elif how == "truncate":
        del buf[pos:]
    elif how == "extend":
        buf += junk
    else:
        buf[pos:pos] = junk
    if fix_total and len(buf) >= 4:
        buf[0:4] = len(buf).to_bytes(4, "little")
    check_accepted_is_walkable(bytes(buf))


@settings(deadline=None)
@given(st.lists(values, min_size=1, max_size=12), st.data())
def test_dropping_elements_is_detected_by_the_count(
    items: list[bytes], data: st.DataObject
) -> None:
    """Whole elements removed, total fixed up, header count kept: deep validation notices."""
    buf = lp.build_values(items)
    offsets = [*forward_offsets(buf), len(buf) - 1]
    i = data.draw(st.integers(0, len(items) - 1))
    j = data.draw(st.integers(i + 1, len(items)))
    cut = bytearray(buf[: offsets[i]] + buf[offsets[j] :])
    cut[0:4] = len(cut).to_bytes(4, "little")
    assert lp.validate(bytes(cut)) == len(items)  # shallow still passes
    with pytest.raises(CorruptDataError):
        lp.validate(bytes(cut), deep=True)
