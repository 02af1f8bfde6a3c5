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
import sys
from collections.abc import Iterable, Sequence
from typing import BinaryIO

from .format import BARE_FIELD, BARE_VALUE, escape_text, token

__all__ = ["CHUNK", "EntryWriter"]

#: Values longer than this are written piece by piece.
CHUNK = 1 << 16

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
        parts = [self._encode(prefix), entry_id, b" "] if prefix else [entry_id, b" "]
        if flat is None:
            parts.append(b" (deleted)")
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

    def entries(self, items: Iterable[tuple[bytes, Sequence[bytes] | None]]) -> None:
        for entry_id, flat in items:
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
