"""Options in the wrong place, repeated, mis-cased or cut short, across the commands."""

from __future__ import annotations

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle

MISPLACED = [
    # XADD: after the ID every argument is a field or value
    ("XADD", "s", "9-0", "MAXLEN", "1", "f", "v"),
    ("XADD", "s", "9-0", "NOMKSTREAM", "f"),
    ("XADD", "s", "9-0", "f", "v", "MAXLEN", "1"),
    ("XADD", "s", "LIMIT", "1", "MAXLEN", "~", "1", "9-0", "f", "v"),
    ("XADD", "s", "~", "1", "9-0", "f", "v"),
    ("XADD", "s", "=", "9-0", "f", "v"),
    ("XADD", "s", "MAXLEN", "~", "=", "1", "9-0", "f", "v"),
    ("XADD", "s", "MAXLEN", "1", "~", "9-0", "f", "v"),
    ("XADD", "s", "NOMKSTREAM", "MAXLEN", "1", "NOMKSTREAM", "9-0", "f", "v"),
    ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "1", "LIMIT", "5", "9-0", "f", "v"),
    ("XADD", "s", "MINID", "~", "3", "MINID", "4", "9-0", "f", "v"),
    ("XADD", "s", "minid", "3", "9-*", "f", "v"),
    # XTRIM
    ("XTRIM", "s", "LIMIT", "1", "MAXLEN", "~", "1"),
    ("XTRIM", "s", "~", "MAXLEN", "1"),
    ("XTRIM", "s", "MAXLEN", "1", "~"),
    ("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "1", "LIMIT", "2"),
    ("XTRIM", "s", "MAXLEN", "~", "1", "MAXLEN", "1"),
    ("XTRIM", "MAXLEN", "1", "s"),
    ("XTRIM", "s", "MaXlEn", "=", "2"),
    # XRANGE / XREVRANGE
    ("XRANGE", "s", "COUNT", "1", "-", "+"),
    ("XRANGE", "COUNT", "1", "s", "-", "+"),
    ("XRANGE", "s", "-", "COUNT", "1", "+"),
    ("XREVRANGE", "s", "-", "+", "COUNT", "1"),
    # XREAD
    ("XREAD", "STREAMS", "s", "0", "COUNT", "1"),
    ("XREAD", "STREAMS", "s", "COUNT", "1", "0"),
    ("XREAD", "s", "STREAMS", "0"),
    ("XREAD", "COUNT", "1", "COUNT", "STREAMS", "s", "0"),
    ("XREAD", "STREAMS", "COUNT", "s", "0"),
    # XSETID
    ("XSETID", "s", "ENTRIESADDED", "5", "9-0"),
    ("XSETID", "ENTRIESADDED", "5", "s", "9-0"),
    ("XSETID", "s", "9-0", "ENTRIESADDED", "5", "MAXDELETEDID"),
    ("XSETID", "s", "9-0", "MAXDELETEDID", "2-0", "ENTRIESADDED"),
    # XINFO
    ("XINFO", "STREAM", "FULL", "s"),
    ("XINFO", "STREAM", "s", "COUNT", "1", "FULL"),
    ("XINFO", "FULL", "STREAM", "s"),
    # SCAN / KEYS / CONFIG
    ("SCAN", "MATCH", "*", "0"),
    ("SCAN", "0", "MATCH"),
    ("SCAN", "0", "COUNT", "2", "COUNT", "5"),
    ("KEYS", "*", "*"),
    ("CONFIG", "GET", "stream-node-max-entries", "SET"),
    ("CONFIG", "stream-node-max-entries", "GET"),
]


@pytest.mark.parametrize("argv", MISPLACED, ids=lambda argv: " ".join(argv)[:60])
def test_misplaced_and_repeated_options(oracle: Oracle, argv: tuple[str, ...]) -> None:
    for i in range(1, 6):
        oracle.both("XADD", "s", f"{i}-0", "f", str(i))
    if argv[:2] == ("SCAN", "0"):  # cursor order is implementation-defined: compare key sets
        oracle.both_scan_all(*argv[2:])
    else:
        oracle.both(*argv)
    oracle.assert_same_state()
