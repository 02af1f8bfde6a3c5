"""A refused command changes nothing: after each refusal the whole state still matches valkey."""

from __future__ import annotations

import pytest

from .harness import Oracle, is_error

pytestmark = pytest.mark.oracle

REFUSED = [
    ("XADD", "s", "1-0", "f", "v"),
    ("XADD", "s", "MAXLEN", "0", "3-0", "f", "v"),
    ("XADD", "new", "MAXLEN", "x", "1-0", "f", "v"),
    ("XADD", "new", "MAXLEN", "1", "LIMIT", "1", "1-0", "f", "v"),
    ("XADD", "new", "0-0", "f", "v"),
    ("XADD", "new", "1-0", "f", "v", "odd"),
    ("XADD", "new", "bad", "f", "v"),
    ("XADD", "s", "MINID", "bad", "99-0", "f", "v"),
    ("XADD", "x", "*", "f", "v"),
    ("XDEL", "s", "10-0", "bad"),
    ("XDEL", "s", "10-0", "11-0", "12-0", "+"),
    ("XTRIM", "s", "MAXLEN", "0", "LIMIT", "1"),
    ("XTRIM", "s", "MINID", "~", "50", "FOO"),
    ("XTRIM", "s", "MAXLEN", "-1"),
    ("XSETID", "s", "1-0"),
    ("XSETID", "s", "99-0", "ENTRIESADDED", "1"),
    ("XSETID", "s", "99-0", "MAXDELETEDID", "100-0"),
    ("XSETID", "s", "99-0", "ENTRIESADDED", "-1", "MAXDELETEDID", "5-0"),
    ("XSETID", "s", "99-0", "ENTRIESADDED", "100", "FOO"),
    ("XSETID", "new", "5-0"),
    ("XSETID", "e", "1-0"),
    ("XRANGE", "s", "-", "+", "COUNT", "x"),
    ("XREAD", "STREAMS", "s", "e", "0", "bad"),
    ("XINFO", "STREAM", "s", "FULL", "COUNT", "x"),
    ("CONFIG", "SET", "stream-node-max-entries", "x"),
    ("CONFIG", "SET", "stream-node-max-entries", "5", "stream-node-max-bytes", "x"),
    ("FLUSHALL", "FOO"),
    ("DEL",),
    ("NOSUCH", "s"),
]


@pytest.fixture
def populated(oracle: Oracle) -> Oracle:
    both = oracle.both
    both("CONFIG", "SET", "stream-node-max-entries", "3")
    for i in range(1, 21):
        both("XADD", "s", f"{i * 2}-0", "f", str(i), "g", "x" * i)
    both("XDEL", "s", "4-0", "10-0", "12-0")
    both("XTRIM", "s", "MINID", "7")
    both("XADD", "e", "1-0", "f", "v")
    both("XDEL", "e", "1-0")
    both("XSETID", "e", "9-0", "ENTRIESADDED", "5", "MAXDELETEDID", "8-0")
    both("XADD", "x", "18446744073709551615-18446744073709551615", "f", "v")
    return oracle


@pytest.mark.parametrize("argv", REFUSED, ids=lambda argv: " ".join(argv)[:60])
def test_refused_command_changes_nothing(populated: Oracle, argv: tuple[str, ...]) -> None:
    assert is_error(populated.both(*argv)), "valkey accepted it: not a refusal case"
    populated.assert_same_state()
    populated.both_config_get("stream-node-*")
    populated.both("XADD", "s", "100-0", "f", "after")
    populated.assert_same_state()


def test_refusals_survive_reopen(populated: Oracle) -> None:
    for argv in REFUSED:
        populated.both(*argv)
    populated.reopen()
    populated.assert_same_state()
