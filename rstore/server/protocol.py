"""Reading requests from a client's byte stream, as Valkey reads them.

A request is either a RESP array of bulk strings (``*2\\r\\n$4\\r\\nPING\\r\\n...``; what every
client library sends) or an *inline* command, one line of words (``PING``, ``XADD s * f v``;
what a person types into ``telnet`` or ``nc``).  The first byte decides, as in Valkey: ``*``
starts an array, anything else a line.

Malformed input gets Valkey's exact error text (:class:`ProtocolError`), after which the
server answers it and closes that connection: the bytes after a protocol error cannot be
trusted to start a request.  The limits are Valkey's: a bulk string of at most
``proto-max-bulk-len`` bytes, an inline line or a length line of at most 64 KiB, and before
``AUTH`` (when a password is required) at most 10 arguments of at most 16 KiB each.

The arrays in the canonical form clients send are read by the optional C scanner
``_requests.c`` when it was built (``RSTORE_NO_SPEEDUPS=1`` turns it off); it stops at
anything else, which the Python code here reads -- the two give the same requests.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from rstore import messages

#: the C scanner of canonical arrays, or ``None`` (not built, or turned off)
c_scan: Callable[[bytes, int, int, list[list[bytes]]], int] | None = None
if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    # built without a C compiler: the Python parser does it all
    with contextlib.suppress(ImportError):
        from . import _requests  # type: ignore[attr-defined]

        c_scan = _requests.scan

__all__ = ["INLINE_MAX", "ProtocolError", "RequestParser", "split_inline"]

#: the longest inline request, and the longest ``*N`` / ``$N`` line (Valkey's PROTO_INLINE_MAX_SIZE)
INLINE_MAX = 64 * 1024
_INT_MAX = (1 << 31) - 1
_UNAUTH_ARGS = 10
_UNAUTH_BULK = 16384
_DIGITS = frozenset(b"0123456789")


class ProtocolError(Exception):
    """Input that is not a request: ``str(exc)`` is Valkey's error line without ``-``."""


def _number(text: bytes) -> int | None:
    """A strict decimal as Valkey's ``string2ll`` reads one (``-`` allowed, no ``+``, no
    leading zero, no blanks), or ``None``."""
    digits = text[1:] if text[:1] == b"-" else text
    if not digits or not set(digits) <= _DIGITS or (len(digits) > 1 and digits[0] == 0x30):
        return None
    if text == b"-0":
        return None
    value = int(text)
    return value if -(1 << 63) <= value < 1 << 63 else None


_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_HEX = frozenset(b"0123456789abcdefABCDEF")
_SPACE = frozenset(b" \n\r\t\v\f")


def split_inline(line: bytes) -> list[bytes] | None:
    """The words of an inline request, with Valkey's quoting (``"..."`` with ``\\n``-style and
    ``\\xHH`` escapes, ``'...'`` with ``\\'``); ``None`` for unbalanced quotes, or a closing
    quote not followed by a blank."""
    words: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return words
        word = bytearray()
        quote = 0  # 0 none, 1 double, 2 single
        while True:
            if quote == 1:
                if i >= n:
                    return None
                c = line[i]
                if (
                    c == 0x5C
                    and i + 3 < n
                    and line[i + 1] == ord("x")
                    and line[i + 2] in _HEX
                    and line[i + 3] in _HEX
                ):
                    word.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == 0x5C and i + 1 < n:
                    i += 1
                    word.append(_ESCAPES.get(line[i], line[i]))
                elif c == 0x22:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    word.append(c)
            elif quote == 2:
                if i >= n:
                    return None
                c = line[i]
                if c == 0x5C and i + 1 < n and line[i + 1] == 0x27:
                    i += 1
                    word.append(0x27)
                elif c == 0x27:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    word.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in _SPACE:
                    break
                if c == 0x22:
                    quote = 1
                elif c == 0x27:
                    quote = 2
                else:
                    word.append(c)
            i += 1
        words.append(bytes(word))


class RequestParser:
    """Requests out of the bytes a client sends, fed as they arrive.

    :meth:`requests` gives every complete request in the buffer, in order, and keeps an
    incomplete one for the next :meth:`feed`; it raises :class:`ProtocolError` *after* giving
    back, through ``out``, the requests before the bad one."""

    __slots__ = ("_args", "_buf", "_left", "_need", "_pos", "max_bulk")

    def __init__(self, max_bulk: int = 512 * 1024 * 1024) -> None:
        self.max_bulk = max_bulk
        self._buf = bytearray()
        self._pos = 0
        self._args: list[bytes] = []
        self._left = 0  # bulk strings still to read of the current array
        self._need = 0  # the buffer length a bulk string being received needs

    @property
    def pending_bytes(self) -> int:
        """Bytes received and not yet consumed (the query buffer)."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> None:
        if self._pos > 65536:
            del self._buf[: self._pos]
            self._need -= self._pos
            self._pos = 0
        self._buf += data

    def requests(self, out: list[list[bytes]], *, authenticated: bool = True) -> None:
        """Append every complete request to ``out`` (empty ones are skipped)."""
        if self._pos >= len(self._buf) or len(self._buf) < self._need:
            return  # nothing new, or a long bulk string still arriving: not copied again
        data = bytes(self._buf)  # one copy; every argument is then one slice of it
        scan = c_scan if authenticated else None
        try:
            while self._pos < len(data):
                if scan is not None and self._left == 0:
                    pos = scan(data, self._pos, self.max_bulk, out)
                    if pos != self._pos:  # read some; the Python code reads what it stopped at
                        self._pos = pos
                        continue
                if self._left == 0 and data[self._pos] != 0x2A:  # not "*": an inline request
                    if not self._inline(data, out):
                        return
                elif not self._array(data, out, authenticated):
                    return
        finally:
            if self._pos >= len(self._buf):
                self._buf.clear()
                self._pos = self._need = 0

    def _inline(self, data: bytes, out: list[list[bytes]]) -> bool:
        line_end = data.find(b"\n", self._pos)
        if line_end < 0:
            if len(data) - self._pos > INLINE_MAX:
                raise ProtocolError(messages.PROTO_INLINE_TOO_BIG)
            return False
        stop = line_end
        if line_end > self._pos and data[line_end - 1] == 13:  # a CR before the LF
            stop -= 1
        words = split_inline(data[self._pos : stop])
        self._pos = line_end + 1
        if words is None:
            raise ProtocolError(messages.PROTO_UNBALANCED)
        if words:
            out.append(words)
        return True

    def _array(self, data: bytes, out: list[list[bytes]], authenticated: bool) -> bool:
        """Read (more of) an array; whether a whole one was consumed."""
        pos = self._pos
        end = len(data)
        if self._left == 0:
            cr = data.find(b"\r", pos)
            if cr < 0 or cr + 1 >= end:
                if end - pos > INLINE_MAX:
                    raise ProtocolError(messages.PROTO_MBULK_TOO_BIG)
                return False
            text = data[pos + 1 : cr]
            count = int(text) if text.isdigit() and (len(text) == 1 or text[0] != 48) else None
            if count is None:
                count = _number(text)
            if count is None or count > _INT_MAX:
                raise ProtocolError(messages.PROTO_MBULK_INVALID)
            if count > _UNAUTH_ARGS and not authenticated:
                raise ProtocolError(messages.PROTO_MBULK_UNAUTH)
            self._pos = pos = cr + 2
            if count <= 0:
                return True
            self._left = count
            self._args = []
        args = self._args
        max_bulk = self.max_bulk
        while self._left:
            cr = data.find(b"\r", pos)
            if cr < 0 or cr + 1 >= end:
                if end - pos > INLINE_MAX:
                    raise ProtocolError(messages.PROTO_BULK_COUNT_TOO_BIG)
                return False
            if data[pos] != 0x24:  # "$"
                got = chr(data[pos])  # a byte as one character: latin-1 when sent
                raise ProtocolError(messages.PROTO_EXPECTED_DOLLAR.format(got=got))
            text = data[pos + 1 : cr]
            if text.isdigit() and (len(text) == 1 or text[0] != 48):
                size: int | None = int(text)
            else:
                size = _number(text)
            if size is None or size < 0 or size > max_bulk:
                raise ProtocolError(messages.PROTO_BULK_INVALID)
            if size > _UNAUTH_BULK and not authenticated:
                raise ProtocolError(messages.PROTO_BULK_UNAUTH)
            start = cr + 2
            if end < start + size + 2:
                self._need = start + size + 2
                return False  # the bulk string (and its CRLF) is not all here yet
            args.append(data[start : start + size])
            self._pos = pos = start + size + 2  # the two bytes after it are not looked at
            self._left -= 1
        out.append(args)
        self._args = []
        return True
