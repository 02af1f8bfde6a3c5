"""XGROUP (§4): CREATE / SETID / DESTROY / CREATECONSUMER / DELCONSUMER / HELP and their refusals.

Every accepted command is followed by a whole-state comparison (groups, PELs, consumers), and
every refusal by a check that it changed nothing.
"""

from __future__ import annotations

import pytest

from .harness import Oracle, is_error

pytestmark = pytest.mark.oracle

MAX_ID = "18446744073709551615-18446744073709551615"


def populate(oracle: Oracle) -> Oracle:
    """``s``: entries 1-0..5-0, group ``g`` at 0 where ``alice`` holds 1-0 and 2-0 pending;
    ``empty``: a stream with no entries and no groups."""
    for i in range(1, 6):
        oracle.both("XADD", "s", f"{i}-0", "f", f"v{i}")
    oracle.both("XGROUP", "CREATE", "s", "g", "0")
    oracle.both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    oracle.both("XADD", "empty", "MAXLEN", "0", "1-0", "f", "v")
    return oracle


@pytest.fixture
def grouped(oracle: Oracle) -> Oracle:
    return populate(oracle)


@pytest.fixture
def grouped8(oracle8: Oracle) -> Oracle:
    """:func:`populate` beside Redis 8.2.3."""
    return populate(oracle8)


def sets_entries_read(argv: tuple[str | bytes, ...]) -> bool:
    return any(isinstance(a, str) and a.upper() == "ENTRIESREAD" for a in argv)


ACCEPTED = [
    ("XGROUP", "CREATE", "s", "new", "$"),
    ("XGROUP", "CREATE", "s", "new", "0"),
    ("XGROUP", "CREATE", "s", "new", "3"),
    ("XGROUP", "CREATE", "s", "new", "3-0"),
    ("XGROUP", "CREATE", "s", "new", "99-7"),
    ("XGROUP", "CREATE", "s", "new", MAX_ID),
    ("XGROUP", "CREATE", "s", "new", "0", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "new", "0", "MKSTREAM", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "new", "0", "mkstream", "entriesread", "2"),
    ("XGROUP", "CREATE", "s", "new", "2", "ENTRIESREAD", "2", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "new", "$", "ENTRIESREAD", "-1"),
    ("XGROUP", "CREATE", "s", "new", "$", "ENTRIESREAD", "0"),
    ("XGROUP", "CREATE", "s", "new", "0", "ENTRIESREAD", "99999"),
    ("XGROUP", "create", "s", "", "0"),
    ("XGROUP", "CREATE", "s", b"bin\x00\xff grp", "0"),
    ("XGROUP", "CREATE", "new", "g", "$", "MKSTREAM"),
    ("XGROUP", "CREATE", "new", "g", "7-3", "MKSTREAM"),
    ("XGROUP", "CREATE", "new", "g", "0", "MKSTREAM", "ENTRIESREAD", "5"),
    ("XGROUP", "CREATE", "empty", "g", "$"),
    ("XGROUP", "CREATE", "empty", "g", "0", "ENTRIESREAD", "1"),
    ("XGROUP", "SETID", "s", "g", "$"),
    ("XGROUP", "SETID", "s", "g", "-"),
    ("XGROUP", "SETID", "s", "g", "+"),
    ("XGROUP", "SETID", "s", "g", "0"),
    ("XGROUP", "SETID", "s", "g", "3"),
    ("XGROUP", "SETID", "s", "g", "1000-1"),
    ("XGROUP", "SETID", "s", "g", "4-0", "ENTRIESREAD", "4"),
    ("XGROUP", "SETID", "s", "g", "4-0", "entriesread", "-1"),
    ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "7777"),
    ("XGROUP", "setid", "s", "g", "2"),
    ("XGROUP", "DESTROY", "s", "g"),
    ("XGROUP", "DESTROY", "s", "nope"),
    ("XGROUP", "destroy", "empty", "g"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "bob"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "alice"),
    ("XGROUP", "CREATECONSUMER", "s", "g", ""),
    ("XGROUP", "DELCONSUMER", "s", "g", "alice"),
    ("XGROUP", "DELCONSUMER", "s", "g", "nobody"),
    ("XGROUP", "delconsumer", "s", "g", "alice"),
]


def accepted(oracle: Oracle, argv: tuple[str | bytes, ...]) -> None:
    assert not is_error(oracle.both(*argv))
    oracle.assert_same_state()
    oracle.check()
    # the group reads on from wherever the command left it
    for group in ("g", "new", ""):
        oracle.both("XREADGROUP", "GROUP", group, "zoe", "COUNT", "2", "STREAMS", "s", ">")
    oracle.assert_same_state()


def _name(argv: tuple[str | bytes, ...]) -> str:
    return " ".join(map(str, argv))[:60]


@pytest.mark.parametrize("argv", [a for a in ACCEPTED if not sets_entries_read(a)], ids=_name)
def test_accepted(grouped: Oracle, argv: tuple[str | bytes, ...]) -> None:
    accepted(grouped, argv)


@pytest.mark.parametrize("argv", [a for a in ACCEPTED if sets_entries_read(a)], ids=_name)
def test_accepted_entries_read(grouped8: Oracle, argv: tuple[str | bytes, ...]) -> None:
    """ENTRIESREAD is kept at most at the entries added, as Redis 8.2.2 has it (Valkey 8.0
    keeps any number, then reports a negative lag): compared with Redis 8.2.3."""
    accepted(grouped8, argv)


REFUSED = [
    ("XGROUP",),
    ("XGROUP", "FOO"),
    ("XGROUP", "foo", "s", "g"),
    ("XGROUP", "CREATE", "s", "g"),
    ("XGROUP", "CREATE", "s", "g", "0"),
    ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
    ("XGROUP", "CREATE", "missing", "g", "0"),
    ("XGROUP", "CREATE", "missing", "g", "bad"),
    ("XGROUP", "CREATE", "missing", "g", "-", "MKSTREAM"),
    ("XGROUP", "CREATE", "missing", "g", "+", "MKSTREAM"),
    ("XGROUP", "CREATE", "missing", "g", "(1", "MKSTREAM"),
    ("XGROUP", "CREATE", "missing", "g", "0", "MKSTREAM", "ENTRIESREAD", "-2"),
    ("XGROUP", "CREATE", "missing", "g", "0", "ENTRIESREAD", "-2"),
    ("XGROUP", "CREATE", "missing", "g", "0", "ENTRIESREAD", "x"),
    ("XGROUP", "CREATE", "missing", "g", "0", "ENTRIESREAD"),
    ("XGROUP", "CREATE", "s", "n", "-"),
    ("XGROUP", "CREATE", "s", "n", "+"),
    ("XGROUP", "CREATE", "s", "n", ">"),
    ("XGROUP", "CREATE", "s", "n", "1-2-3"),
    ("XGROUP", "CREATE", "s", "n", "0", "FOO"),
    ("XGROUP", "CREATE", "s", "n", "0", "MKSTREAM", "FOO"),
    ("XGROUP", "CREATE", "s", "n", "0", "ENTRIESREAD", "1", "ENTRIESREAD", "2"),
    ("XGROUP", "CREATE", "s", "n", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "n", "0", "ENTRIESREAD", "9223372036854775808"),
    ("XGROUP", "CREATE", "s", "n", "0", "ENTRIESREAD", "1.5"),
    ("XGROUP", "SETID", "s", "g"),
    ("XGROUP", "SETID", "s", "nope", "0"),
    ("XGROUP", "SETID", "missing", "g", "0"),
    ("XGROUP", "SETID", "s", "g", "bad"),
    ("XGROUP", "SETID", "s", "g", "(1"),
    ("XGROUP", "SETID", "s", "g", "0", "MKSTREAM"),
    ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD"),
    ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "-5"),
    ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "1", "ENTRIESREAD", "2"),
    ("XGROUP", "SETID", "s", "nope", "0", "ENTRIESREAD", "x"),
    ("XGROUP", "SETID", "missing", "nope", "bad"),
    ("XGROUP", "DESTROY", "s"),
    ("XGROUP", "DESTROY", "s", "g", "extra"),
    ("XGROUP", "DESTROY", "missing", "g"),
    ("XGROUP", "CREATECONSUMER", "s", "g"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "c", "extra"),
    ("XGROUP", "CREATECONSUMER", "s", "nope", "c"),
    ("XGROUP", "CREATECONSUMER", "missing", "g", "c"),
    ("XGROUP", "DELCONSUMER", "s", "nope", "alice"),
    ("XGROUP", "DELCONSUMER", "missing", "g", "alice"),
    ("XGROUP", "DELCONSUMER", "s", "g"),
    ("XGROUP", "HELP", "x"),
]


@pytest.mark.parametrize("argv", REFUSED, ids=lambda argv: " ".join(argv)[:60])
def test_refused_changes_nothing(grouped: Oracle, argv: tuple[str, ...]) -> None:
    assert is_error(grouped.both(*argv)), "valkey accepted it: not a refusal case"
    grouped.assert_same_state()
    grouped.check()


def test_help(oracle: Oracle) -> None:
    oracle.both("XGROUP", "HELP")
    oracle.both("XGROUP", "help")


def test_nogroup_texts_with_odd_names(grouped: Oracle) -> None:
    """Key and group names go raw into the NOGROUP texts: spaces kept, CR/LF sanitised, NUL
    cuts the line."""
    both = grouped.both
    for group in ("a b", "x\r\ny", "cut\x00here", "'q'", ""):
        both("XGROUP", "SETID", "s", group, "0")
        both("XGROUP", "CREATECONSUMER", "s", group, "c")
        both("XINFO", "CONSUMERS", "s", group)
        both("XPENDING", "s", group)
        both("XCLAIM", "s", group, "c", "0", "1-0")
        both("XAUTOCLAIM", "s", group, "c", "0", "0")
        both("XREADGROUP", "GROUP", group, "c", "STREAMS", "s", ">")
    for key in ("k k", "k\r\n", "nul\x00key"):
        both("XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">")
        both("XPENDING", key, "g")
    grouped.assert_same_state()


def test_bytewise_order_of_groups_and_consumers(oracle: Oracle) -> None:
    both = oracle.both
    both("XADD", "s", "1-0", "f", "v")
    both("XADD", "s", "2-0", "f", "v")
    for group in ("g", "agrp", "Zgrp", "a", "g0", b"\xff", b"g\x00"):
        both("XGROUP", "CREATE", "s", group, "0")
    for consumer in ("c", "aa", "B", "a0", "a", b"\xff", b"a\x00", b"", b"\x00", "A" * 300):
        both("XGROUP", "CREATECONSUMER", "s", "g", consumer)
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", b"a\x00", "COUNT", "1", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "B", "STREAMS", "s", "0")
    both("XINFO", "GROUPS", "s")
    oracle.both_timed("XINFO", "CONSUMERS", "s", "g")
    both("XPENDING", "s", "g")
    oracle.both_timed("XINFO", "STREAM", "s", "FULL")
    oracle.assert_same_state()


def test_delconsumer_releases_its_pending_entries(grouped: Oracle) -> None:
    both = grouped.both
    both("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    assert both("XGROUP", "DELCONSUMER", "s", "g", "alice") == 2
    both("XPENDING", "s", "g")
    grouped.both_timed("XPENDING", "s", "g", "-", "+", "10")
    both("XACK", "s", "g", "1-0", "2-0", "3-0")
    both("XGROUP", "DELCONSUMER", "s", "g", "bob")
    both("XINFO", "GROUPS", "s")
    grouped.assert_same_state()
    grouped.check()


def test_destroy_then_recreate(grouped: Oracle) -> None:
    both = grouped.both
    assert both("XGROUP", "DESTROY", "s", "g") == 1
    both("XGROUP", "DESTROY", "s", "g")
    both("XPENDING", "s", "g")
    both("XGROUP", "CREATE", "s", "g", "$")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    both("XINFO", "STREAM", "s")
    grouped.assert_same_state()


def test_mkstream_bad_id_leaves_no_key(oracle: Oracle) -> None:
    both = oracle.both
    for bad in ("-", "+", "bad", "(0"):
        both("XGROUP", "CREATE", "k", "g", bad, "MKSTREAM")
        both("EXISTS", "k")
    both("XGROUP", "CREATE", "k", "g", "$", "MKSTREAM")
    both("TYPE", "k")
    both("XINFO", "STREAM", "k")
    both("XREAD", "STREAMS", "k", "0")
    oracle.assert_same_state()


def test_groups_survive_reopen(grouped: Oracle) -> None:
    both = grouped.both
    both("XGROUP", "CREATE", "s", "other", "3-0", "ENTRIESREAD", "3")
    both("XGROUP", "CREATECONSUMER", "s", "other", "idle")
    both("XREADGROUP", "GROUP", "other", "bob", "STREAMS", "s", ">")
    grouped.reopen()
    grouped.assert_same_state()
    grouped.check()
    both("XACK", "s", "other", "4-0")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    grouped.assert_same_state()
