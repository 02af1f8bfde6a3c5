"""XADD (§2.1): option grammar, error precedence, ID rules, nil kinds and trimming on append."""

from __future__ import annotations

import time

import pytest

from .harness import ID_RE, Oracle, is_error

pytestmark = pytest.mark.oracle

FUTURE_MS = "99999999999999"


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("*",),
        ("*", "f"),
        ("*", "f", "v", "g"),
        ("1-0", "f", "v", "g"),
        ("NOMKSTREAM", "1-0", "f"),
        ("MAXLEN", "1"),
        ("MAXLEN",),
        ("MAXLEN", "1", "f", "v"),
        ("MAXLEN", "1", "*", "f", "v", "x"),
        ("MAXLEN", "~"),
        ("MAXLEN", "~", "*", "f", "v"),
        ("MAXLEN", "=", "*", "f", "v"),
        ("LIMIT", "1", "*", "f"),
    ],
)
def test_argument_count(oracle: Oracle, args: tuple[str, ...]) -> None:
    oracle.both("XADD", "s", *args)
    oracle.assert_same_state()


@pytest.mark.parametrize(
    "options",
    [
        ("MAXLEN", "1", "MAXLEN", "2"),
        ("MAXLEN", "1", "MINID", "2"),
        ("MINID", "1", "MAXLEN", "2"),
        ("MINID", "1", "MINID", "1"),
        ("MAXLEN", "-1"),
        ("MAXLEN", "-0"),
        ("MAXLEN", "x"),
        ("MAXLEN", ""),
        ("MAXLEN", " 5"),
        ("MAXLEN", "+5"),
        ("MAXLEN", "05"),
        ("MAXLEN", "5.0"),
        ("MAXLEN", "9223372036854775807"),
        ("MAXLEN", "9223372036854775808"),
        ("MAXLEN", "-9223372036854775808"),
        ("MAXLEN", "~", "x"),
        ("maxlen", "~", "1"),
        ("MaxLen", "=", "1"),
        ("MAXLEN", "=", "1", "LIMIT", "5"),
        ("MAXLEN", "1", "LIMIT", "0"),
        ("LIMIT", "5"),
        ("LIMIT", "0"),
        ("LIMIT", "-0"),
        ("LIMIT", "-1"),
        ("LIMIT", "x"),
        ("LIMIT", "9223372036854775807"),
        ("LIMIT", "-1", "MAXLEN", "~", "1"),
        ("MAXLEN", "~", "1", "LIMIT", "-1"),
        ("MAXLEN", "~", "1", "LIMIT", "x"),
        ("MAXLEN", "~", "1", "LIMIT", "2"),
        ("MAXLEN", "~", "1", "LIMIT", "1", "LIMIT", "0"),
        ("LIMIT", "1", "MAXLEN", "~", "1"),
        ("MINID", "-"),
        ("MINID", "+"),
        ("MINID", "(5"),
        ("MINID", "bad"),
        ("minid", "~", "3", "limit", "1"),
        ("MINID", "~", "3", "LIMIT", "-5"),
        ("NOMKSTREAM", "NOMKSTREAM"),
        ("nomkstream", "MAXLEN", "0"),
        ("MAXLEN", "1", "NOMKSTREAM", "MINID", "1"),
        ("MAXLEN", "-1", "LIMIT", "x"),
        ("LIMIT", "x", "MAXLEN", "-1"),
        ("MAXLEN", "x", "MINID", "bad"),
    ],
)
def test_trim_options_and_their_errors(oracle: Oracle, options: tuple[str, ...]) -> None:
    both = oracle.both
    for key in ("missing", "s"):
        if key == "s":
            for i in range(1, 6):
                both("XADD", "s", f"{i}-0", "f", str(i))
        both("XADD", key, *options, "9-0", "f", "v")
        both("XADD", key, *options, "10-0", "f", "v", "odd")
    oracle.assert_same_state()


def test_nomkstream_replies_nil_bulk_and_creates_nothing(oracle: Oracle) -> None:
    both = oracle.both
    assert both("XADD", "s", "NOMKSTREAM", "1-0", "f", "v") is None
    both("EXISTS", "s")
    both("XADD", "s", "1-0", "f", "v")
    both("XADD", "s", "NOMKSTREAM", "2-0", "f", "v")
    oracle.assert_same_state()


@pytest.mark.parametrize("zero", ["0-0", "0", "00", "0-00", " 0"])
def test_zero_id_is_refused_before_the_key_exists(oracle: Oracle, zero: str) -> None:
    assert is_error(oracle.both("XADD", "s", zero, "f", "v"))
    oracle.both("XADD", "s", "MAXLEN", "0", zero, "f", "v")
    oracle.assert_same_state()


def test_ids_must_grow_past_last_id_even_when_deleted(oracle: Oracle) -> None:
    both = oracle.both
    both("XADD", "s", "5-5", "f", "v")
    both("XDEL", "s", "5-5")
    for sid in ("5-5", "5-4", "4-9", "5", "5-*", "5-6"):
        both("XADD", "s", sid, "f", sid)
    both("XTRIM", "s", "MAXLEN", "0")
    both("XADD", "s", "5-6", "f", "v")
    both("XADD", "s", "6-*", "f", "v")
    oracle.assert_same_state()


def test_ms_star_form(oracle: Oracle) -> None:
    both = oracle.both
    for sid in ("0-*", "0-*", "3-*", "3-*", "2-*", "3-*", "007-*", "18446744073709551615-*"):
        both("XADD", "s", sid, "f", "v")
    both("XADD", "t", "5-18446744073709551615", "f", "v")
    both("XADD", "t", "5-*", "f", "v")
    both("XADD", "t", "6-*", "f", "v")
    oracle.assert_same_state()


def test_auto_id_after_a_future_last_id_is_deterministic(oracle: Oracle) -> None:
    both = oracle.both
    both("XADD", "s", f"{FUTURE_MS}-5", "f", "v")
    for _ in range(3):
        both("XADD", "s", "*", "f", "v")
    both("XADD", "t", f"{FUTURE_MS}-18446744073709551615", "f", "v")
    both("XADD", "t", "*", "f", "v")
    oracle.assert_same_state()


def test_exhausted_stream(oracle: Oracle) -> None:
    both = oracle.both
    top = "18446744073709551615-18446744073709551615"
    both("XADD", "s", top, "f", "v")
    for sid in ("*", top, "1-1", "18446744073709551615-*"):
        assert is_error(both("XADD", "s", sid, "f", "v"))
    both("XADD", "u", "18446744073709551615-18446744073709551614", "f", "v")
    both("XADD", "u", "18446744073709551615-*", "f", "v")
    both("XADD", "u", "18446744073709551615-*", "f", "v")
    oracle.assert_same_state()


def test_auto_id_uses_the_clock(oracle: Oracle) -> None:
    """`*` on a new stream: both give `<now>-0`; time differs, so compare the shape only."""
    before = int(time.time() * 1000)
    expected, actual = oracle.both_auto_id("XADD", "s", "*", "f", "v")
    after = int(time.time() * 1000)
    for reply in (expected, actual):
        match = ID_RE.match(reply)
        assert match is not None
        assert before <= int(match.group(1)) <= after
        assert match.group(2) == b"0"
    oracle.both("XLEN", "s")
    oracle.both_auto_id("XADD", "s", "NOMKSTREAM", "MAXLEN", "1", "*", "f", "v")
    oracle.both("XLEN", "s")


def test_field_values_are_kept_as_given(oracle: Oracle) -> None:
    both = oracle.both
    both("XADD", "s", "1-0", "f", "1", "f", "2", "", "", "007", "-0")
    both("XADD", "s", "2-0", b"\x00bin\xff", b"v\x00\r\n", "9223372036854775808", "-1")
    both("XADD", "s", "3-0", "f", "x" * 5000, "g", "9223372036854775807")
    oracle.assert_same_state()


@pytest.mark.parametrize("node_entries", [1, 2, 10, 100])
@pytest.mark.parametrize("approx", ["=", "~"])
def test_trimming_on_append(oracle: Oracle, node_entries: int, approx: str) -> None:
    both = oracle.both
    both("CONFIG", "SET", "stream-node-max-entries", node_entries)
    for i in range(1, 301):
        both("XADD", "s", "MAXLEN", approx, "55", f"{i}-0", "f", str(i))
        both("XADD", "m", "MINID", approx, f"{max(1, i - 40)}", f"{i}-0", "f", str(i))
    for limit in ("0", "1", "7", "100"):
        if approx == "~":
            both("XADD", "s", "MAXLEN", approx, "3", "LIMIT", limit, f"4{limit}00-0", "f", "v")
            both("XADD", "m", "MINID", approx, "250", "LIMIT", limit, f"4{limit}00-0", "f", "v")
    oracle.assert_same_state()
