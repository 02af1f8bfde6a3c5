"""Integer and stream-ID parsing against a tiny reference model written from the rules in
docs/semantics.md#stream-ids (and docs/semantics.md#integers for the integer parsers)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rstore import ids
from rstore.errors import ResponseError
from rstore.numbers import string2ll, string2ull, strtoull

from .model import ID, U64, ref_string2ll
from .strategies import READABLE_FAILURES, int_texts, numberish

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
INVALID_START = "ERR invalid start ID for the interval"
INVALID_END = "ERR invalid end ID for the interval"

_STRTOULL = re.compile(rb"[ \t\n\x0b\x0c\r]*([+-]?)([0-9]+)")

pytestmark = READABLE_FAILURES


def ref_strtoull(s: bytes) -> int | None:
    """C ``strtoull(s, &end, 10)`` that must consume all of a non-empty ``s`` without overflow:
    leading C white space, one optional sign (``-`` wraps modulo 2**64), then digits."""
    m = _STRTOULL.fullmatch(s)
    if m is None or int(m[2]) > U64:
        return None
    return (-int(m[2])) % (1 << 64) if m[1] == b"-" else int(m[2])


def ref_string2ull(s: bytes) -> int | None:
    """Strict canonical integer first (a negative one is invalid), else the strtoull fallback."""
    v = ref_string2ll(s)
    if v is not None:
        return v if v >= 0 else None
    return ref_strtoull(s)


def ref_parse(arg: bytes, *, strict: bool, missing_seq: int, star: bool) -> tuple[int, int | None]:
    """The generic ID parser (docs/semantics.md#the-three-parsers); raises
    ``ValueError(message)`` when invalid."""
    if len(arg) > 127:
        raise ValueError(INVALID_ID)
    arg = arg.split(b"\0", 1)[0]  # the C string ends at the first NUL
    if arg in (b"-", b"+"):
        if strict:
            raise ValueError(INVALID_ID)
        return (0, 0) if arg == b"-" else (U64, U64)
    ms_text, dash, seq_text = arg.partition(b"-")
    ms = ref_string2ull(ms_text)
    if ms is None:
        raise ValueError(INVALID_ID)
    if not dash:
        return ms, missing_seq
    if star and seq_text == b"*":
        return ms, None
    seq = ref_string2ull(seq_text)
    if seq is None:
        raise ValueError(INVALID_ID)
    return ms, seq


def ref_interval(arg: bytes, *, missing_seq: int, is_end: bool) -> ID:
    if len(arg) > 1 and arg[:1] == b"(":
        ms, seq = ref_parse(arg[1:], strict=True, missing_seq=missing_seq, star=False)
        assert seq is not None
        n = (ms << 64 | seq) + (-1 if is_end else 1)
        if not 0 <= n <= (1 << 128) - 1:
            raise ValueError(INVALID_END if is_end else INVALID_START)
        return n >> 64, n & U64
    ms, seq = ref_parse(arg, strict=False, missing_seq=missing_seq, star=False)
    assert seq is not None
    return ms, seq


def outcome(fn: object, *args: object, **kwargs: object) -> object:
    """The value, or the error text, of ``fn(*args, **kwargs)``."""
    try:
        return fn(*args, **kwargs)  # type: ignore[operator]
    except ResponseError as err:
        return err.line
    except ValueError as err:
        return str(err)


# --------------------------------------------------------------------------- integers

ID_PIECES = [
    b"0", b"1", b"5", b"007", b"-", b"+", b" ", b"\t", b"\x0b", b"*", b"(", b"\x00", b"x",
    b"18446744073709551615", b"18446744073709551616", b"9223372036854775808",
    b"9223372036854775807", b"-9223372036854775808", b"",
]  # fmt: skip
pieces = st.lists(st.sampled_from(ID_PIECES), max_size=6).map(b"".join)
integer_inputs = st.one_of(numberish, int_texts, pieces, st.binary(max_size=24))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b"0", 0), (b"-1", -1), (b"9223372036854775807", 2**63 - 1),
        (b"-9223372036854775808", -(2**63)), (b"007", None), (b"-0", None), (b"+1", None),
        (b" 1", None), (b"1 ", None), (b"", None), (b"-", None), (b"00", None), (b"1.0", None),
        (b"9223372036854775808", None), (b"-9223372036854775809", None),
    ],
)  # fmt: skip
def test_string2ll_verified_examples(text: bytes, value: int | None) -> None:
    assert string2ll(text) == value


@settings(deadline=None, max_examples=300)
@given(integer_inputs)
def test_integer_parsers_match_reference(s: bytes) -> None:
    assert string2ll(s) == ref_string2ll(s)
    assert strtoull(s) == ref_strtoull(s)
    assert string2ull(s) == ref_string2ull(s)


# --------------------------------------------------------------------------- stream IDs

MAX = U64
# The table of docs/semantics.md#the-three-parsers and more, checked against valkey-server 8.0.1
# with XADD.
VERIFIED = [
    (b"007-01", (7, 1)),
    (b"+1-+2", (1, 2)),
    (b" 5", (5, 0)),
    (b"1- 2", (1, 2)),
    (b"1- -5", (1, MAX - 4)),  # strtoull's '-' wraps
    (b"1--5", INVALID_ID),  # "-5" is a canonical negative integer: invalid, no fallback
    (b"1--05", (1, MAX - 4)),  # not canonical -> strtoull -> wraps
    (b"1--0", (1, 0)),
    (b"1--18446744073709551615", (1, 1)),
    (b"1--18446744073709551616", INVALID_ID),
    (b"1--9223372036854775809", (1, 2**63 - 1)),
    (b"1-9223372036854775808", (1, 2**63)),
    (b"1-\t5", (1, 5)),
    (b"1\x002-3", (1, 0)),  # the text ends at the NUL
    (b"1-\x00", INVALID_ID),
    (b"-5", INVALID_ID),
    (b"-0", INVALID_ID),
    (b"5-x", INVALID_ID),
    (b"6-", INVALID_ID),
    (b"1-2-3", INVALID_ID),
    (b"0x10", INVALID_ID),
    (b"", INVALID_ID),
    (b"18446744073709551616", INVALID_ID),
    (b"0" * 127, (0, 0)),
    (b"0" * 128, INVALID_ID),  # longer than 127 bytes
    (b"-", INVALID_ID),
    (b"+", INVALID_ID),
]


@pytest.mark.parametrize(("arg", "expected"), VERIFIED)
def test_parse_id_verified_examples(arg: bytes, expected: object) -> None:
    assert outcome(ids.parse_id, arg) == expected


@pytest.mark.parametrize(
    ("arg", "expected"),
    [(b"2-*", (2, None)), (b"2-* ", INVALID_ID), (b"4-**", INVALID_ID), (b"*", INVALID_ID)],
)
def test_parse_xadd_id_star(arg: bytes, expected: object) -> None:
    assert outcome(ids.parse_xadd_id, arg) == expected


@pytest.mark.parametrize(
    ("arg", "is_end", "expected"),
    [
        (b"(1", False, (1, 1)),
        (b"(2", True, (1, MAX)),  # missing seq 0 for this call
        (b"(-", False, INVALID_ID),
        (b"(+", True, INVALID_ID),
        (b"((1", False, INVALID_ID),
        (b"(", False, INVALID_ID),
        (b"(\x00", False, INVALID_ID),
        (b"-", False, (0, 0)),
        (b"+", True, (MAX, MAX)),
        (b"-\x00x", False, (0, 0)),
        (b"(0-0", True, INVALID_END),
        (b"(18446744073709551615-18446744073709551615", False, INVALID_START),
        (b"(" + b"0" * 126 + b"1", False, (1, 1)),  # 128 bytes: only the part after ( counts
    ],
)
def test_parse_interval_id_examples(arg: bytes, is_end: bool, expected: object) -> None:
    assert outcome(ids.parse_interval_id, arg, missing_seq=0, is_end=is_end) == expected


def test_exclusive_range_example() -> None:
    """XRANGE k (1 (2 means 1-1 .. 2-(2**64-2) when the end's missing seq is max."""
    assert ids.parse_interval_id(b"(1", missing_seq=0, is_end=False) == (1, 1)
    assert ids.parse_interval_id(b"(2", missing_seq=MAX, is_end=True) == (2, MAX - 1)


prefixes = st.sampled_from([b"", b"(", b"-", b"((", b"\x00"])
id_args = st.one_of(
    pieces,
    st.builds(bytes.__add__, prefixes, pieces),
    st.builds(lambda p, n: p + b"0" * n + b"1", prefixes, st.integers(120, 130)),  # near 127 bytes
    st.binary(max_size=12),
)


@settings(deadline=None, max_examples=400)
@given(id_args, st.booleans(), st.sampled_from([0, MAX]))
@example(b"1--05", True, 0)
@example(b"(18446744073709551615-18446744073709551615", False, 0)
def test_id_parsers_match_reference(arg: bytes, strict: bool, missing_seq: int) -> None:
    assert outcome(ids.parse_id, arg, strict=strict, missing_seq=missing_seq) == outcome(
        ref_parse, arg, strict=strict, missing_seq=missing_seq, star=False
    )
    assert outcome(ids.parse_xadd_id, arg) == outcome(
        ref_parse, arg, strict=True, missing_seq=0, star=True
    )
    for is_end in (False, True):
        assert outcome(
            ids.parse_interval_id, arg, missing_seq=missing_seq, is_end=is_end
        ) == outcome(ref_interval, arg, missing_seq=missing_seq, is_end=is_end)
