"""rstore's JSONL envelope: one stream entry per line, lossless and binary safe.

Each line is one JSON object with three keys, always written in this order and without
spaces::

    {"stream":"events","id":"1700000000000-0","fields":[["user","42"],["action","login"]]}

* ``stream``: the stream's name;
* ``id``: the entry ID as ``"<ms>-<seq>"`` (two unsigned 64-bit decimal numbers);
* ``fields``: the entry's field/value pairs as ``[field, value]`` arrays, in stored order,
  a field name that appears twice kept twice.

Every name and value is a JSON string when its bytes are valid UTF-8 (written as UTF-8, only
``"``, ``\\`` and control characters escaped), else the object ``{"base64": "<standard
base64 with padding>"}`` -- the mapping every ``--json`` output of the CLI uses.  The reader
also takes ``{"base64": ...}`` for bytes that are valid UTF-8, JSON's ``\\uXXXX`` escapes and
spaces between tokens; blank lines are skipped; any other key, a missing key, an ID that is
not ``ms-seq`` or an entry without fields is refused with :class:`EnvelopeError`, whose text
names the line.

The encoders and the decoder are pure functions (no I/O): :func:`encode_entry` one entry,
:func:`encode_columns` a whole batch of :class:`rstore.Columns` (the fast path of exports),
:func:`decode_entry` one line, :func:`decode_lines` a file's lines, :func:`decode_blocks` a
file's blocks of lines into runs of one stream's entries as columns (the fast path of imports:
its C half, ``_envelope.c``, decodes the lines written as :func:`encode_entry` writes them
straight into the columns, and leaves any other line to the Python decoder, the reference).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import pairwise
from typing import NamedTuple

from rstore import Columns, RStoreError

from .buffers import int32s, little, strings

__all__ = [
    "MARKER",
    "ColumnRun",
    "EnvelopeError",
    "ReplayEntry",
    "decode_blocks",
    "decode_entry",
    "decode_lines",
    "decode_run",
    "decode_run_py",
    "encode_columns",
    "encode_entry",
]

#: the C line decoder, or ``None`` (not built, or turned off by ``RSTORE_NO_SPEEDUPS=1``)
_c_decode_run: Callable[..., tuple[bytes | None, int, int]] | None = None
if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    with contextlib.suppress(ImportError):  # built without a C compiler: Python does it all
        from . import _envelope  # type: ignore[attr-defined]

        _c_decode_run = _envelope.decode_run

#: A stream entry as the replay sources give it: stream name, ``(ms, seq)``, and the flat
#: ``[field, value, ...]`` list.
ReplayEntry = tuple[bytes, tuple[int, int], list[bytes]]

#: The key of the object that stands for bytes that are not UTF-8.
MARKER = "base64"

_UINT64_MAX = (1 << 64) - 1
_KEYS = ("stream", "id", "fields")
# Bytes a JSON string may hold as they are: printable ASCII but the quote and the backslash.
_PLAIN = re.compile(rb"[\x20\x21\x23-\x5b\x5d-\x7e]*\Z").match
_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})\Z").match


class EnvelopeError(RStoreError):
    """A line that is not an entry of the envelope; ``lineno`` is its 1-based number (``None``
    when unknown), and the message is one line naming it."""

    def __init__(self, message: str, lineno: int | None = None) -> None:
        super().__init__(message)
        self.lineno = lineno


# -- encoding ----------------------------------------------------------------------------------


def _json_string(value: bytes) -> bytes:
    """``value`` as a JSON value of the envelope: a string, or ``{"base64": ...}``."""
    if _PLAIN(value):
        return b'"' + value + b'"'
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return b'{"base64":"' + binascii.b2a_base64(value, newline=False) + b'"}'
    return json.dumps(text, ensure_ascii=False).encode("utf-8")


def encode_entry(stream: bytes, entry_id: tuple[int, int], flat: Sequence[bytes]) -> bytes:
    """One entry as one line of the envelope, without the newline.

    ``flat`` is ``[field, value, ...]`` as XRANGE replies it."""
    if len(flat) % 2:
        raise ValueError("flat must hold field/value pairs (an even number of items)")
    pairs = b",".join(
        b"[%s,%s]" % (_json_string(flat[i]), _json_string(flat[i + 1]))
        for i in range(0, len(flat), 2)
    )
    return b'{"stream":%s,"id":"%d-%d","fields":[%s]}' % (
        _json_string(stream),
        entry_id[0],
        entry_id[1],
        pairs,
    )


def _shared_names(cols: Columns) -> list[bytes] | None:
    """The field names of the batch's first entry when every entry has exactly those, in that
    order (the usual case: one producer, one schema); else ``None``.  Checked on the buffers
    as a whole, without a Python step per entry."""
    n = cols.count
    first_pairs = int.from_bytes(cols.entry_offsets[4:8], "little")
    if little(array("i", range(0, n * first_pairs + 1, first_pairs or 1))) != cols.entry_offsets:
        return None
    if first_pairs == 0:
        return None
    base = int32s(cols.key_offsets[: 4 * (first_pairs + 1)])
    size = base[-1]  # bytes of one entry's names
    if cols.key_data != cols.key_data[:size] * n:
        return None
    expected = array("i", bytes(4 * (n * first_pairs + 1)))
    if size:
        for j in range(1, first_pairs + 1):
            expected[j::first_pairs] = array("i", range(base[j], base[j] + n * size, size))
    if little(expected) != cols.key_offsets:
        return None
    data = bytes(cols.key_data[:size])
    return [data[a:b] for a, b in pairwise(base)]


def encode_columns(stream: bytes, cols: Columns) -> bytes:
    """Every entry of the batch ``cols`` (:func:`rstore.iter_columns` of stream ``stream``) as
    lines of the envelope, each ending with a newline: the same bytes as :func:`encode_entry`
    gives entry by entry, several times faster."""
    n = cols.count
    if not n:
        return b""
    ids = strings(cols.id_offsets, cols.id_data)
    values = strings(cols.value_offsets, cols.value_data)
    head = b'{"stream":' + _json_string(stream) + b',"id":"'
    if _PLAIN(cols.value_data):  # nothing to escape: the usual case
        value_format = b'"%s"'
    else:
        value_format = b"%s"
        values = [_json_string(v) for v in values]
    names = _shared_names(cols)
    if names is not None:  # one line template, filled for the whole batch at once
        pairs = b",".join(
            b"[" + _json_string(name).replace(b"%", b"%%") + b"," + value_format + b"]"
            for name in names
        )
        line = head.replace(b"%", b"%%") + b'%s","fields":[' + pairs + b"]}\n"
        width = len(names) + 1
        args: list[bytes] = [b""] * (n * width)
        args[0::width] = ids
        for j in range(len(names)):
            args[j + 1 :: width] = values[j :: len(names)]
        return (line * n) % tuple(args)
    keys = [_json_string(k) for k in strings(cols.key_offsets, cols.key_data)]
    pair_format = b"[%s," + value_format + b"]"
    pairs_list = [pair_format % kv for kv in zip(keys, values)]
    bounds = int32s(cols.entry_offsets)
    join = b",".join
    return b"".join(
        [
            b'%s%s","fields":[%s]}\n' % (head, entry_id, join(pairs_list[a:b]))
            for entry_id, a, b in zip(ids, bounds, bounds[1:])
        ]
    )


# -- decoding ----------------------------------------------------------------------------------


def _bytes_of(value: object, where: str) -> bytes:
    if type(value) is str:
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"{where} holds a lone surrogate escape (\\ud800-\\udfff); write bytes that "
                f'are not UTF-8 as {{"{MARKER}": "..."}}'
            ) from None
    if type(value) is dict and len(value) == 1 and type(value.get(MARKER)) is str:
        try:
            return base64.b64decode(value[MARKER], validate=True)
        except ValueError as exc:  # binascii.Error, or characters that are not ASCII
            raise ValueError(f"{where} is not valid base64 ({exc})") from None
    raise ValueError(f'{where} must be a string or {{"{MARKER}": "..."}}, not {_shown(value)}')


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_id(value: object) -> tuple[int, int]:
    found = _ID(value) if type(value) is str else None
    if found is None:
        raise ValueError(f'"id" must be a string "<ms>-<seq>", not {_shown(value)}')
    ms, seq = int(found[1]), int(found[2])
    if ms > _UINT64_MAX or seq > _UINT64_MAX:
        raise ValueError(f'"id" {value} is past the largest ID (both parts are 64-bit)')
    return ms, seq


def _fields(value: object) -> list[bytes]:
    if type(value) is not list:
        raise ValueError(f'"fields" must be an array of [field, value] pairs, not {_shown(value)}')
    if not value:
        raise ValueError('"fields" is empty (a stream entry holds at least one field)')
    flat: list[bytes] = []
    for i, pair in enumerate(value):
        if type(pair) is not list or len(pair) != 2:
            raise ValueError(f"fields[{i}] must be a [field, value] pair, not {_shown(pair)}")
        flat.append(_bytes_of(pair[0], f"fields[{i}][0]"))
        flat.append(_bytes_of(pair[1], f"fields[{i}][1]"))
    return flat


def _decode(line: bytes | str) -> ReplayEntry:
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8 text (byte {exc.start + 1})") from None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if type(obj) is not dict:
        raise ValueError(f"not an entry object: {_shown(obj)}")
    if len(obj) != 3 or any(key not in obj for key in _KEYS):
        missing = [key for key in _KEYS if key not in obj]
        if missing:
            raise ValueError(f'no "{missing[0]}" key (an entry has "stream", "id", "fields")')
        extra = next(key for key in obj if key not in _KEYS)
        raise ValueError(f'unknown key "{extra}" (an entry has "stream", "id", "fields")')
    return _bytes_of(obj["stream"], '"stream"'), _parse_id(obj["id"]), _fields(obj["fields"])


def decode_entry(line: bytes | str, lineno: int | None = None) -> ReplayEntry:
    """The entry one line of the envelope holds (a trailing newline is allowed), as
    ``(stream, (ms, seq), [field, value, ...])``; :class:`EnvelopeError` for anything else,
    its message starting with ``line <lineno>:`` when ``lineno`` is given."""
    try:
        return _decode(line)
    except ValueError as exc:
        where = "" if lineno is None else f"line {lineno}: "
        raise EnvelopeError(f"{where}{exc}", lineno) from None


def decode_lines(lines: Iterable[bytes | str], *, name: str | None = None) -> Iterator[ReplayEntry]:
    """The entries of a whole file (any iterable of lines: a binary file, ``sys.stdin.buffer``,
    a list), skipping blank lines.  The error of a malformed line names it as ``<name> line
    <n>: ...`` (``line <n>: ...`` without ``name``)."""
    prefix = "" if name is None else f"{name} "
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield _decode(line)
        except ValueError as exc:
            raise EnvelopeError(f"{prefix}line {lineno}: {exc}", lineno) from None


# -- decoding blocks into columns -----------------------------------------------------------


class ColumnRun(NamedTuple):
    """Consecutive entries of one stream: its name and the entries as columns."""

    stream: bytes
    cols: Columns


def _line_at(data: bytes, pos: int) -> bytes:
    end = data.find(b"\n", pos)
    return data[pos:] if end < 0 else data[pos : end + 1]


def decode_run_py(data: bytes, pos: int, cols: Columns) -> tuple[bytes | None, int, int]:
    """:func:`decode_run` in Python: the reference."""
    stream: bytes | None = None
    lines = 0
    while pos < len(data):
        line = _line_at(data, pos)
        if not line.strip():
            break
        try:
            name, entry_id, flat = _decode(line)
        except ValueError:
            break
        if stream is not None and name != stream:
            break
        stream = name
        cols.add_entry(entry_id, flat)
        pos += len(line)
        lines += 1
    return stream, pos, lines


def decode_run(data: bytes, pos: int, cols: Columns) -> tuple[bytes | None, int, int]:
    """Decode the lines of ``data`` from ``pos`` that are entries of one stream into ``cols``:
    ``(stream, position after the last line decoded, lines decoded)``, ``(None, pos, 0)``
    when the line at ``pos`` is not decoded.  It stops before a line of another stream, a
    blank or malformed one (which :func:`decode_entry` names) -- and, in C, before any line not
    written as :func:`encode_entry` writes it; what it decodes is what :func:`decode_entry`
    gives."""
    if _c_decode_run is not None:
        return _c_decode_run(data, pos, *cols.buffers())
    return decode_run_py(data, pos, cols)


def decode_blocks(blocks: Iterable[bytes], *, name: str | None = None) -> Iterator[ColumnRun]:
    """The entries of a file read in blocks of whole lines (the last one may end without a
    newline), as :func:`decode_lines` gives them one by one: runs of one stream's consecutive
    entries, in file order, blank lines skipped; a malformed line raises
    :class:`EnvelopeError` naming it (``<name> line <n>: ...``), after the runs before it."""
    prefix = "" if name is None else f"{name} "
    lineno = 0
    for data in blocks:
        pos = 0
        while pos < len(data):
            cols = Columns()
            stream, pos, lines = decode_run(data, pos, cols)
            if stream is not None:
                lineno += lines
                yield ColumnRun(stream, cols)
                continue
            line = _line_at(data, pos)  # one line the fast decoder left: the reference's
            pos += len(line)
            lineno += 1
            if not line.strip():
                continue
            try:
                stream, entry_id, flat = _decode(line)
            except ValueError as exc:
                raise EnvelopeError(f"{prefix}line {lineno}: {exc}", lineno) from None
            cols.add_entry(entry_id, flat)
            yield ColumnRun(stream, cols)
