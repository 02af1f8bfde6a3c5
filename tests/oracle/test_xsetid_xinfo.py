"""XSETID (§6) and XINFO STREAM / XINFO HELP (§5): check order, effects and reply shapes."""

from __future__ import annotations

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle


@pytest.fixture
def stream(oracle: Oracle) -> Oracle:
    for i in range(1, 6):
        oracle.both("XADD", "s", f"{i}-0", "f", str(i))
    oracle.both("XDEL", "s", "3-0")
    oracle.both("XADD", "e", "1-0", "f", "v")
    oracle.both("XDEL", "e", "1-0")
    return oracle


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("5-0",),
        ("4-0",),
        ("6",),
        ("5-0", "ENTRIESADDED"),
        ("5-0", "ENTRIESADDED", "x"),
        ("5-0", "ENTRIESADDED", "-1"),
        ("5-0", "ENTRIESADDED", "3"),
        ("5-0", "ENTRIESADDED", "4"),
        ("5-0", "ENTRIESADDED", "9223372036854775807"),
        ("5-0", "ENTRIESADDED", "1", "ENTRIESADDED", "10"),
        ("5-0", "MAXDELETEDID"),
        ("5-0", "MAXDELETEDID", "bad"),
        ("5-0", "MAXDELETEDID", "6-0"),
        ("5-0", "MAXDELETEDID", "5-0"),
        ("5-0", "MAXDELETEDID", "0-0"),
        ("5-0", "MAXDELETEDID", "2-0"),
        ("5-0", "MAXDELETEDID", "-"),
        ("5-0", "MAXDELETEDID", "4", "ENTRIESADDED", "9"),
        ("5-0", "MAXDELETEDID", "9", "MAXDELETEDID", "1"),
        ("5-0", "FOO", "1"),
        ("5-0", "FOO"),
        ("bad", "ENTRIESADDED", "x"),
        ("5-0", "ENTRIESADDED", "x", "MAXDELETEDID", "bad"),
        ("5-0", "MAXDELETEDID", "9-0", "ENTRIESADDED", "-1"),
        ("-",),
        ("+",),
        ("18446744073709551615-18446744073709551615",),
        ("entriesadded",),
        ("9-0", "entriesadded", "7", "maxdeletedid", "8-0"),
    ],
)
def test_xsetid(stream: Oracle, args: tuple[str, ...]) -> None:
    for key in ("s", "e", "missing"):
        stream.both("XSETID", key, *args)
    stream.assert_same_state()


def test_xsetid_below_current_max_deleted(stream: Oracle) -> None:
    stream.both("XSETID", "s", "9-0", "MAXDELETEDID", "8-0")
    stream.both("XSETID", "s", "7-0")
    stream.both("XSETID", "s", "8-0")
    stream.both("XSETID", "e", "0-5")
    stream.both("XSETID", "e", "1-0", "ENTRIESADDED", "0")
    stream.assert_same_state()


def test_xsetid_then_xadd(stream: Oracle) -> None:
    stream.both("XSETID", "e", "0-1")
    stream.both("XADD", "e", "0-*", "f", "v")
    stream.both("XSETID", "s", "100-7")
    stream.both("XADD", "s", "100-*", "f", "v")
    stream.both("XADD", "s", "100-7", "f", "v")
    stream.assert_same_state()


@pytest.mark.parametrize(
    "args",
    [
        ("STREAM",),
        ("STREAM", "missing"),
        ("STREAM", "missing", "FULL"),
        ("STREAM", "missing", "FOO"),
        ("STREAM", "s"),
        ("stream", "s"),
        ("STREAM", "s", "FULL"),
        ("STREAM", "s", "full"),
        ("STREAM", "s", "FULL", "COUNT"),
        ("STREAM", "s", "FULL", "COUNT", "0"),
        ("STREAM", "s", "FULL", "COUNT", "1"),
        ("STREAM", "s", "FULL", "COUNT", "-1"),
        ("STREAM", "s", "FULL", "COUNT", "x"),
        ("STREAM", "s", "FULL", "count", "2"),
        ("STREAM", "s", "FULL", "COUNT", "1", "x"),
        ("STREAM", "s", "FULL", "FULL"),
        ("STREAM", "s", "COUNT", "1"),
        ("StReAm", "s", "COUNT"),
        ("STREAM", "s", "FOO"),
        ("STREAM", "e"),
        ("STREAM", "e", "FULL"),
        ("HELP",),
        ("help",),
        ("HELP", "x"),
        (),
        ("FOO",),
        ("foo", "bar"),
        ("x" * 200,),
        ("STREAMX", "s"),
        ("STREAM", "s", "FULL", "COUNT", "9223372036854775808"),
    ],
)
def test_xinfo_shapes_and_errors(stream: Oracle, args: tuple[str, ...]) -> None:
    stream.both("XINFO", *args)


@pytest.mark.parametrize(
    ("node_entries", "node_bytes"), [(1, 4096), (2, 4096), (10, 4096), (100, 300), (0, 100)]
)
def test_radix_tree_counts(oracle: Oracle, node_entries: int, node_bytes: int) -> None:
    """radix-tree-keys/-nodes follow the node layout; sampled as the stream grows and shrinks."""
    oracle.both("CONFIG", "SET", "stream-node-max-entries", node_entries)
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", node_bytes)
    ms = 1
    for step in range(120):
        ms += 1 + step * 37
        oracle.both("XADD", "s", f"{ms}-{step % 3}", "field", "v" * (step % 40), "n", str(step))
        if step % 7 == 0:
            oracle.both("XINFO", "STREAM", "s")
    oracle.both("XINFO", "STREAM", "s", "FULL", "COUNT", "0")
    oracle.both("XTRIM", "s", "MAXLEN", "~", "50")
    oracle.both("XINFO", "STREAM", "s", "FULL", "COUNT", "3")
