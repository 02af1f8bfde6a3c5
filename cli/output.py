"""Writing entries fast and in bounded memory: :class:`EntryWriter`.

Entry lines (see :func:`rstore_cli.format.entry_line` for the format) are built as bytes and
written to the binary stdout.  Names and values of printable ASCII -- nearly all -- go out as
they are, without decoding or copying; a value longer than :data:`CHUNK` is written on its own,
and one that must be quoted is escaped :data:`CHUNK` bytes at a time, so a 600 MB value costs
no second 600 MB (nor a third, nor a str four times its size).  Lines are flushed when the
writer is flushed (after each entry for ``tail``, else when the command ends or the buffer
fills), not one ``write`` system call per line.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import BinaryIO

import click

from .format import BARE_FIELD, BARE_VALUE, escape_text, token
from .jsonout import echo_json
from .replies import Entry

__all__ = ["BATCH", "CHUNK", "EntryWriter", "RawEntry", "echo_entries", "echo_ids"]

#: An entry as a reply holds it: ``(id, [field, value, ...])``, or ``(id, None)`` for a
#: pending entry deleted from the stream.
RawEntry = tuple[bytes, Sequence[bytes] | None]

#: Values longer than this are written piece by piece.
CHUNK = 1 << 16
#: Lines of short entries written at a time by :meth:`EntryWriter.pages`.
BATCH = 256

# Entries whose fields are joined with NUL, joined with \x01 (neither is ever bare): a match
# means every name and value is bare printable ASCII (names without "=").
_NAME = rb"[\x21\x23-\x3c\x3e-\x5b\x5d-\x7e]+"
_VALUE = rb"[\x21\x23-\x5b\x5d-\x7e]+"
_ENTRY = rb"(?:%s\x00%s\x00)*%s\x00%s" % (_NAME, _VALUE, _NAME, _VALUE)
_ALL_BARE = re.compile(rb"(?:%s\x01)*%s\Z" % (_ENTRY, _ENTRY)).match
# The line of an entry with N fields, by N: b"%s  %s=%s %s=%s\n" for two.
_LINE_FORMATS: dict[int, bytes] = {}

_SPECIAL = {False: frozenset(' "\\'), True: frozenset(' "\\=')}


class EntryWriter:
    """Writes entry lines and text lines to stdout (or ``stream``), encoded as stdout encodes
    text, escaping what the encoding cannot show."""

    def __init__(self, stream: BinaryIO | None = None, *, flush_each: bool = False) -> None:
        sys.stdout.flush()  # whatever click.echo() wrote first goes first
        self.out: BinaryIO = stream if stream is not None else sys.stdout.buffer
        self.encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        self.flush_each = flush_each

    def _encode(self, text: str) -> bytes:
        return text.encode(self.encoding, "backslashreplace")

    def text(self, line: str) -> None:
        """One line of text (a newline is added)."""
        self.out.write(self._encode(line + "\n"))
        if self.flush_each:
            self.out.flush()

    def entry(self, entry_id: bytes, flat: Sequence[bytes] | None, prefix: str = "") -> None:
        """``[prefix]ID  field=value ...``; ``flat`` is ``[field, value, ...]`` as a reply holds
        it, ``None`` for a pending entry deleted from the stream (``ID  (deleted)``)."""
        parts = [self._encode(prefix), entry_id] if prefix else [entry_id]
        if flat is None:
            parts.append(b"  (deleted)")
        elif flat:
            parts.append(b" ")  # the second of the two spaces after the ID
        for i in range(0, len(flat or ()), 2):
            assert flat is not None
            name, value = flat[i], flat[i + 1]
            parts.append(b" ")
            self._add(parts, name, field=True)
            parts.append(b"=")
            self._add(parts, value, field=False)
        parts.append(b"\n")
        self.out.write(b"".join(parts))
        if self.flush_each:
            self.out.flush()

    def pages(self, pages: Iterable[Sequence[RawEntry]]) -> None:
        """Entries a page at a time (:func:`rstore.iter_range_pages`), each written as
        :meth:`entry` writes it.  Short entries go :data:`BATCH` at a time: a batch whose names
        and values are all printable ASCII -- nearly always -- is checked with one regular
        expression and written with one ``write``.  No page is held once written."""
        for page in pages:
            for start in range(0, len(page), BATCH):
                self._write_batch(page[start : start + BATCH])
            del page

    def entries(self, items: Iterable[RawEntry]) -> None:
        """Entries from any iterable, :data:`BATCH` at a time as :meth:`pages` writes them
        (so up to that many are held at once: use :meth:`pages` for a long range)."""
        entries = iter(items)
        while batch := list(islice(entries, BATCH)):
            self._write_batch(batch)

    def _write_batch(self, batch: Sequence[RawEntry]) -> None:
        lines = _bare_lines(batch)
        if lines is not None:
            self.out.write(lines)
            return
        for entry_id, flat in batch:
            self.entry(entry_id, flat)

    def flush(self) -> None:
        self.out.flush()

    def _add(self, parts: list[bytes], value: bytes, *, field: bool) -> None:
        """Append ``value`` as :func:`token` prints it; a long one is written out at once."""
        if (BARE_FIELD if field else BARE_VALUE)(value):  # printable ASCII: bytes are the text
            parts.append(value)
        elif len(value) <= CHUNK:
            parts.append(self._encode(token(value, field=field)))
        else:
            self.out.write(b"".join(parts))
            parts.clear()
            self._write_long(value, field)

    def _write_long(self, value: bytes, field: bool) -> None:
        """A name or value longer than :data:`CHUNK`, bare or quoted as :func:`token` decides,
        written piece by piece."""
        if _is_bare(value, field):
            for text in _pieces(value):
                self.out.write(self._encode(text))
            return
        self.out.write(b'"')
        for text in _pieces(value):
            self.out.write(self._encode(escape_text(text)))
        self.out.write(b'"')


def _pieces(value: bytes) -> Iterable[str]:
    """``value`` decoded as UTF-8 (``surrogateescape``), :data:`CHUNK` bytes at a time; a
    character cut by a piece's end is completed by the next piece."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    view = memoryview(value)
    for start in range(0, len(value), CHUNK):
        yield decoder.decode(view[start : start + CHUNK], final=start + CHUNK >= len(value))


def _is_bare(value: bytes, field: bool) -> bool:
    """What :func:`token` decides for a long name or value, reading it piece by piece."""
    special = _SPECIAL[field]
    return all(text.isprintable() and special.isdisjoint(text) for text in _pieces(value))


def _bare_lines(batch: Sequence[RawEntry]) -> bytes | None:
    """The lines of ``batch`` when every name and value in it is short and bare printable
    ASCII (so its bytes are its text); else ``None``."""
    if not batch:
        return b""
    flats: list[Sequence[bytes]] = []
    for _, flat in batch:
        if not flat:  # a deleted entry
            return None
        flats.append(flat)
    if max(map(len, chain.from_iterable(flats))) > CHUNK:
        return None
    if not _ALL_BARE(b"\x01".join(map(b"\x00".join, flats))):
        return None
    lines = []
    for (entry_id, _), flat in zip(batch, flats):
        fmt = _LINE_FORMATS.get(len(flat))
        if fmt is None:
            fmt = _LINE_FORMATS[len(flat)] = (
                b"%s  " + b" ".join([b"%s=%s"] * (len(flat) // 2)) + b"\n"
            )
        lines.append(fmt % (entry_id, *flat))
    return b"".join(lines)


def echo_entries(entries: Sequence[Entry], as_json: bool) -> None:
    """Entries as ``range`` prints them: entry lines, or one JSON array; written out (flushed)
    when this returns."""
    if as_json:
        echo_json(list(entries))
    else:
        writer = EntryWriter()
        for entry in entries:
            writer.entry(entry.id, entry.flat())
        writer.flush()


def echo_ids(ids: Sequence[bytes], as_json: bool) -> None:
    """Entry IDs, one a line, or one JSON array."""
    if as_json:
        echo_json(list(ids))
    else:
        for entry_id in ids:
            click.echo(entry_id.decode("ascii", "backslashreplace"))
