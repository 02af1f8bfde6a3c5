"""The pure pieces: escapes, tokens, the JSON mapping, reply records, info layout."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rstore_cli.format import (
    entry_line,
    info_lines,
    quote_bytes,
    redis_cli_reply,
    redis_repr,
    table_lines,
    token,
)
from rstore_cli.jsonout import array_lines, dumps, jsonable
from rstore_cli.params import unescape
from rstore_cli.replies import Entry, entry_from_reply, info_tree, read_entries, record

import rstore


def test_redis_cli_reply_shapes() -> None:
    assert redis_cli_reply(None) == "(nil)\n"
    assert redis_cli_reply(rstore.NIL_ARRAY) == "(nil)\n"
    assert redis_cli_reply([]) == "(empty array)\n"
    assert redis_cli_reply("OK") == "OK\n"
    assert redis_cli_reply(-3) == "(integer) -3\n"
    assert redis_cli_reply([b"a", [], None, [rstore.NIL_ARRAY]]) == (
        '1) "a"\n2) (empty array)\n3) (nil)\n4) 1) (nil)\n'
    )
    with pytest.raises(TypeError):
        redis_cli_reply(1.5)


def test_redis_repr_escapes() -> None:
    assert redis_repr(b'a"\\\n\r\t\a\b\x00\x7f\x80 ~') == (
        '"a\\"\\\\\\n\\r\\t\\a\\b\\x00\\x7f\\x80 ~"'
    )


@pytest.mark.parametrize(
    ("value", "field", "expected"),
    [
        (b"plain", False, "plain"),
        (b"caf\xc3\xa9", False, "café"),
        (b"a=b", False, "a=b"),
        (b"a=b", True, '"a=b"'),
        (b"", False, '""'),
        (b"two words", False, '"two words"'),
        (b'q"', False, '"q\\""'),
        (b"back\\slash", False, '"back\\\\slash"'),
        (b"\xff", False, '"\\xff"'),
        (b"caf\xc3\xa9 \xff", False, '"café \\xff"'),
        (b"\x1b[0m", False, '"\\x1b[0m"'),
        ("\u202e".encode(), False, '"\\xe2\\x80\\xae"'),  # bidi override: not printable
        (b"\xc2\xa0", False, '"\\xc2\\xa0"'),  # no-break space
        (b"\xed\xa0\x80", False, '"\\xed\\xa0\\x80"'),  # an encoded surrogate is not UTF-8
    ],
)
def test_token(value: bytes, field: bool, expected: str) -> None:
    assert token(value, field=field) == expected


@given(st.binary())
def test_tokens_are_single_printable_words_and_round_trip(value: bytes) -> None:
    text = token(value)
    assert text.isprintable()  # no newline, no escape sequence, nothing a terminal interprets
    if text.startswith('"'):
        # The quoted form reads back with the same escapes --unescape understands.
        assert unescape(text[1:-1].encode()) == value
    else:
        assert " " not in text
        assert text.encode() == value


def test_quote_bytes_escapes_each_invalid_byte() -> None:
    assert quote_bytes(b"\xe2\x82") == '"\\xe2\\x82"'  # truncated UTF-8 sequence
    assert quote_bytes("€".encode()) == '"€"'


def test_unescape() -> None:
    assert unescape(rb"\x41\x7a\n\r\t\b\a\\\"\q") == b'Az\n\r\t\b\a\\"q'
    assert unescape(rb"\xZZ\x4") == b"xZZx4"  # not two hex digits: \x is just x
    with pytest.raises(ValueError):
        unescape(b"abc\\")


def test_jsonable_mapping() -> None:
    assert jsonable(b"text") == "text"
    assert jsonable(b"\xff") == {"base64": "/w=="}
    assert jsonable("OK") == "OK"
    assert jsonable(rstore.NIL_ARRAY) is None
    assert jsonable([1, None, [b"a"]]) == [1, None, ["a"]]
    entry = Entry(b"1-0", ((b"f", b"v"), (b"f", b"\x00\xff")))
    assert jsonable(entry) == {"id": "1-0", "fields": [["f", "v"], ["f", {"base64": "AP8="}]]}
    with pytest.raises(TypeError):
        jsonable(object())


def test_array_lines() -> None:
    assert list(array_lines([])) == ["[]"]
    assert list(array_lines([1])) == ["[1]"]
    lines = list(array_lines([{"a": 1}, {"b": 2}, 3]))
    assert lines == ['[{"a": 1},', ' {"b": 2},', " 3]"]
    assert json.loads("\n".join(lines)) == [{"a": 1}, {"b": 2}, 3]
    assert dumps(b"caf\xc3\xa9") == '"café"'


def test_entry_from_reply() -> None:
    assert entry_from_reply([b"1-0", [b"a", b"1", b"a", b"2"]]) == Entry(
        b"1-0", ((b"a", b"1"), (b"a", b"2"))
    )


def test_deleted_entries() -> None:
    """A pending entry no longer in the stream comes as ``[id, nil]``."""
    entry = entry_from_reply([b"2-0", None])
    assert entry == Entry(b"2-0", (), deleted=True)
    assert entry_line(entry) == "2-0  (deleted)"
    assert jsonable(entry) == {"id": "2-0", "fields": None}
    assert entry_line(Entry(b"1-0", ((b"a", b"1"),))) == "1-0  a=1"


def test_read_entries_and_record() -> None:
    reply = [[b"other", [[b"1-0", [b"a", b"1"]]]], [b"s", [[b"2-0", None]]]]
    assert read_entries(reply, b"s") == [Entry(b"2-0", (), deleted=True)]
    assert read_entries(reply, b"nope") == []
    assert read_entries(None, b"s") == []  # a blocking read that timed out
    assert record([b"name", b"g", b"lag", None]) == {"name": b"g", "lag": None}


def test_table_lines() -> None:
    rows = [[b"alice", 2, None], [b"two words", 10, b"1-0"]]
    assert list(table_lines(["NAME", "PENDING", "LAST"], rows)) == [
        "NAME         PENDING  LAST",
        "alice        2        (nil)",
        '"two words"  10       1-0',
    ]
    assert list(table_lines(["A", "B"], [])) == ["A  B"]


# XINFO STREAM FULL with a group, as Valkey 8 replies (groups are not in the engine yet, so the
# reply is written out here).
FULL_WITH_GROUP = [
    b"length", 1,
    b"radix-tree-keys", 1,
    b"radix-tree-nodes", 2,
    b"last-generated-id", b"1-0",
    b"max-deleted-entry-id", b"0-0",
    b"entries-added", 1,
    b"recorded-first-entry-id", b"1-0",
    b"entries", [[b"1-0", [b"a", b"1"]]],
    b"groups", [[
        b"name", b"g1",
        b"last-delivered-id", b"1-0",
        b"entries-read", 1,
        b"lag", None,
        b"pel-count", 1,
        b"pending", [[b"1-0", b"alice", 1700000000000, 1]],
        b"consumers", [[
            b"name", b"alice",
            b"seen-time", 1700000000000,
            b"active-time", -1,
            b"pel-count", 1,
            b"pending", [[b"1-0", 1700000000000, 1]],
        ]],
    ]],
]  # fmt: skip


def test_info_tree_and_lines_with_groups() -> None:
    tree = info_tree(FULL_WITH_GROUP)
    assert list(info_lines(tree))[7:] == [
        "entries:",
        "  1-0  a=1",
        "groups:",
        "  - name: g1",
        "    last-delivered-id: 1-0",
        "    entries-read: 1",
        "    lag: (nil)",
        "    pel-count: 1",
        "    pending:",
        "      - id: 1-0",
        "        consumer: alice",
        "        delivery-time: 1700000000000",
        "        delivery-count: 1",
        "    consumers:",
        "      - name: alice",
        "        seen-time: 1700000000000",
        "        active-time: -1",
        "        pel-count: 1",
        "        pending:",
        "          - id: 1-0",
        "            delivery-time: 1700000000000",
        "            delivery-count: 1",
    ]
    group = jsonable(tree)["groups"][0]
    assert group["pending"] == [
        {"id": "1-0", "consumer": "alice", "delivery-time": 1700000000000, "delivery-count": 1}
    ]
    assert group["consumers"][0]["pending"] == [
        {"id": "1-0", "delivery-time": 1700000000000, "delivery-count": 1}
    ]
    assert group["lag"] is None
