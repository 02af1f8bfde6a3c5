"""Reading RDB primitives from a file or a buffer, with byte offsets and a running CRC64.

Every read goes through :class:`Source`, which knows how many bytes remain: a length that
claims more than that is reported as corrupt at its offset before anything is allocated, so a
damaged or hostile file can neither exhaust memory nor hang the reader.
"""

from __future__ import annotations

import io
import os
import struct
from typing import BinaryIO

from rstore.codec import lzf
from rstore.codec.crc64 import crc64
from rstore.errors import CorruptDataError, CorruptRDBError

__all__ = ["Source"]

_CHUNK = 1 << 20
_I64 = struct.Struct("<q")
_ID_BE = struct.Struct(">QQ")
# A single string in an RDB file never exceeds this (listpacks are capped at 4 GiB).
MAX_STRING = 1 << 32


class Source:
    """A forward-only reader over an RDB file or payload."""

    def __init__(self, f: BinaryIO, size: int | None = None, *, offset: int = 0) -> None:
        self._f = f
        if size is None:
            try:
                size = os.fstat(f.fileno()).st_size - f.tell()
            except (OSError, io.UnsupportedOperation):
                size = None
        self._size = size  # bytes available from the start, when known
        self._buf = b""
        self._pos = 0  # position inside _buf
        self._base = offset  # file offset of _buf[0]
        self._crc = 0
        self._crc_upto = 0  # bytes of _buf already folded into _crc
        self.key: bytes | None = None  # the key being read, for error messages
        # Where the last string read by string() lies in the input: its first byte (the length
        # prefix), and the first byte of its contents when they are stored as they are (None
        # for an integer or LZF encoding, whose bytes are not the string's).
        self.string_at = 0
        self.string_data_at: int | None = None

    @classmethod
    def from_bytes(cls, data: bytes) -> Source:
        return cls(io.BytesIO(data), len(data))

    # ------------------------------------------------------------------ position and CRC

    @property
    def offset(self) -> int:
        """File offset of the next byte to read."""
        return self._base + self._pos

    @property
    def size(self) -> int | None:
        """Bytes of input from the start, when known."""
        return self._size

    def remaining(self) -> int | None:
        return None if self._size is None else self._size - self.offset

    def crc(self) -> int:
        """CRC64 of every byte consumed so far."""
        self._fold()
        return self._crc

    def _fold(self) -> None:
        if self._crc_upto < self._pos:
            self._crc = crc64(self._buf[self._crc_upto : self._pos], self._crc)
            self._crc_upto = self._pos

    def buffered(self) -> tuple[bytes, int]:
        """The read buffer and the position of the next byte in it, for a reader in C that
        parses what is buffered and then :meth:`advance` s past it."""
        return self._buf, self._pos

    def advance(self, pos: int) -> None:
        """Move to ``pos`` inside the buffer :meth:`buffered` returned (forward only)."""
        if not self._pos <= pos <= len(self._buf):
            raise ValueError(f"cannot advance from {self._pos} to {pos}")
        self._pos = pos

    def corrupt(self, what: str, offset: int | None = None) -> CorruptRDBError:
        return CorruptRDBError(what, self.offset if offset is None else offset, self.key)

    # ------------------------------------------------------------------ raw reads

    def _fill(self, n: int) -> None:
        """Make sure ``n`` bytes are buffered after the position."""
        self._fold()
        rest = self._buf[self._pos :]
        self._base += self._pos
        self._buf, self._pos, self._crc_upto = rest, 0, 0
        while len(self._buf) < n:
            chunk = self._f.read(max(_CHUNK, n - len(self._buf)))
            if not chunk:
                raise self.corrupt(
                    f"unexpected end of data: {n - len(self._buf)} more bytes needed",
                    self._base + len(self._buf),
                )
            self._buf += chunk

    def read(self, n: int) -> bytes:
        if n > len(self._buf) - self._pos:
            self._check_room(n)
            self._fill(n)
        start = self._pos
        self._pos += n
        return self._buf[start : self._pos]

    def _check_room(self, n: int) -> None:
        remaining = self.remaining()
        if remaining is not None and n > remaining:
            raise self.corrupt(f"a length of {n} bytes runs past the end ({remaining} left)")

    def byte(self) -> int:
        if self._pos >= len(self._buf):
            self._fill(1)
        b = self._buf[self._pos]
        self._pos += 1
        return b

    def at_end(self) -> bool:
        if self._pos < len(self._buf):
            return False
        self._fold()
        chunk = self._f.read(_CHUNK)
        if not chunk:
            return True
        self._base += self._pos
        self._buf, self._pos, self._crc_upto = chunk, 0, 0
        return False

    # ------------------------------------------------------------------ primitives

    def length_or_encoding(self) -> tuple[int, bool]:
        """A length, or ``(E, True)`` for a special string encoding ``11EEEEEE``."""
        at = self.offset
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == 0x80:
            return int.from_bytes(self.read(4), "big"), False
        if b == 0x81:
            return int.from_bytes(self.read(8), "big"), False
        raise self.corrupt(f"unknown length encoding 0x{b:02x}", at)

    def length(self) -> int:
        at = self.offset
        n, special = self.length_or_encoding()
        if special:
            raise self.corrupt("a string encoding where a length was expected", at)
        return n

    def count(self, what: str, least: int) -> int:
        """A count of records (``what``: their name, plural) that each take at least ``least``
        bytes, refused at its offset when that many cannot fit in what is left of the input: a
        damaged count is reported as what it is, and never becomes a loop's bound."""
        at = self.offset
        n = self.length()
        remaining = self.remaining()
        if remaining is not None and n > remaining // least:
            raise self.corrupt(
                f"a count of {n} {what} runs past the end ({remaining} bytes left)", at
            )
        return n

    def string(self) -> bytes:
        """A string in any of its encodings (raw, integer, LZF); see :attr:`string_at`."""
        at = self.string_at = self.offset
        self.string_data_at = None
        n, special = self.length_or_encoding()
        if not special:
            if n > MAX_STRING:
                raise self.corrupt(f"string of {n} bytes is larger than any RDB string", at)
            self.string_data_at = self.offset
            return self.read(n)
        if n == 0:
            return b"%d" % int.from_bytes(self.read(1), "little", signed=True)
        if n == 1:
            return b"%d" % int.from_bytes(self.read(2), "little", signed=True)
        if n == 2:
            return b"%d" % int.from_bytes(self.read(4), "little", signed=True)
        if n == 3:
            clen = self.length()
            ulen = self.length()
            # LZF output is at most ~88 times its input (a 3-byte token makes 264 bytes), and
            # raw data grows by at most 1/32: anything else is damage, refused before the
            # declared size is allocated.
            if ulen > MAX_STRING or ulen > clen * 90 + 64 or clen > ulen + ulen // 32 + 16:
                raise self.corrupt(f"implausible LZF sizes: {clen} -> {ulen} bytes", at)
            packed = self.read(clen)
            try:
                return lzf.decompress(packed, ulen)
            except CorruptDataError as exc:
                raise self.corrupt(f"invalid LZF compressed string ({exc})", at) from exc
        raise self.corrupt(f"unknown string encoding {n}", at)

    def skip_string(self) -> int:
        """Skip a string without decoding it; the bytes it occupied."""
        at = self.offset
        n, special = self.length_or_encoding()
        if not special:
            self.skip(n)
        elif n in (0, 1, 2):
            self.skip((1, 2, 4)[n])
        elif n == 3:  # compressed length, original length, then the compressed bytes
            clen = self.length()
            self.length()
            self.skip(clen)
        else:
            raise self.corrupt(f"unknown string encoding {n}", at)
        return self.offset - at

    def skip(self, n: int) -> None:
        while n > 0:
            avail = len(self._buf) - self._pos
            if avail == 0:
                self._check_room(n)
                self._fill(min(n, _CHUNK))
                continue
            step = min(avail, n)
            self._pos += step
            n -= step

    def ms_time(self) -> int:
        return int(_I64.unpack(self.read(8))[0])

    def raw_id(self) -> tuple[int, int]:
        """16 raw bytes, big-endian ms then seq."""
        ms, seq = _ID_BE.unpack(self.read(16))
        return (ms, seq)

    def length_id(self) -> tuple[int, int]:
        """An ID stored as two lengths."""
        return (self.length(), self.length())
