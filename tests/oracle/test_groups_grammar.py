"""ID and number grammar in every group command: one odd argument at a time, in each position
that takes an ID or a number; the reply (or error text) and the state after must match."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from .harness import Oracle
from .timed import timed_difference

pytestmark = pytest.mark.oracle

ODD_IDS = [
    "1", "1-", "-1", "+1", " 1", "1 ", "0x1", "01-01", "1-0-0", "1.5", "",
    "18446744073709551615", "18446744073709551616", "1-18446744073709551616",
    "18446744073709551615-18446744073709551615", "18446744073709551615-18446744073709551614",
    "(", "((1", "(1", "(0", "-", "+", "(-", "(+", "$", ">", "*", "1-*",
]  # fmt: skip

ODD_NUMBERS = [
    "0", "-0", "1", "-1", "007", "+5", " 5", "5 ", "1.0", "1e3", "", "x",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "9223372036854775806",
    "9223370000000000000",
]  # fmt: skip

Shape = Callable[[str], tuple[str, ...]]

ID_POSITIONS: dict[str, Shape] = {
    "create": lambda x: ("XGROUP", "CREATE", "s", "n", x),
    "create mkstream": lambda x: ("XGROUP", "CREATE", "new", "n", x, "MKSTREAM"),
    "setid": lambda x: ("XGROUP", "SETID", "s", "g", x),
    "readgroup": lambda x: ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", x),
    "ack": lambda x: ("XACK", "s", "g", "1-0", x),
    "pending start": lambda x: ("XPENDING", "s", "g", x, "+", "10"),
    "pending end": lambda x: ("XPENDING", "s", "g", "-", x, "10"),
    "claim id": lambda x: ("XCLAIM", "s", "g", "c", "0", x, "JUSTID"),
    "claim lastid": lambda x: ("XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", x),
    "autoclaim start": lambda x: ("XAUTOCLAIM", "s", "g", "c", "0", x, "JUSTID"),
}

#: ENTRIESREAD is kept at most at the entries added, as Redis 8.2.2 has it (Valkey 8.0 keeps
#: any number): these are compared with Redis 8.2.3.
ENTRIES_READ_POSITIONS: dict[str, Shape] = {
    "create entriesread": lambda x: ("XGROUP", "CREATE", "s", "n", "0", "ENTRIESREAD", x),
    "setid entriesread": lambda x: ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", x),
}

NUMBER_POSITIONS: dict[str, Shape] = {
    "readgroup count": lambda x: ("XREADGROUP", "GROUP", "g", "c", "COUNT", x, "STREAMS", "s", "0"),
    # BLOCK with a history ID or with data at hand: parsed, but never waits
    "readgroup block": lambda x: ("XREADGROUP", "GROUP", "g", "c", "BLOCK", x, "STREAMS", "s", "0"),
    "xread block": lambda x: ("XREAD", "BLOCK", x, "STREAMS", "s", "0"),
    "pending count": lambda x: ("XPENDING", "s", "g", "-", "+", x),
    "pending idle": lambda x: ("XPENDING", "s", "g", "IDLE", x, "-", "+", "10"),
    "claim min-idle": lambda x: ("XCLAIM", "s", "g", "c", x, "1-0", "JUSTID"),
    "claim idle": lambda x: ("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE", x, "JUSTID"),
    "claim time": lambda x: ("XCLAIM", "s", "g", "c", "0", "1-0", "TIME", x, "JUSTID"),
    "claim retrycount": lambda x: ("XCLAIM", "s", "g", "c", "0", "2-0", "RETRYCOUNT", x),
    "autoclaim min-idle": lambda x: ("XAUTOCLAIM", "s", "g", "c", x, "0", "JUSTID"),
    "autoclaim count": lambda x: ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", x),
}


def populate(oracle: Oracle) -> None:
    """``s``: 1-0..4-0, group g where c holds 1-0..3-0."""
    for i in range(1, 5):
        oracle.both("XADD", "s", f"{i}-0", "f", f"v{i}")
    oracle.both("XGROUP", "CREATE", "s", "g", "0")
    oracle.both("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")


@pytest.fixture
def grouped(oracle: Oracle) -> Oracle:
    populate(oracle)
    return oracle


@pytest.fixture
def grouped8(oracle8: Oracle) -> Oracle:
    """:func:`populate` beside Redis 8.2.3."""
    populate(oracle8)
    return oracle8


def bounded_compare(oracle: Oracle, argv: tuple[str, ...], timeout_s: float = 5.0) -> None:
    """Like ``both_timed``, but rstore runs in a thread, so an odd BLOCK value that made it
    wait fails the test instead of hanging it."""
    expected = oracle.on_valkey(*argv)
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(oracle.on_rstore(*argv)), daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert box, f"rstore still running {argv} after {timeout_s} s; valkey: {expected!r}"
    problem = timed_difference(argv, expected, box[0])
    assert problem is None, (
        f"{problem}\n  argv: {argv}\n  valkey: {expected!r}\n  rstore: {box[0]!r}"
    )


def sweep(oracle: Oracle, shape: Shape, values: list[str]) -> None:
    """Every value is tried (a difference does not hide the later ones); then all the
    differences are reported together."""
    differences = []
    for value in values:
        try:
            bounded_compare(oracle, shape(value))
            oracle.assert_same_state()
        except AssertionError as exc:
            differences.append(f"--- {value!r}: {exc}")
            oracle.valkey.execute("FLUSHALL")
            oracle.on_rstore("FLUSHALL")
            populate(oracle)
    oracle.check()
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize("position", list(ID_POSITIONS))
def test_odd_ids(grouped: Oracle, position: str) -> None:
    sweep(grouped, ID_POSITIONS[position], ODD_IDS)


@pytest.mark.parametrize("position", list(NUMBER_POSITIONS))
def test_odd_numbers(grouped: Oracle, position: str) -> None:
    sweep(grouped, NUMBER_POSITIONS[position], ODD_NUMBERS)


@pytest.mark.parametrize("position", list(ENTRIES_READ_POSITIONS))
def test_odd_entries_read(grouped8: Oracle, position: str) -> None:
    sweep(grouped8, ENTRIES_READ_POSITIONS[position], ODD_NUMBERS)


def test_subcommand_names_and_arity(grouped: Oracle) -> None:
    for argv in (
        ("XGROUP", "CreateConsumer", "s", "g", "x"),
        ("XGROUP", "DELconsumer", "s", "g", "x"),
        ("XGROUP", "CREATE"),
        ("XGROUP", "SETID", "s"),
        ("XGROUP", "DESTROY"),
        ("XGROUP", "x" * 200),
        ("XINFO", "GROUPS"),
        ("XINFO", "GROUPS", "s", "extra"),
        ("XINFO", "GROUPS", "missing"),
        ("XINFO", "CONSUMERS", "s"),
        ("XINFO", "CONSUMERS", "s", "g", "extra"),
        ("XINFO", "CONSUMERS", "missing", "g"),
        ("XINFO", "consumers", "s", "nope"),
        ("XINFO", "HELP"),
        ("XREADGROUP",),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS"),
        ("XPENDING",),
        ("XCLAIM", "s", "g", "c", "0"),
        ("XAUTOCLAIM", "s", "g", "c", "0"),
    ):
        grouped.both_timed(*argv)
    grouped.assert_same_state()
