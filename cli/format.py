"""Human-readable output.

Two styles live here:

* :func:`redis_cli_reply` reproduces ``redis-cli``'s interactive (TTY) reply format byte for
  byte, for ``rstore exec``: ``"bulk"`` strings quoted with C-style escapes, ``(integer) 5``,
  status lines bare, ``(nil)``, ``(empty array)``, and numbered nested arrays;
  :func:`raw_reply` its ``--raw`` format (what it prints when stdout is not a terminal).
* :func:`token` and friends print names, IDs and values for the friendly commands: bare when
  that is unambiguous, otherwise double-quoted with the same escapes.  Bytes that are not UTF-8
  never reach the terminal raw; they are written as ``\\xHH``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from rstore import NIL_ARRAY

from .replies import Entry

__all__ = [
    "BARE_FIELD",
    "BARE_VALUE",
    "counted",
    "entry_line",
    "escape_text",
    "info_items",
    "info_lines",
    "quote_bytes",
    "raw_reply",
    "redis_cli_reply",
    "redis_repr",
    "scalar",
    "show_path",
    "table_lines",
    "token",
]

# ----------------------------------------------------------------------------- redis-cli style

_C_ESCAPES = {
    ord("\\"): "\\\\",
    ord('"'): '\\"',
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord("\a"): "\\a",
    ord("\b"): "\\b",
}

# One string per byte value, as redis-cli's sdscatrepr() writes it: the escapes above, printable
# ASCII (isprint() in the C locale: 0x20-0x7e) as itself, every other byte as \xHH.
_REPR_TABLE = tuple(
    _C_ESCAPES.get(b, chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02x}") for b in range(256)
)


def redis_repr(value: bytes) -> str:
    """``value`` double-quoted the way redis-cli prints a bulk string."""
    return '"' + "".join([_REPR_TABLE[b] for b in value]) + '"'


def redis_cli_reply(reply: Any, prefix: str = "") -> str:
    """The reply as redis-cli prints it on a terminal, ending in a newline.

    Nested arrays follow redis-cli's layout: each element is numbered ``N) `` with the number
    right-aligned to the width of the largest index, and an element that is itself an array
    starts on the same line, its further lines indented by the parent's width plus two.
    """
    if reply is None or reply is NIL_ARRAY:
        return "(nil)\n"
    if isinstance(reply, bytes):
        return redis_repr(reply) + "\n"
    if isinstance(reply, str):  # a status reply: printed as is
        return reply + "\n"
    if isinstance(reply, int):
        return f"(integer) {reply}\n"
    if isinstance(reply, list):
        if not reply:
            return "(empty array)\n"
        width = len(str(len(reply)))
        inner = prefix + " " * (width + 2)
        parts: list[str] = []
        for index, item in enumerate(reply, start=1):
            # The first element shares the line the caller already started.
            parts.append(f"{prefix if index > 1 else ''}{index:>{width}}) ")
            parts.append(redis_cli_reply(item, inner))
        return "".join(parts)
    raise TypeError(f"not a reply value: {reply!r}")


def raw_reply(reply: Any) -> bytes:
    """The reply as ``redis-cli --raw`` prints it (and as it prints it by default when stdout
    is not a terminal), without the final newline: strings as their bytes, integers in
    decimal, nil as nothing, and the elements of an array, nested ones included, one per line.
    """
    if reply is None or reply is NIL_ARRAY:
        return b""
    if isinstance(reply, bytes):
        return reply
    if isinstance(reply, str):  # a status reply
        return reply.encode()
    if isinstance(reply, int):
        return b"%d" % reply
    if isinstance(reply, list):
        return b"\n".join([raw_reply(item) for item in reply])
    raise TypeError(f"not a reply value: {reply!r}")


# ----------------------------------------------------------------------------- friendly style

_QUOTED_ESCAPES = {chr(k): v for k, v in _C_ESCAPES.items()}


def quote_bytes(value: bytes) -> str:
    """``value`` in double quotes: valid UTF-8 printable characters as themselves, the C escapes
    (``\\n``, ``\\t``, ``\\"``, ``\\\\`` ...), and every other byte as ``\\xHH``."""
    return '"' + escape_text(value.decode("utf-8", "surrogateescape")) + '"'


def escape_text(text: str) -> str:
    """The inside of :func:`quote_bytes` for bytes decoded as UTF-8 with ``surrogateescape``
    (so that a long value can be escaped piece by piece)."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not part of valid UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in _QUOTED_ESCAPES:
            out.append(_QUOTED_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8"))
    return "".join(out)


# Printable ASCII but space, '"' and '\\' (and '=' in a field name): always printed bare.
BARE_VALUE = re.compile(rb"[\x21\x23-\x5b\x5d-\x7e]+\Z").match
BARE_FIELD = re.compile(rb"[\x21\x23-\x3c\x3e-\x5b\x5d-\x7e]+\Z").match


def token(value: bytes, *, field: bool = False) -> str:
    """``value`` bare when that is unambiguous, else :func:`quote_bytes`.

    Bare means: non-empty valid UTF-8 made of printable characters other than space, ``"`` and
    ``\\`` (and, for a field name, ``=``).  So a printed token never contains a raw space,
    newline or control character, and one that starts with ``"`` is always the quoted form.
    """
    if (BARE_FIELD if field else BARE_VALUE)(value):
        return value.decode("ascii")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return quote_bytes(value)
    special = ' "\\=' if field else ' "\\'
    if text and text.isprintable() and not any(ch in text for ch in special):
        return text
    return quote_bytes(value)


def entry_line(entry: Entry) -> str:
    """``ID  field=value field=value`` (two spaces after the ID); ``ID  (deleted)`` for a
    pending entry that is no longer in the stream."""
    if entry.deleted:
        pairs = "(deleted)"
    else:
        pairs = " ".join(f"{token(f, field=True)}={token(v)}" for f, v in entry.fields)
    return f"{entry.id.decode('ascii', 'backslashreplace')}  {pairs}".rstrip()


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 entry``, ``2 entries``: ``n`` and the noun, plural (``noun + "s"`` unless given)
    when ``n`` is not 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def show_path(path: str) -> str:
    """A file or store path for a message: bytes that are not UTF-8 shown as ``\\xHH`` (a
    path Python got from the system holds them as surrogate escapes, which no terminal shows).
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def scalar(value: Any) -> str:
    """An integer, a name or ID, or nil, for ``key: value`` lines."""
    if value is None:
        return "(nil)"
    if isinstance(value, bytes):
        return token(value)
    if isinstance(value, Entry):
        return entry_line(value)
    return str(value)


#: A line of :func:`info_items`: text, or an entry with the text before it.
InfoItem = str | tuple[str, Entry]


def info_lines(tree: Mapping[str, Any], indent: str = "") -> Iterator[str]:
    """``key: value`` lines for a tree from :func:`rstore_cli.replies.info_tree`.

    Lists of entries print one entry per line, indented; lists of maps print YAML-like items
    (``- name: g1`` then the other keys aligned under ``name``).
    """
    for item in info_items(tree, indent):
        yield item if isinstance(item, str) else item[0] + entry_line(item[1])


def info_items(tree: Mapping[str, Any], indent: str = "") -> Iterator[InfoItem]:
    """:func:`info_lines` with each entry left apart, as ``(text before it, entry)``, for a
    writer that prints entries piece by piece (:class:`rstore_cli.output.EntryWriter`)."""
    for key, value in tree.items():
        if isinstance(value, list):
            if not value:
                yield f"{indent}{key}: (empty)"
                continue
            yield f"{indent}{key}:"
            yield from _list_items(value, indent + "  ")
        elif isinstance(value, Entry):
            yield (f"{indent}{key}: ", value)
        else:
            yield f"{indent}{key}: {scalar(value)}"


def _list_items(items: Sequence[Any], indent: str) -> Iterator[InfoItem]:
    for item in items:
        if isinstance(item, Mapping):
            lines = list(info_items(item, indent + "  "))
            if not lines:
                yield f"{indent}- (empty)"
                continue
            first = lines[0]
            if isinstance(first, str):
                yield f"{indent}- {first[len(indent) + 2 :]}"
            else:
                yield (f"{indent}- {first[0][len(indent) + 2 :]}", first[1])
            yield from lines[1:]
        elif isinstance(item, Entry):
            yield (indent, item)
        else:
            yield f"{indent}{scalar(item)}"


def table_lines(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """A header line and one line per row, columns left-aligned and two spaces apart.

    Cells print as :func:`scalar` does (names quoted when needed, nil as ``(nil)``), so a cell
    never holds a raw space and the columns split with ``awk``.  No trailing spaces.
    """
    cells = [list(headers)] + [[scalar(value) for value in row] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    for line in cells:
        yield "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
