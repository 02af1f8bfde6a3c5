"""The JSONL envelope (rstore.encode_entry / encode_columns / decode_entry / decode_lines): the
documented format, byte-for-byte round trips of arbitrary bytes, and one clear error line
naming the line for anything malformed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore import EnvelopeError, decode_entry, decode_lines, encode_columns, encode_entry

U64 = st.integers(min_value=0, max_value=2**64 - 1)
# Bytes of every kind: valid UTF-8 text (quotes, backslashes, controls, non-ASCII) and not.
TEXT_BYTES = st.text().map(str.encode)  # st.text() holds no lone surrogates
ANY_BYTES = st.one_of(st.binary(max_size=40), TEXT_BYTES)
FLAT = st.lists(st.tuples(ANY_BYTES, ANY_BYTES), min_size=1, max_size=6).map(
    lambda pairs: [item for pair in pairs for item in pair]
)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@given(stream=ANY_BYTES, ms=U64, seq=U64, flat=FLAT)
def test_encode_then_decode_gives_back_every_byte(
    stream: bytes, ms: int, seq: int, flat: list[bytes]
) -> None:
    line = encode_entry(stream, (ms, seq), flat)
    assert b"\n" not in line and b"\r" not in line  # one entry, one line
    assert decode_entry(line) == (stream, (ms, seq), flat)
    assert decode_entry(line + b"\n") == (stream, (ms, seq), flat)
    # a generic JSON reader sees the documented shape
    obj = json.loads(line)
    assert list(obj) == ["stream", "id", "fields"]
    assert obj["id"] == f"{ms}-{seq}"
    assert len(obj["fields"]) == len(flat) // 2


@given(flat=FLAT)
def test_names_and_values_are_strings_exactly_when_they_are_utf8(flat: list[bytes]) -> None:
    obj = json.loads(encode_entry(b"s", (1, 0), flat))
    items = [item for pair in obj["fields"] for item in pair]
    for raw, shown in zip(flat, items, strict=True):
        if _is_utf8(raw):
            assert shown == raw.decode("utf-8")
        else:
            assert list(shown) == ["base64"]


def test_the_documented_examples() -> None:
    line = encode_entry(b"events", (1700000000000, 0), [b"user", b"42", b"action", b"login"])
    assert line == (
        b'{"stream":"events","id":"1700000000000-0","fields":[["user","42"],["action","login"]]}'
    )
    line = encode_entry(b"bin", (5, 1), [b"raw", b"\x00\xff", b"raw", b'caf\xc3\xa9 "x"\n'])
    assert line == (
        b'{"stream":"bin","id":"5-1","fields":[["raw",{"base64":"AP8="}],'
        b'["raw","caf\xc3\xa9 \\"x\\"\\n"]]}'
    )


def test_the_reader_takes_other_spellings_of_the_same_entry() -> None:
    want = (b"s", (3, 4), [b"\xc3\xa9", b"ok"])
    assert (
        decode_entry('  { "fields" : [ ["\\u00e9", "ok"] ], "id": "3-4", "stream": "s" } ') == want
    )
    assert decode_entry('{"stream":"s","id":"3-4","fields":[[{"base64":"w6k="},"ok"]]}') == want
    assert decode_entry('{"stream":"s","id":"03-4","fields":[["é","ok"]]}') == want


def test_ids_at_the_top_of_the_range() -> None:
    top = 2**64 - 1
    line = encode_entry(b"s", (top, top), [b"a", b"b"])
    assert decode_entry(line)[1] == (top, top)
    with pytest.raises(EnvelopeError, match="past the largest ID"):
        decode_entry(line.replace(b'"%d-' % top, b'"%d-' % (top + 1)))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "line 7: not JSON (Expecting value at column 1)"),
        (b'{"stream":"s","id":"1-0"', "line 7: not JSON (Expecting ',' delimiter at column 25)"),
        (b"\xff{}", "line 7: not UTF-8 text (byte 1)"),
        (b"[1, 2]", "line 7: not an entry object: [1, 2]"),
        (b'{"stream":"s","fields":[["a","b"]]}', 'line 7: no "id" key'),
        (b'{"stream":"s","id":"1-0","fields":[["a","b"]],"x":1}', 'line 7: unknown key "x"'),
        (b'{"stream":"s","id":"1","fields":[["a","b"]]}', '"id" must be a string "<ms>-<seq>"'),
        (b'{"stream":"s","id":1,"fields":[["a","b"]]}', '"id" must be a string'),
        (b'{"stream":"s","id":"1-0","fields":[]}', '"fields" is empty'),
        (b'{"stream":"s","id":"1-0","fields":{"a":"b"}}', '"fields" must be an array'),
        (b'{"stream":"s","id":"1-0","fields":[["a"]]}', "fields[0] must be a [field, value]"),
        (b'{"stream":"s","id":"1-0","fields":[["a",1]]}', "fields[0][1] must be a string"),
        (b'{"stream":2,"id":"1-0","fields":[["a","b"]]}', '"stream" must be a string'),
        (
            b'{"stream":"s","id":"1-0","fields":[["a",{"base64":"#"}]]}',
            "fields[0][1] is not valid base64",
        ),
        (
            b'{"stream":"s","id":"1-0","fields":[["a",{"base64":"AA==","x":1}]]}',
            "fields[0][1] must be a string or",
        ),
        (
            b'{"stream":"s","id":"1-0","fields":[["\\ud800","b"]]}',
            "fields[0][0] holds a lone surrogate",
        ),
    ],
)
def test_a_malformed_line_is_one_clear_error_naming_it(line: bytes, message: str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        decode_entry(line, 7)
    text = str(caught.value)
    assert text.startswith("line 7: ") and message.removeprefix("line 7: ") in text
    assert "\n" not in text
    assert caught.value.lineno == 7
    assert isinstance(caught.value, rstore.RStoreError)


def test_decode_lines_skips_blank_lines_and_names_the_file_in_errors() -> None:
    good = encode_entry(b"s", (1, 0), [b"a", b"b"]) + b"\n"
    data = good + b"\n   \n" + good.replace(b"1-0", b"2-0")
    assert [e[1] for e in decode_lines(io.BytesIO(data))] == [(1, 0), (2, 0)]
    broken = io.BytesIO(good + b"\n" + b'{"stream":"s"}\n')
    with pytest.raises(EnvelopeError, match=r'^events\.jsonl line 3: no "id" key') as caught:
        list(decode_lines(broken, name="events.jsonl"))
    assert caught.value.lineno == 3
    assert [e[1] for e in decode_lines([good.decode()])] == [(1, 0)]  # str lines too


@pytest.fixture
def store(tmp_path: Path) -> rstore.Store:
    s = rstore.Store(str(tmp_path / "s"), node_max_entries=5)
    yield s
    s.close()


# the stream is deleted first: each example starts from nothing
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stream=ANY_BYTES, entries=st.lists(FLAT, min_size=1, max_size=12))
def test_encode_columns_writes_what_encode_entry_writes(
    store: rstore.Store, stream: bytes, entries: list[list[bytes]]
) -> None:
    store.execute("DEL", stream)
    for i, flat in enumerate(entries, 1):
        store.execute("XADD", stream, f"{i}-{i}", *flat)
    nodes = store.view(lambda v: list(v.nodes(stream)))
    text = b"".join(encode_columns(stream, cols) for cols in rstore.iter_columns(nodes))
    want = [(stream, (i, i), flat) for i, flat in enumerate(entries, 1)]
    assert text == b"".join(encode_entry(*e) + b"\n" for e in want)
    assert list(decode_lines(io.BytesIO(text))) == want


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    stream=ANY_BYTES,
    names=st.lists(ANY_BYTES, min_size=1, max_size=4),
    values=st.lists(st.lists(ANY_BYTES, min_size=4, max_size=4), min_size=1, max_size=14),
)
def test_a_batch_whose_entries_share_their_field_names(
    store: rstore.Store, stream: bytes, names: list[bytes], values: list[list[bytes]]
) -> None:
    """One schema for every entry (encode_columns fills one line template for the batch):
    the same bytes as entry by entry, '%' in names and streams included."""
    store.execute("DEL", stream)
    want = []
    for i, row in enumerate(values, 1):
        flat = [item for pair in zip(names, row) for item in pair]
        store.execute("XADD", stream, f"{i}-0", *flat)
        want.append((stream, (i, 0), flat))
    nodes = store.view(lambda v: list(v.nodes(stream)))
    text = b"".join(encode_columns(stream, cols) for cols in rstore.iter_columns(nodes))
    assert text == b"".join(encode_entry(*e) + b"\n" for e in want)


def test_shared_names_with_percent_signs_and_a_schema_change(store: rstore.Store) -> None:
    for i in range(1, 30):
        store.execute("XADD", "100%", f"{i}-0", "a%s", f"{i}%d", "b", "x")
    store.execute("XADD", "100%", "30-0", "a%s", "1", "c", "x")  # the schema changes
    store.execute("XADD", "100%", "31-0", "a%", "s1", "b", "x")  # same bytes, split elsewhere
    nodes = store.view(lambda v: list(v.nodes(b"100%")))
    text = b"".join(encode_columns(b"100%", c) for c in rstore.iter_columns(nodes))
    want = [
        encode_entry(b"100%", (int(i.split(b"-")[0]), 0), f) + b"\n"
        for i, f in store.execute("XRANGE", "100%", "-", "+")
    ]
    assert text == b"".join(want)
