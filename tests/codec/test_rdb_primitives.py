"""RDB primitives as hypothesis properties: LZF (the pure port against liblzf, Redis's budget
rule, damaged input), CRC64 (Redis's check value, crcmod, incremental use), and the length and
string encodings written by rstore.codec.rdb_encoding and read back by rstore.rdb.source."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.codec import lzf
from rstore.codec.crc64 import crc64
from rstore.codec.rdb_encoding import (
    encode_id,
    encode_length,
    encode_ms,
    encode_raw_id,
    encode_string,
)
from rstore.errors import CorruptDataError, CorruptRDBError
from rstore.rdb.source import Source

from .strategies import READABLE_FAILURES

pytestmark = READABLE_FAILURES
HAVE_LIBLZF = importlib.util.find_spec("lzf") is not None

# Compressible and incompressible data alike: repeats, runs, text, random bytes.
data = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=12), st.integers(1, 400)),
    st.text(max_size=200).map(str.encode),
    st.builds(
        lambda a, b: a + b * 50 + a, st.binary(max_size=40), st.binary(min_size=1, max_size=3)
    ),
)


# ----------------------------------------------------------------------------- LZF


@given(data)
def test_lzf_round_trip(raw: bytes) -> None:
    for compress, decompress in (
        (lzf.py_compress, lzf.py_decompress),
        (lzf.compress, lzf.decompress),
    ):
        packed = compress(raw, len(raw) + 64)
        if raw:
            assert packed is not None
            assert decompress(packed, len(raw)) == raw


@given(data, st.integers(0, 400))
def test_lzf_budget_is_respected(raw: bytes, budget: int) -> None:
    """Redis asks for at most ``len - 4`` bytes and stores the string raw when LZF gives None:
    the output never exceeds the budget, and both implementations agree on giving up."""
    py = lzf.py_compress(raw, budget)
    assert py is None or len(py) <= budget
    chosen = lzf.compress(raw, budget)
    assert (chosen is None) == (py is None)


@pytest.mark.skipif(not HAVE_LIBLZF, reason="python-lzf is not installed")
@given(data, st.integers(1, 500))
@settings(max_examples=400)
def test_pure_port_is_byte_identical_to_liblzf(raw: bytes, budget: int) -> None:
    import lzf as liblzf

    expected = liblzf.compress(raw, budget - 1) if budget > 1 else None
    assert lzf.py_compress(raw, budget) == expected


@given(st.binary(min_size=1, max_size=80), st.integers(0, 300))
def test_damaged_lzf_raises_cleanly(packed: bytes, ulen: int) -> None:
    for decompress in (lzf.py_decompress, lzf.decompress):
        try:
            out = decompress(packed, ulen)
        except CorruptDataError:
            continue
        assert len(out) == ulen


# ----------------------------------------------------------------------------- CRC64


def test_crc64_check_value() -> None:
    """Redis's crc64 (Jones polynomial, reflected) of "123456789"."""
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert crc64(b"") == 0


@given(st.binary(max_size=500), st.integers(0, 500))
def test_crc64_is_incremental(blob: bytes, cut: int) -> None:
    cut = min(cut, len(blob))
    assert crc64(blob[cut:], crc64(blob[:cut])) == crc64(blob)
    assert crc64(memoryview(blob)) == crc64(bytearray(blob)) == crc64(blob)


# ----------------------------------------------------------------------------- lengths, strings


LENGTH_EDGES = [0, 1, 63, 64, 16383, 16384, 2**32 - 1, 2**32, 2**64 - 1]


@given(st.one_of(st.sampled_from(LENGTH_EDGES), st.integers(0, 2**64 - 1)))
def test_length_round_trip_with_the_smallest_encoding(n: int) -> None:
    blob = encode_length(n)
    assert Source.from_bytes(blob).length() == n
    size = 1 if n < 64 else 2 if n < 16384 else 5 if n < 2**32 else 9
    assert len(blob) == size


INT_STRINGS = [
    *(b"0", b"-1", b"127", b"-128", b"128", b"32767", b"-32768", b"32768"),
    *(b"2147483647", b"-2147483648", b"2147483648", b"007", b"-0", b"+1", b" 1"),
]


@given(st.one_of(st.sampled_from(INT_STRINGS), data), st.booleans())
def test_string_round_trip(raw: bytes, compress: bool) -> None:
    blob = encode_string(raw, compress=compress)
    src = Source.from_bytes(blob + b"tail")
    assert src.string() == raw
    assert src.read(4) == b"tail"  # consumed exactly the string
    skipper = Source.from_bytes(blob)
    assert skipper.skip_string() == len(blob)


def test_string_encodings_are_redis_choices() -> None:
    assert encode_string(b"12") == b"\xc0\x0c"  # int8
    assert encode_string(b"-200") == b"\xc1\x38\xff"  # int16 LE
    assert encode_string(b"70000") == b"\xc2\x70\x11\x01\x00"  # int32 LE
    assert encode_string(b"007") == b"\x03007"  # not canonical: raw
    assert encode_string(b"2147483648") == b"\x0a2147483648"  # past int32: raw
    long = b"a" * 100
    assert encode_string(long)[0] == 0xC3  # LZF when it saves
    assert encode_string(long, compress=False) == b"\x40\x64" + long
    assert encode_string(b"a" * 20)[0] == 20  # 20 bytes: never compressed


@given(
    st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.integers(-(2**63), 2**63 - 1),
)
def test_ids_and_times_round_trip(sid: tuple[int, int], ms: int) -> None:
    src = Source.from_bytes(encode_raw_id(sid) + encode_id(sid) + encode_ms(ms))
    assert src.raw_id() == sid
    assert src.length_id() == sid
    assert src.ms_time() == ms


@given(st.binary(max_size=40))
@settings(max_examples=300)
def test_damaged_strings_raise_rdb_errors(blob: bytes) -> None:
    src = Source.from_bytes(blob)
    try:
        src.string()
    except CorruptRDBError as exc:
        assert "at byte" in str(exc)
