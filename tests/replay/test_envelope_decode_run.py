"""Decoding blocks of envelope lines into columns (rstore.replay.envelope.decode_run and
rstore.decode_blocks): the C decoder gives what the Python decoder (the reference) gives for
every line it takes, takes every line written as encode_entry writes a text entry, and stops,
changing nothing, before anything else -- on random lines, on mutated ones, on JSON written
with other escapes; and the blocks of a file give the entries and the errors, line numbers
included, that rstore.decode_lines gives for its lines."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore import Columns, EnvelopeError, decode_lines, encode_entry, jsonl_blocks
from rstore.replay import envelope

needs_c = pytest.mark.skipif(envelope._c_decode_run is None, reason="the C decoder is not built")

U64 = st.integers(min_value=0, max_value=2**64 - 1)
TEXT_BYTES = st.text().map(str.encode)  # valid UTF-8, every kind of character
ANY_BYTES = st.one_of(st.binary(max_size=30), TEXT_BYTES)
STREAMS = st.sampled_from([b"a", b"b", "é€𝄞".encode(), b'q"\\'])
Entry = tuple[bytes, tuple[int, int], list[bytes]]


def flats(values: st.SearchStrategy[bytes]) -> st.SearchStrategy[list[bytes]]:
    return st.lists(st.tuples(values, values), min_size=1, max_size=4).map(
        lambda pairs: [item for pair in pairs for item in pair]
    )


def entry_lists(values: st.SearchStrategy[bytes]) -> st.SearchStrategy[list[Entry]]:
    return st.lists(st.tuples(STREAMS, st.tuples(U64, U64), flats(values)), max_size=12)


def c_decode(data: bytes, pos: int, cols: Columns) -> tuple[bytes | None, int, int]:
    assert envelope._c_decode_run is not None
    return envelope._c_decode_run(data, pos, *cols.buffers())


def _run(data: bytes, decode: object) -> list[tuple[bytes | None, int, int, list[object]]]:
    """Every call from the start: what each decodes (and the position it reaches); a line a
    call does not take is skipped by hand, as decode_blocks reads it."""
    out = []
    pos = 0
    while pos < len(data):
        cols = Columns()
        stream, end, lines = decode(data, pos, cols)  # type: ignore[operator]
        assert lines == cols.count and (stream is None) == (lines == 0)
        out.append((stream, pos, end, [bytes(b) for b in cols.buffers()]))
        if not lines:
            nl = data.find(b"\n", pos)
            end = len(data) if nl < 0 else nl + 1
        pos = end
    return out


@needs_c
@given(items=entry_lists(TEXT_BYTES), tail=st.booleans())
def test_c_takes_every_text_line_and_gives_what_python_gives(
    items: list[Entry], tail: bool
) -> None:
    data = b"".join(encode_entry(s, i, f) + b"\n" for s, i, f in items)
    if tail and data:
        data = data[:-1]  # the last line without its newline
    c = _run(data, c_decode)
    assert c == _run(data, envelope.decode_run_py)
    assert all(stream is not None for stream, _, _, _ in c)  # no line left to Python


@needs_c
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(items=entry_lists(ANY_BYTES), data=st.data())
def test_c_never_decodes_a_line_otherwise_than_python(
    items: list[Entry], data: st.DataObject
) -> None:
    """Any bytes: lines with base64 values, mutated ones (a byte changed, inserted, removed)."""
    raw = bytearray(b"".join(encode_entry(s, i, f) + b"\n" for s, i, f in items))
    for _ in range(data.draw(st.integers(0, 4))):
        if not raw:
            break
        at = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        byte = data.draw(st.sampled_from(b' "\\,:[]{}\n\r\t0-9aAuU\x00\x7f\x80\xc3\xa9\xed\xf4'))
        if op == "set":
            raw[at] = byte
        elif op == "insert":
            raw.insert(at, byte)
        else:
            del raw[at]
    block = bytes(raw)
    pos = 0
    while pos < len(block):
        c_cols, py_cols = Columns(), Columns()
        c_stream, c_end, c_lines = c_decode(block, pos, c_cols)
        py_stream, _, py_lines = envelope.decode_run_py(block, pos, py_cols)
        assert c_lines <= py_lines
        if c_lines:
            assert c_stream == py_stream
            assert c_cols.entries() == py_cols.entries()[:c_lines]
            pos = c_end
        else:  # nothing changed; the line is Python's
            assert (c_stream, c_end, c_cols.nbytes) == (None, pos, Columns().nbytes)
            nl = block.find(b"\n", pos)
            pos = len(block) if nl < 0 else nl + 1


@needs_c
def test_c_reads_json_escapes_and_leaves_what_python_refuses() -> None:
    text = ["tab\t", 'quote"', "back\\slash", "nul\x00", "é", "€", "𝄞", "/", "\x7f"]
    escaped = json.dumps(
        {"stream": "s", "id": "1-1", "fields": [[t, t] for t in text]},
        ensure_ascii=True,
        separators=(",", ":"),
    ).encode()
    assert b"\\ud834\\udd1e" in escaped and b"\\u00e9" in escaped  # a surrogate pair too
    for line in (escaped, escaped.replace(b"/", b"\\/")):
        cols = Columns()
        assert c_decode(line, 0, cols) == (b"s", len(line), 1)
        assert cols.entries() == [((1, 1), [t.encode() for t in text for _ in (0, 1)])]
    refused = [
        b'{"stream":"s","id":"1-1","fields":[["\\ud834","v"]]}',  # a lone surrogate
        b'{"stream":"s","id":"1-1","fields":[["\\udd1e","v"]]}',
        b'{"stream":"s","id":"18446744073709551616-0","fields":[["f","v"]]}',  # past 64 bits
        b'{"stream":"s","id":"1-1","fields":[]}',
        b'{"stream":"s","id":"1-1","fields":[["f",{"base64":"AP8="}]]}',  # Python's
        b'{"stream": "s","id":"1-1","fields":[["f","v"]]}',  # Python's: a space
        b'{"stream":"s","id":"1-1","fields":[["f","v"]]}\r\n',  # Python's: CRLF
        b'{"stream":"s","id":"1-1","fields":[["f","\xc0\xaf"]]}',  # overlong UTF-8
        b'{"stream":"s","id":"1-1","fields":[["f","\xed\xa0\x80"]]}',  # a surrogate in UTF-8
        b'{"stream":"s","id":"1-1","fields":[["f","a\x01"]]}',  # a control character
    ]
    for line in refused:
        cols = Columns()
        assert c_decode(line, 0, cols) == (None, 0, 0), line
        assert cols.count == 0 and cols.nbytes == Columns().nbytes


BLOCK_LINES = st.one_of(
    st.tuples(STREAMS, st.tuples(U64, U64), flats(ANY_BYTES)).map(
        lambda e: encode_entry(*e) + b"\n"
    ),
    st.sampled_from([b"\n", b"  \n", b"\r\n", b'{"stream":"a"}\n', b"not json\n"]),
    st.tuples(st.sampled_from(["a", "é"]), U64).map(  # other spellings of the same entry
        lambda e: (
            json.dumps({"fields": [["f", "v"]], "stream": e[0], "id": f"{e[1]}-0"}).encode()
            + b"\r\n"
        )
    ),
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(BLOCK_LINES, max_size=15), size=st.integers(1, 300))
def test_blocks_give_what_decode_lines_gives(lines: list[bytes], size: int) -> None:
    data = b"".join(lines)
    blocks = list(jsonl_blocks(io.BytesIO(data), size))
    assert b"".join(blocks) == data
    assert all(b.endswith(b"\n") for b in blocks[:-1])
    got: list[Entry] = []
    try:
        for run in rstore.decode_blocks(blocks, name="f"):
            got += [(run.stream, *run.cols.entry(i)) for i in range(run.cols.count)]
    except EnvelopeError as exc:
        got.append(("error", str(exc), exc.lineno))  # type: ignore[arg-type]
    expected: list[Entry] = []
    try:
        expected += decode_lines(io.BytesIO(data), name="f")  # lines end at \n only
    except EnvelopeError as exc:
        expected.append(("error", str(exc), exc.lineno))  # type: ignore[arg-type]
    assert got == expected
