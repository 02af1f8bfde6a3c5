"""RDB primitives (docs/rdb.md#lengths, docs/rdb.md#strings, docs/rdb.md#other-primitives):
what the writer (rdb/encoding.py) puts down, the reader (rdb/decoding.py) gets back -- lengths at
every encoding boundary, strings as integers, LZF or raw, times and IDs -- and damaged primitives
are refused at their offset."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rstore.codec import lzf
from rstore.errors import CorruptRDBError
from rstore.rdb.decoding import Source
from rstore.rdb.encoding import (
    encode_id,
    encode_length,
    encode_ms,
    encode_raw_id,
    encode_string,
)

from .strategies import INT_BOUNDARIES, NOT_INT_TEXTS, READABLE_FAILURES

pytestmark = READABLE_FAILURES

U64 = (1 << 64) - 1

LENGTH_BOUNDARIES = [
    (0, 1),
    (63, 1),
    (64, 2),
    (16383, 2),
    (16384, 5),
    (2**32 - 1, 5),
    (2**32, 9),
    (U64, 9),
]


@pytest.mark.parametrize(("n", "size"), LENGTH_BOUNDARIES)
def test_length_boundaries(n: int, size: int) -> None:
    encoded = encode_length(n)
    assert len(encoded) == size
    src = Source.from_bytes(encoded)
    assert src.length() == n
    assert src.offset == size


def test_length_bytes_as_redis_writes_them() -> None:
    # docs/rdb.md#lengths, verified on 7.0.15 files
    assert encode_length(105) == bytes.fromhex("4069")
    assert encode_length(176374) == bytes.fromhex("800002b0f6")
    assert encode_length(1700000000002) == bytes.fromhex("810000018bcfe56802")
    assert encode_length(-1) == bytes.fromhex("81ffffffffffffffff")  # entries_read = -1


@given(st.integers(0, U64))
def test_length_round_trip(n: int) -> None:
    encoded = encode_length(n)
    src = Source.from_bytes(encoded + b"tail")
    assert src.length() == n
    assert src.read(4) == b"tail"


# (text, encoded form): docs/rdb.md#strings, each verified against a 7.0.15 file
STRING_FORMS = [
    (b"0", "c000"),
    (b"-128", "c080"),
    (b"127", "c07f"),
    (b"128", "c18000"),
    (b"-32768", "c10080"),
    (b"32768", "c200800000"),
    (b"-2147483648", "c200000080"),
    (b"2147483647", "c2ffffff7f"),
    (b"123", "c07b"),
    (b"2147483648", "0a" + b"2147483648".hex()),
    (b"12345678901", "0b" + b"12345678901".hex()),
    (b"007", "03" + b"007".hex()),
    (b"-0", "02" + b"-0".hex()),
    (b"", "00"),
    (b"9223372036854775808", "13" + b"9223372036854775808".hex()),
]


@pytest.mark.parametrize(("text", "hex_form"), STRING_FORMS)
def test_string_forms(text: bytes, hex_form: str) -> None:
    assert encode_string(text).hex() == hex_form
    assert Source.from_bytes(bytes.fromhex(hex_form)).string() == text


@pytest.mark.parametrize("value", INT_BOUNDARIES)
def test_integer_texts_round_trip(value: int) -> None:
    text = b"%d" % value
    encoded = encode_string(text)
    if -(2**31) <= value < 2**31:
        assert encoded[0] >> 6 == 3  # an integer encoding
        width = 1 if -128 <= value <= 127 else 2 if -32768 <= value <= 32767 else 4
        assert len(encoded) == 1 + width
    else:
        assert encoded[0] >> 6 != 3
    assert Source.from_bytes(encoded).string() == text


@pytest.mark.parametrize("text", NOT_INT_TEXTS)
def test_non_canonical_integers_stay_strings(text: bytes) -> None:
    encoded = encode_string(text)
    assert encoded == encode_length(len(text)) + text
    assert Source.from_bytes(encoded).string() == text


def test_lzf_only_past_20_bytes_and_when_it_saves_4() -> None:
    assert encode_string(b"a" * 20) == b"\x14" + b"a" * 20
    long = encode_string(b"a" * 21)
    assert long[0] == 0xC3
    assert encode_string(b"a" * 21, compress=False) == b"\x15" + b"a" * 21
    # the compressor's budget is len - 4: when its output would not fit, the raw form
    incompressible = bytes(range(21, 121))
    assert encode_string(incompressible) == b"\x40\x64" + incompressible


@given(st.binary(min_size=21, max_size=3000) | st.builds(b"ab".__mul__, st.integers(11, 9000)))
def test_lzf_strings(data: bytes) -> None:
    encoded = encode_string(data)
    packed = lzf.compress(data, len(data) - 4)
    if packed is None:
        assert encoded == encode_length(len(data)) + data
    else:
        assert encoded == b"\xc3" + encode_length(len(packed)) + encode_length(len(data)) + packed
    assert Source.from_bytes(encoded).string() == data


@given(st.binary(max_size=400), st.booleans())
@example(b"x" * 70000, True)  # a 5-byte length inside the LZF header
@example(b"x" * 70000, False)
def test_string_round_trip_and_skip(data: bytes, compress: bool) -> None:
    encoded = encode_string(data, compress=compress)
    src = Source.from_bytes(encoded + b"!")
    assert src.string() == data
    assert src.byte() == ord("!")
    skipper = Source.from_bytes(encoded + b"!")
    assert skipper.skip_string() == len(encoded)
    assert skipper.byte() == ord("!")


@given(st.integers(-(2**63), 2**63 - 1))
def test_ms_time(ms: int) -> None:
    encoded = encode_ms(ms)
    assert len(encoded) == 8
    assert encoded == ms.to_bytes(8, "little", signed=True)
    assert Source.from_bytes(encoded).ms_time() == ms


@given(st.tuples(st.integers(0, U64), st.integers(0, U64)))
def test_ids(sid: tuple[int, int]) -> None:
    raw = encode_raw_id(sid)
    assert len(raw) == 16
    assert Source.from_bytes(raw).raw_id() == sid
    assert Source.from_bytes(encode_id(sid)).length_id() == sid


# --------------------------------------------------------------------------- damaged primitives

BAD = [
    ("reserved length encoding", b"\x00\x82", "unknown length encoding 0x82", 1),
    ("string encoding as a length", b"\x00\xc0\x01", "string encoding where a length", 1),
    ("unknown string encoding", b"\x00\xc4", "unknown string encoding 4", 1),
    ("string past the end", b"\x00\x0aabc", "length of 10 bytes runs past the end", 2),
    ("cut inside a 32-bit length", b"\x00\x80\x00", "runs past the end", 2),
    ("cut inside an int16", b"\x00\xc1\x01", "runs past the end", 2),
    ("LZF larger than it could expand", b"\x00\xc3\x01\x80\x00\x10\x00\x00a", "implausible", 1),
    ("LZF that does not expand as declared", b"\x00\xc3\x02\x05\x00a", "invalid LZF", 1),
    ("LZF data past the end", b"\x00\xc3\x10\x20\x00a", "length of 16 bytes runs past", 4),
]


@pytest.mark.parametrize(("data", "text", "offset"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_damaged_primitives(data: bytes, text: str, offset: int | None) -> None:
    src = Source.from_bytes(data)
    src.byte()
    with pytest.raises(CorruptRDBError, match=text) as caught:
        if text.startswith("string encoding where"):
            src.length()
        else:
            src.string()
    if offset is not None:
        assert caught.value.offset == offset
