"""Command-table behaviour (unknown commands, arity, subcommands) and CONFIG GET/SET."""

from __future__ import annotations

from typing import Any

import pytest

from .harness import Oracle, is_error, pairs_to_dict

pytestmark = pytest.mark.oracle

# Plausible arguments for each implemented command; the sweep feeds 0..len+2 of them.
TEMPLATES: dict[str, list[str]] = {
    "XADD": ["s", "NOMKSTREAM", "MAXLEN", "~", "5", "9-0", "f", "v", "g", "w"],
    "XLEN": ["s", "t"],
    "XRANGE": ["s", "-", "+", "COUNT", "2"],
    "XREVRANGE": ["s", "+", "-", "COUNT", "2"],
    "XDEL": ["s", "1-0", "2-0"],
    "XTRIM": ["s", "MAXLEN", "~", "3", "LIMIT", "1"],
    "XSETID": ["s", "50-0", "ENTRIESADDED", "40", "MAXDELETEDID", "2-0"],
    "XREAD": ["COUNT", "1", "STREAMS", "s", "t", "0", "0"],
    "XINFO": ["STREAM", "s", "FULL", "COUNT", "1"],
    "DEL": ["t", "u"],
    "UNLINK": ["t", "u"],
    "EXISTS": ["s", "t"],
    "TYPE": ["s", "t"],
    "KEYS": ["*", "x"],
    "SCAN": ["0", "MATCH", "*", "COUNT", "5"],
    "DBSIZE": ["x"],
    "FLUSHALL": ["SYNC", "x"],
    "PING": ["hello", "x"],
    "ECHO": ["hello", "x"],
    "CONFIG": ["GET", "stream-node-max-entries", "stream-node-max-bytes"],
}


def config_as_dict(reply: Any) -> Any:
    return pairs_to_dict(reply) if isinstance(reply, list) else reply


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_arity_sweep(oracle: Oracle, name: str) -> None:
    template = TEMPLATES[name]
    for count in range(len(template) + 3):
        for i in range(1, 4):
            oracle.both("XADD", "s", f"{i}-0", "f", "v")
        args = [*template, "x", "y"][:count]
        for typed in (name, name.lower()):
            if name == "CONFIG":  # CONFIG GET's pair order is not part of the contract
                oracle.both_normalized(config_as_dict, typed, *args)
            else:
                oracle.both(typed, *args)
    oracle.assert_same_state()


@pytest.mark.parametrize(
    "argv",
    [
        ("XINFO", "HELP", "x"),
        ("XINFO", "STREAM"),
        ("XINFO",),
        ("XINFO", "NOPE"),
        ("XINFO", "nope", "a", "b"),
        ("XINFO", "x" * 300),
        ("XINFO", "a\r\nb"),
        ("XINFO", "a\x00b"),
        ("CONFIG",),
        ("CONFIG", "GET"),
        ("CONFIG", "SET", "stream-node-max-entries"),
        ("CONFIG", "NOPE"),
        ("CONFIG", "nope", "x"),
        ("config", "x" * 300),
    ],
)
def test_subcommand_errors(oracle: Oracle, argv: tuple[str, ...]) -> None:
    oracle.both(*argv)


@pytest.mark.parametrize(
    "argv",
    [
        ("NOSUCH",),
        ("nosuch", "a", "b"),
        ("NOSUCH", ""),
        ("NOSUCH", "a" * 200),
        ("NOSUCH", "a" * 127, "b"),
        ("NOSUCH", "a" * 126, "bc", "d"),
        ("NOSUCH", *["abcdefghij"] * 20),
        ("NOSUCH", "a\nb", "c\rd", "e\x00f"),
        ("NOSUCH", b"\xff\xfe", "\u00e9"),
        ("N" * 300, "x"),
        ("NO\x00SUCH", "x"),
        ("NO\r\nSUCH",),
        ("",),
        (" XADD", "s", "1-0", "f", "v"),
        ("XADDX", "s"),
        ("X", "s"),
    ],
)
def test_unknown_commands(oracle: Oracle, argv: tuple[str | bytes, ...]) -> None:
    """Exact text, including the trailing space and the 128-character truncation."""
    assert is_error(oracle.both(*argv))
    oracle.assert_same_state()


@pytest.mark.parametrize(
    "patterns",
    [
        ("stream-node-max-entries",),
        ("stream-node-max-bytes",),
        ("STREAM-NODE-MAX-BYTES",),
        ("stream-node-*",),
        ("stream-node-max-entries", "stream-node-max-bytes"),
        ("stream-node-max-entries", "stream-node-max-entries"),
        ("stream-node-max-?ntries",),
        ("stream-node-max-[be]*",),
        ("nosuch-parameter",),
        ("nosuch*", "stream-node-max-bytes"),
        ("rdbcompression",),
        ("RDBCOMPRESSION", "stream-node-max-bytes"),
    ],
)
def test_config_get(oracle: Oracle, patterns: tuple[str, ...]) -> None:
    oracle.both_config_get(*patterns)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("stream-node-max-entries", "7"),
        ("stream-node-max-entries", "0"),
        ("stream-node-max-entries", "-1"),
        ("stream-node-max-entries", "x"),
        ("stream-node-max-entries", ""),
        ("stream-node-max-entries", " 5"),
        ("stream-node-max-entries", "+5"),
        ("stream-node-max-entries", "05"),
        ("stream-node-max-entries", "5k"),
        ("stream-node-max-entries", "9223372036854775807"),
        ("stream-node-max-entries", "9223372036854775808"),
        ("STREAM-NODE-MAX-ENTRIES", "9"),
        ("stream-node-max-bytes", "300"),
        ("stream-node-max-bytes", "0"),
        ("stream-node-max-bytes", "4kb"),
        ("stream-node-max-bytes", "4KB"),
        ("stream-node-max-bytes", "2k"),
        ("stream-node-max-bytes", "1mb"),
        ("stream-node-max-bytes", "1gb"),
        ("stream-node-max-bytes", "8gb"),
        ("stream-node-max-bytes", "1.5k"),
        ("stream-node-max-bytes", "x"),
        ("stream-node-max-bytes", "-1"),
        ("stream-node-max-bytes", "4tb"),
        ("stream-node-max-bytes", "9223372036854775807"),
        ("stream-node-max-bytes", "9223372036854775808"),
        ("nosuch-parameter", "1"),
        ("rdbcompression", "no"),
        ("rdbcompression", "NO"),
        ("rdbcompression", "Yes"),
        ("rdbcompression", "1"),
        ("rdbcompression", "maybe"),
        ("rdbcompression", ""),
        ("RDBCOMPRESSION", "no"),
    ],
)
def test_config_set_one(oracle: Oracle, name: str, value: str) -> None:
    oracle.both("CONFIG", "SET", name, value)
    oracle.both_config_get("stream-node-*", "rdbcompression")


@pytest.mark.parametrize(
    "args",
    [
        ("stream-node-max-entries", "5", "stream-node-max-bytes", "500"),
        ("stream-node-max-entries", "5", "stream-node-max-bytes", "x"),
        ("stream-node-max-entries", "5", "nosuch-parameter", "1"),
        ("stream-node-max-entries", "5", "stream-node-max-entries"),
        ("stream-node-max-entries", "1", "stream-node-max-entries", "2"),
        ("stream-node-max-bytes", "4096", "STREAM-NODE-MAX-BYTES", "5"),
        ("rdbcompression", "no", "stream-node-max-entries", "x"),
        ("rdbcompression", "no", "stream-node-max-entries", "3"),
    ],
)
def test_config_set_many(oracle: Oracle, args: tuple[str, ...]) -> None:
    """Several pairs at once: all applied or none."""
    oracle.both("CONFIG", "SET", *args)
    oracle.both_config_get("stream-node-*", "rdbcompression")


@pytest.mark.parametrize("setting", ["yes", "no"])
def test_dump_follows_rdbcompression(oracle: Oracle, setting: str) -> None:
    """DUMP's bytes, compressed or not as the setting says: the same payload as the server's
    (a value short enough, or incompressible, is stored plain either way).  No consumers: their
    times would differ."""
    oracle.both("CONFIG", "SET", "rdbcompression", setting)
    oracle.both("XADD", "s", "1-0", "f", "v" * 60, "g", "short")
    oracle.both("XADD", "s", "2-0", "f", bytes(range(100)), "g", "w" * 25)
    oracle.both("XGROUP", "CREATE", "s", "consumers-of-a-long-group-name-" * 2, "0")
    payload = oracle.both("DUMP", "s")
    assert (b"\xc3" in payload) == (setting == "yes")  # the LZF string marker
