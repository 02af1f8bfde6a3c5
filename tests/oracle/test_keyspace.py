"""DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, DBSIZE, FLUSHALL, PING, ECHO against valkey.

SCAN's cursor order is an implementation detail: the key *set* over a full iteration is
compared, and errors exactly.  KEYS is compared sorted.
"""

from __future__ import annotations

import pytest

from .harness import Oracle, is_error

pytestmark = pytest.mark.oracle

KEYS = [
    "a",
    "b",
    "ab",
    "abc",
    "a*b",
    "a?b",
    "a[b",
    "a\\b",
    "a]b",
    "\x00k",
    "k\x00",
    b"h\xe9llo",
    "h\u00e9llo",
    "user:1",
    "user:2",
    "user:10",
    "USER:1",
    "x" * 300,
    "",
    "[",
    "-",
    "^a",
]

PATTERNS = [
    "*",
    "a*",
    "a?",
    "?",
    "??",
    "a[bc]*",
    "a[^b]*",
    "a[!b]*",
    "*\\**",
    "a\\*b",
    "a\\?b",
    "a[b",
    "[",
    "[]",
    "[]]",
    "[a-c]",
    "[c-a]*",
    "[a-]",
    "a[b-]*",
    "[\\-]",
    "a[\\]]*",
    "a\\",
    "\\",
    "[^]",
    "user:?",
    "user:[0-9]*",
    "*:1*",
    "USER*",
    "\x00*",
    "*\x00",
    "",
    "**",
    "*a*b*",
    b"h\xe9*",
    "h?llo",
    "h??llo",
    "*" * 40 + "x",
]


@pytest.fixture
def keyspace(oracle: Oracle) -> Oracle:
    for key in KEYS:
        oracle.both("XADD", key, "1-0", "f", "v")
    return oracle


@pytest.mark.parametrize("pattern", PATTERNS)
def test_keys_and_scan_match(keyspace: Oracle, pattern: str | bytes) -> None:
    keyspace.both_keys(pattern)
    keyspace.both_scan_all("MATCH", pattern)
    keyspace.both_scan_all("MATCH", pattern, "COUNT", "3")


@pytest.mark.parametrize(
    "options",
    [
        (),
        ("COUNT", "1"),
        ("COUNT", "1000"),
        ("COUNT", "9223372036854775807"),
        ("COUNT", "0"),
        ("COUNT", "-1"),
        ("COUNT", "x"),
        ("COUNT", "9223372036854775808"),
        ("COUNT",),
        ("MATCH",),
        ("TYPE",),
        ("FOO", "bar"),
        ("TYPE", "stream"),
        ("TYPE", "STREAM"),
        ("type", "Stream"),
        ("TYPE", "string"),
        ("TYPE", "list"),
        ("TYPE", "hash"),
        ("TYPE", "set"),
        ("TYPE", "zset"),
        ("TYPE", "none"),
        ("TYPE", "foo"),
        ("TYPE", "stream", "TYPE", "list"),
        ("MATCH", "a*", "MATCH", "b*"),
        ("MATCH", "a*", "COUNT", "2", "TYPE", "stream"),
        ("count", "0", "type", "foo"),
        ("type", "foo", "count", "0"),
        ("type", "foo", "count", "x"),
        ("count", "1", "match"),
        ("MATCH", "*", "TYPE", "foo", "FOO"),
        ("NOVALUES",),
    ],
)
def test_scan_options(keyspace: Oracle, options: tuple[str, ...]) -> None:
    keyspace.both_scan_all(*options)


@pytest.mark.parametrize(
    "cursor", ["x", "-1", "", "0x1", "1.5", "18446744073709551616", "1e3", "\x000", "1 "]
)
def test_scan_invalid_cursors(keyspace: Oracle, cursor: str) -> None:
    """Refused cursors give the same error; (valid non-zero cursors are implementation-defined)."""
    assert is_error(keyspace.both("SCAN", cursor))
    assert is_error(keyspace.both("SCAN", cursor, "COUNT", "0"))


def test_scan_on_an_empty_keyspace(oracle: Oracle) -> None:
    oracle.both("SCAN", "0")
    oracle.both("SCAN", "0", "MATCH", "*", "COUNT", "100", "TYPE", "stream")
    oracle.both("KEYS", "*")


def test_exists_del_unlink_type_dbsize(keyspace: Oracle) -> None:
    both = keyspace.both
    both("DBSIZE")
    both("EXISTS", "a", "a", "missing", "b", "")
    both("TYPE", "a")
    both("TYPE", "missing")
    both("DEL", "a", "a", "missing", "ab")
    both("UNLINK", "b", "b", "abc", "missing")
    both("EXISTS", "a", "b", "ab", "abc")
    both("TYPE", "a")
    both("DBSIZE")
    both("DEL", "missing")
    both("UNLINK", "missing")
    both("DEL", *[k for k in KEYS if k not in ("a", "b", "ab", "abc")])
    both("DBSIZE")
    keyspace.assert_same_state()


def test_deleted_key_starts_over(oracle: Oracle) -> None:
    both = oracle.both
    both("XADD", "s", "5-0", "f", "v")
    both("XSETID", "s", "9-0", "ENTRIESADDED", "10", "MAXDELETEDID", "8-0")
    both("DEL", "s")
    both("XADD", "s", "1-0", "f", "v")
    both("XINFO", "STREAM", "s")
    both("UNLINK", "s")
    both("XADD", "s", "1-0", "f", "v")
    oracle.assert_same_state()


@pytest.mark.parametrize(
    "args", [(), ("SYNC",), ("ASYNC",), ("sync",), ("FOO",), ("SYNC", "ASYNC"), ("SYNC", "x")]
)
def test_flushall(keyspace: Oracle, args: tuple[str, ...]) -> None:
    keyspace.both("FLUSHALL", *args)
    keyspace.both("DBSIZE")
    keyspace.both_keys("*")


@pytest.mark.parametrize(
    "argv",
    [
        ("PING",),
        ("PING", "hi"),
        ("PING", ""),
        ("PING", b"\x00\xff"),
        ("PING", "a", "b"),
        ("ping",),
        ("ECHO",),
        ("ECHO", "x"),
        ("ECHO", ""),
        ("Echo", b"\x00\xff\r\n"),
        ("ECHO", "x", "y"),
        ("DBSIZE", "x"),
        ("TYPE",),
        ("TYPE", "a", "b"),
        ("EXISTS",),
        ("DEL",),
        ("UNLINK",),
        ("KEYS",),
        ("KEYS", "*", "x"),
        ("SCAN",),
    ],
)
def test_simple_commands(keyspace: Oracle, argv: tuple[str | bytes, ...]) -> None:
    keyspace.both(*argv)


def test_keys_with_no_match_and_flushed(keyspace: Oracle) -> None:
    assert keyspace.both_keys("nothing*") == []
    assert not is_error(keyspace.both("FLUSHALL"))
    keyspace.both_scan_all()
