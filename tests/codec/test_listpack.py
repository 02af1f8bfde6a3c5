"""Listpack codec: Redis's exact bytes, every encoding boundary, the integer-vs-string rule,
the saturating header count and backward walking (docs/listpack.md#listpacks)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rstore.codec import listpack as lp
from rstore.errors import CorruptDataError

from .model import (
    INT64_MAX,
    INT64_MIN,
    as_element,
    ref_backlen,
    ref_decode_backlen,
    ref_element,
    ref_listpack,
)
from .strategies import (
    INT_BOUNDARIES,
    NOT_INT_TEXTS,
    READABLE_FAILURES,
    int64s,
    long_strings,
    values,
)

pytestmark = READABLE_FAILURES


def forward_offsets(buf: bytes) -> list[int]:
    out = []
    p = lp.first_element(buf)
    while p is not None and p < len(buf) - 1:
        out.append(p)
        p = lp.next_element(buf, p)
    return out


def backward_offsets(buf: bytes) -> list[int]:
    out = []
    p = lp.prev_element(buf, len(buf) - 1)
    while p is not None:
        out.append(p)
        p = lp.prev_element(buf, p)
    return out[::-1]


# --------------------------------------------------------------------------- verified bytes


def test_example_a_hash_listpack_is_byte_identical() -> None:
    expected = bytes.fromhex("1c000000 0600 816102 0101 816202 ded402 816302 8568656c6c6f06 ff")
    assert lp.build_values([b"a", b"1", b"b", b"-300", b"c", b"hello"]) == expected


@pytest.mark.parametrize(
    ("text", "element"),
    [
        (b"128", "c08002"),
        (b"-1", "dfff02"),
        (b"4095", "cfff02"),
        (b"-4096", "d00002"),
        (b"4096", "f1001003"),
        (b"-4097", "f1ffef03"),
        (b"32768", "f200800004"),
        (b"-8388608", "f200008004"),
        (b"8388608", "f30000800005"),
        (b"2147483648", "f4000000800000000009"),
        (b"-9223372036854775808", "f4000000000000008009"),
        (b"", "8001"),
    ],
)
def test_example_b_elements(text: bytes, element: str) -> None:
    assert lp.encode_value(text) == bytes.fromhex(element)


@pytest.mark.parametrize(
    ("length", "head", "backlen"),
    [
        (63, "bf", "40"),
        (64, "e040", "42"),
        (4095, "efff", "2081"),
        (4096, "f000100000", "2085"),
    ],
)
def test_example_b_string_widths(length: int, head: str, backlen: str) -> None:
    s = b"x" * length
    assert lp.encode_value(s) == bytes.fromhex(head) + s + bytes.fromhex(backlen)


# --------------------------------------------------------------------------- integers


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (0, 2), (127, 2), (128, 3), (-1, 3), (-4096, 3), (4095, 3), (4096, 4), (-4097, 4),
        (32767, 4), (-32768, 4), (32768, 5), (-32769, 5), (8388607, 5), (-8388608, 5),
        (8388608, 6), (-8388609, 6), (2**31 - 1, 6), (-(2**31), 6), (2**31, 10),
        (-(2**31) - 1, 10), (INT64_MAX, 10), (INT64_MIN, 10),
    ],
)  # fmt: skip
def test_integer_width_boundaries(value: int, size: int) -> None:
    element = lp.encode_int(value)
    assert len(element) == size
    assert lp.read_element(element, 0) == (value, size)
    assert lp.value_size(b"%d" % value) == size


@settings(deadline=None)
@given(int64s)
def test_encode_int_is_the_canonical_form(value: int) -> None:
    element = lp.encode_int(value)
    assert element == ref_element(value)
    assert lp.read_element(element, 0) == (value, len(element))


# --------------------------------------------------------------------------- strings


@settings(deadline=None)
@given(st.one_of(st.binary(max_size=100), long_strings))
def test_encode_string_is_the_canonical_form(s: bytes) -> None:
    element = lp.encode_string(s)
    assert element == ref_element(s)
    assert lp.read_element(element, 0) == (s, len(element))


@settings(deadline=None)
@given(values)
@example(b"9223372036854775808")
@example(b"-9223372036854775808")
def test_encode_value_applies_the_integer_rule(s: bytes) -> None:
    element = lp.encode_value(s)
    assert element == ref_element(as_element(s))
    assert lp.value_size(s) == len(element)
    decoded, end = lp.read_element(element, 0)
    assert end == len(element)
    assert lp.element_text(decoded) == s


@pytest.mark.parametrize("text", NOT_INT_TEXTS)
def test_non_canonical_numbers_stay_strings(text: bytes) -> None:
    decoded, _ = lp.read_element(lp.encode_value(text), 0)
    assert decoded == text


@pytest.mark.parametrize("value", INT_BOUNDARIES)
def test_canonical_int64_texts_become_integers(value: int) -> None:
    text = b"%d" % value
    decoded, _ = lp.read_element(lp.encode_value(text), 0)
    assert decoded == value
    assert lp.element_text(decoded) == text


# --------------------------------------------------------------------------- backlen

QUIRK_SIZES = [0, 1, 127, 128, 16382, 16383, 16384, 2097150, 2097151, 2097152]
QUIRK_SIZES += [268435454, 268435455, 268435456, 2**32 + 4]


@pytest.mark.parametrize("size", QUIRK_SIZES)
def test_backlen_sizes_and_bytes(size: int) -> None:
    encoded = lp.encode_backlen(size)
    assert encoded == ref_backlen(size)
    assert lp.backlen_size(size) == len(encoded)
    assert ref_decode_backlen(encoded, len(encoded)) == (size, len(encoded))


@pytest.mark.parametrize(("size", "nbytes"), [(16383, 3), (2097151, 4), (268435455, 5)])
def test_backlen_quirk_takes_one_extra_byte(size: int, nbytes: int) -> None:
    assert len(lp.encode_backlen(size)) == nbytes
    assert len(lp.encode_backlen(size - 1)) == nbytes - 1


def test_backlen_verified_bytes_at_16383() -> None:
    assert lp.encode_backlen(16382) == bytes.fromhex("7ffe")
    assert lp.encode_backlen(16383) == bytes.fromhex("00ffff")


@settings(deadline=None)
@given(st.integers(0, 2**32 + 100))
def test_backlen_matches_reference(size: int) -> None:
    assert lp.encode_backlen(size) == ref_backlen(size)
    assert lp.backlen_size(size) == len(ref_backlen(size))


@pytest.mark.parametrize("length", [16377, 16378, 2097145, 2097146])
def test_quirk_sized_strings_walk_both_ways(length: int) -> None:
    s = b"q" * length
    buf = lp.build([lp.encode_value(s), lp.encode_value(b"x")])
    assert buf == ref_listpack([s, b"x"])
    assert lp.validate(buf, deep=True) == 2
    assert forward_offsets(buf) == backward_offsets(buf) == [6, 6 + len(ref_element(s))]
    assert lp.decode(buf) == [s, b"x"]


# --------------------------------------------------------------------------- whole listpacks


@settings(deadline=None)
@given(st.lists(values, max_size=30))
def test_build_round_trip(items: list[bytes]) -> None:
    buf = lp.build_values(items)
    assert buf == ref_listpack([as_element(s) for s in items])
    assert lp.build([lp.encode_value(s) for s in items]) == buf
    assert lp.validate(buf) == lp.validate(buf, deep=True) == len(items)
    assert [lp.element_text(v) for v in lp.decode(buf)] == items


def test_empty_listpack() -> None:
    buf = lp.build([])
    assert buf == bytes.fromhex("07000000 0000 ff")
    assert lp.validate(buf, deep=True) == 0
    assert lp.first_element(buf) is None
    assert lp.prev_element(buf, 6) is None
    assert lp.decode(buf) == []


@pytest.mark.parametrize("n", [65534, 65535, 65536, 70000])
def test_header_count_saturates_at_65535(n: int) -> None:
    buf = lp.build([b"\x80\x01"] * n)
    assert int.from_bytes(buf[4:6], "little") == min(n, 65535)
    assert lp.validate(buf, deep=True) == n  # counted by walking
    assert lp.build([b"\x80\x01"] * n, count=n) == buf


def test_unknown_header_count_is_accepted_for_any_length() -> None:
    buf = bytearray(lp.build_values([b"a", b"b", b"c"]))
    buf[4:6] = b"\xff\xff"
    assert lp.validate(bytes(buf), deep=True) == 3
    buf[4:6] = (2).to_bytes(2, "little")
    with pytest.raises(CorruptDataError):
        lp.validate(bytes(buf), deep=True)


@settings(deadline=None)
@given(st.lists(values, max_size=30))
def test_prev_element_walks_back_exactly(items: list[bytes]) -> None:
    buf = lp.build_values(items)
    forward = forward_offsets(buf)
    assert len(forward) == len(items)
    assert backward_offsets(buf) == forward


def test_read_int_accepts_decimal_strings_only() -> None:
    assert lp.read_int(lp.encode_string(b"-12"), 0) == (-12, 5)
    with pytest.raises(CorruptDataError):
        lp.read_int(lp.encode_string(b"12x"), 0)
