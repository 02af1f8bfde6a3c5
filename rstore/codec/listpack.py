"""Redis listpacks: byte-identical encoding, decoding and validation (pure functions).

A listpack is one contiguous byte string::

    +-------------+--------------+-----------+-----------+-----+------+
    | total_bytes | num_elements | element 1 | element 2 | ... | 0xFF |
    |  uint32 LE  |  uint16 LE   |           |           |     | EOF  |
    +-------------+--------------+-----------+-----------+-----+------+

``num_elements`` saturates: at 65535 it means "unknown, count by walking".

Each element is ``encoding [+ payload] + backlen``; ``backlen`` holds the size ``L`` of the
encoding and payload so the list can be walked right to left.  The first byte decides::

    0xxxxxxx                 7-bit unsigned int            0..127
    10LLLLLL <L bytes>       string, length < 64
    110xxxxx yyyyyyyy        13-bit signed int (high 5 bits first)
    1110LLLL LLLLLLLL <...>  string, length < 4096 (high 4 bits first)
    11110000 <u32 LE> <...>  string, any length
    11110001 <int16 LE>      11110010 <int24 LE>
    11110011 <int32 LE>      11110100 <int64 LE>
    11111111                 end of listpack (no backlen)

``backlen`` stores ``L`` in 7-bit groups, most significant group first in memory; every byte but
the first has bit 7 set.  Redis uses a strict ``<`` at 16383, 2097151 and 268435455, so those
exact sizes take one byte more than they need -- reproduced here.

Strings that are canonical signed 64-bit decimals (``string2ll``) are stored as integers; reading
them back yields the same text, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from rstore.errors import CorruptDataError
from rstore.numbers import string2ll

__all__ = [
    "EOF",
    "HEADER_SIZE",
    "INT_TEXT",
    "NUMELE_UNKNOWN",
    "backlen_size",
    "build",
    "decode",
    "element_text",
    "encode_backlen",
    "encode_int",
    "encode_string",
    "encode_value",
    "first_element",
    "iter_elements",
    "next_element",
    "prev_element",
    "read_element",
    "read_int",
    "skip_element",
    "validate",
    "value_size",
]

HEADER_SIZE = 6
EOF = 0xFF
NUMELE_UNKNOWN = 65535
EMPTY = b"\x07\x00\x00\x00\x00\x00\xff"

#: The text of the integers 0 to 127, as elements give it (a small integer's text, made once).
INT_TEXT = tuple(b"%d" % i for i in range(128))
_STR6_HEAD = tuple(bytes((0x80 | n,)) for n in range(64))
_BACKLEN1 = tuple(bytes((n,)) for n in range(128))
_NUMERIC_START = frozenset(b"-0123456789")


def backlen_size(size: int) -> int:
    """How many bytes Redis uses for the backlen of an element of ``size`` bytes."""
    if size <= 127:
        return 1
    if size < 16383:
        return 2
    if size < 2097151:
        return 3
    if size < 268435455:
        return 4
    return 5


def encode_backlen(size: int) -> bytes:
    """The backlen bytes for an element whose encoding+payload is ``size`` bytes."""
    if size <= 127:
        return bytes((size,))
    if size < 16383:
        return bytes((size >> 7, (size & 127) | 128))
    if size < 2097151:
        return bytes((size >> 14, ((size >> 7) & 127) | 128, (size & 127) | 128))
    if size < 268435455:
        return bytes(
            (size >> 21, ((size >> 14) & 127) | 128, ((size >> 7) & 127) | 128, (size & 127) | 128)
        )
    return bytes(
        (
            (size >> 28) & 0xFF,
            ((size >> 21) & 127) | 128,
            ((size >> 14) & 127) | 128,
            ((size >> 7) & 127) | 128,
            (size & 127) | 128,
        )
    )


def encode_int(v: int) -> bytes:
    """A whole integer element (encoding + payload + backlen) in Redis's smallest form."""
    if 0 <= v <= 127:
        return bytes((v, 1))
    if -4096 <= v <= 4095:
        u = v & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF, 2))
    if -32768 <= v <= 32767:
        return b"\xf1" + v.to_bytes(2, "little", signed=True) + b"\x03"
    if -8388608 <= v <= 8388607:
        return b"\xf2" + v.to_bytes(3, "little", signed=True) + b"\x04"
    if -2147483648 <= v <= 2147483647:
        return b"\xf3" + v.to_bytes(4, "little", signed=True) + b"\x05"
    return b"\xf4" + v.to_bytes(8, "little", signed=True) + b"\x09"


def encode_string(s: bytes) -> bytes:
    """A whole string element, always with a string encoding (no integer test)."""
    n = len(s)
    if n < 64:
        return bytes((0x80 | n,)) + s + encode_backlen(n + 1)
    if n < 4096:
        return bytes((0xE0 | (n >> 8), n & 0xFF)) + s + encode_backlen(n + 2)
    return b"\xf0" + n.to_bytes(4, "little") + s + encode_backlen(n + 5)


def encode_value(s: bytes) -> bytes:
    """A whole element for ``s`` as Redis's ``lpAppend`` writes it: an integer when ``s`` is a
    canonical int64 decimal, else a string."""
    n = len(s)
    if n and s[0] in _NUMERIC_START:
        v = string2ll(s)
        if v is not None:
            return encode_int(v)
    if n < 64:
        return _STR6_HEAD[n] + s + _BACKLEN1[n + 1]
    return encode_string(s)


def value_size(s: bytes) -> int:
    """The encoded size (with backlen) of ``encode_value(s)`` without building it."""
    if s and len(s) <= 20 and s[0] in _NUMERIC_START:
        v = string2ll(s)
        if v is not None:
            if 0 <= v <= 127:
                return 2
            if -4096 <= v <= 4095:
                return 3
            if -32768 <= v <= 32767:
                return 4
            if -8388608 <= v <= 8388607:
                return 5
            if -2147483648 <= v <= 2147483647:
                return 6
            return 10
    n = len(s)
    size = n + (1 if n < 64 else 2 if n < 4096 else 5)
    return size + backlen_size(size)


def build(elements: Iterable[bytes], count: int | None = None) -> bytes:
    """Assemble a listpack from already-encoded elements.

    ``count`` is the number of elements (computed when omitted); the header stores it saturated
    at 65535 as Redis does.
    """
    if count is None:
        elements = list(elements)
        count = len(elements)
    body = b"".join(elements)
    total = HEADER_SIZE + len(body) + 1
    return (
        total.to_bytes(4, "little")
        + min(count, NUMELE_UNKNOWN).to_bytes(2, "little")
        + body
        + b"\xff"
    )


# --------------------------------------------------------------------------- decoding


def _corrupt(what: str, offset: int) -> CorruptDataError:
    return CorruptDataError(f"corrupt listpack: {what}", offset)


def read_element(buf: bytes | bytearray, p: int) -> tuple[int | bytes, int]:
    """Decode the element at offset ``p``: ``(value, offset of the next element)``.

    ``value`` is an ``int`` for integer encodings and ``bytes`` for strings.  The caller must
    not pass the EOF offset.  Bounds are checked only as far as Python slicing does; use
    :func:`validate` first on untrusted input.
    """
    b = buf[p]
    if b < 0x80:
        return b, p + 2
    if b < 0xC0:
        n = b & 0x3F
        end = p + 1 + n
        return bytes(buf[p + 1 : end]), end + 1
    if b < 0xE0:
        u = ((b & 0x1F) << 8) | buf[p + 1]
        return (u - 8192 if u >= 4096 else u), p + 3
    if b < 0xF0:
        n = ((b & 0x0F) << 8) | buf[p + 1]
        end = p + 2 + n
        return bytes(buf[p + 2 : end]), end + (1 if n + 2 <= 127 else 2)
    if b == 0xF0:
        n = int.from_bytes(buf[p + 1 : p + 5], "little")
        end = p + 5 + n
        return bytes(buf[p + 5 : end]), end + backlen_size(n + 5)
    if b == 0xF1:
        return int.from_bytes(buf[p + 1 : p + 3], "little", signed=True), p + 4
    if b == 0xF2:
        return int.from_bytes(buf[p + 1 : p + 4], "little", signed=True), p + 5
    if b == 0xF3:
        return int.from_bytes(buf[p + 1 : p + 5], "little", signed=True), p + 6
    if b == 0xF4:
        return int.from_bytes(buf[p + 1 : p + 9], "little", signed=True), p + 10
    raise _corrupt(f"invalid encoding byte 0x{b:02x}", p)


def read_int(buf: bytes | bytearray, p: int) -> tuple[int, int]:
    """Decode an element that must be an integer (stream counters, flags, deltas).

    Redis's ``lpGetInteger`` also accepts a string holding a decimal integer; so do we.
    """
    v, nxt = read_element(buf, p)
    if isinstance(v, int):
        return v, nxt
    parsed = string2ll(v)
    if parsed is None:
        raise _corrupt("expected an integer element", p)
    return parsed, nxt


def element_text(v: int | bytes) -> bytes:
    """The bytes a client sees for a decoded element (integers as decimal text)."""
    if isinstance(v, int):
        return INT_TEXT[v] if 0 <= v < 128 else b"%d" % v
    return v


def _encoded_size(buf: bytes | bytearray, p: int) -> int:
    """Size of encoding+payload of the element at ``p`` (without backlen)."""
    b = buf[p]
    if b < 0x80:
        return 1
    if b < 0xC0:
        return 1 + (b & 0x3F)
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 2 + (((b & 0x0F) << 8) | buf[p + 1])
    if b == 0xF0:
        return 5 + int.from_bytes(buf[p + 1 : p + 5], "little")
    if b == 0xF1:
        return 3
    if b == 0xF2:
        return 4
    if b == 0xF3:
        return 5
    if b == 0xF4:
        return 9
    raise _corrupt(f"invalid encoding byte 0x{b:02x}", p)


def skip_element(buf: bytes | bytearray, p: int) -> int:
    """Offset of the element after the one at ``p``."""
    size = _encoded_size(buf, p)
    return p + size + backlen_size(size)


next_element = skip_element


def first_element(buf: bytes | bytearray) -> int | None:
    """Offset of the first element, or ``None`` for an empty listpack."""
    return None if buf[HEADER_SIZE] == EOF else HEADER_SIZE


def prev_element(buf: bytes | bytearray, p: int) -> int | None:
    """Offset of the element before offset ``p`` (which may be the EOF byte), or ``None``."""
    if p <= HEADER_SIZE:
        return None
    q = p - 1
    size = buf[q] & 127
    shift = 7
    count = 1
    while buf[q] & 128:
        q -= 1
        count += 1
        if count > 5 or q < HEADER_SIZE:
            raise _corrupt("backlen runs past the start", q)
        size |= (buf[q] & 127) << shift
        shift += 7
    start = p - size - count
    if start < HEADER_SIZE:
        raise _corrupt("backlen points before the start", p)
    return start


def iter_elements(buf: bytes | bytearray) -> Iterator[int | bytes]:
    """Yield every element value in order (ints as ``int``, strings as ``bytes``)."""
    p = HEADER_SIZE
    end = len(buf) - 1
    while p < end:
        v, p = read_element(buf, p)
        yield v


def decode(buf: bytes | bytearray) -> list[int | bytes]:
    """All element values of a (validated) listpack."""
    return list(iter_elements(buf))


# --------------------------------------------------------------------------- validation


def validate(buf: bytes | bytearray, *, deep: bool = False) -> int:
    """Check a listpack the way Redis's ``lpValidateIntegrity`` does; return its element count.

    Shallow (always): at least 7 bytes, ``total_bytes`` equals the buffer length, last byte is
    EOF.  Deep: walk every element -- a known encoding, fully inside the buffer, a backlen that
    decodes to exactly the element's size -- ending exactly on the EOF byte, and a header count
    equal to the real count unless it is the 65535 "unknown" value.  Non-minimal encodings are
    accepted, as in Redis.  Raises :class:`CorruptDataError` naming the offset.
    """
    n = len(buf)
    if n < 7:
        raise _corrupt(f"{n} bytes is shorter than the 7-byte minimum", 0)
    total = int.from_bytes(buf[0:4], "little")
    if total != n:
        raise _corrupt(f"header says {total} bytes but the buffer holds {n}", 0)
    if buf[n - 1] != EOF:
        raise _corrupt("last byte is not the 0xFF terminator", n - 1)
    header_count = buf[4] | (buf[5] << 8)
    if not deep:
        return header_count
    p = HEADER_SIZE
    count = 0
    while p < n - 1:
        b = buf[p]
        if b == EOF:
            raise _corrupt("EOF byte before the end", p)
        if b >= 0xF0 and b not in (0xF0, 0xF1, 0xF2, 0xF3, 0xF4):
            raise _corrupt(f"invalid encoding byte 0x{b:02x}", p)
        if b >= 0xC0 and p + 1 >= n - 1 and b != 0xF0:
            raise _corrupt("element header runs past the end", p)
        if b == 0xF0 and p + 5 > n - 1:
            raise _corrupt("element header runs past the end", p)
        size = _encoded_size(buf, p)
        bl = backlen_size(size)
        nxt = p + size + bl
        if nxt > n - 1:
            raise _corrupt("element runs past the end", p)
        # The backlen must decode (right to left) to exactly `size`.
        if prev_element(buf, nxt) != p:
            raise _corrupt("backlen does not match the element size", p + size)
        count += 1
        p = nxt
    if header_count not in (NUMELE_UNKNOWN, count):
        raise _corrupt(f"header counts {header_count} elements but there are {count}", 4)
    return count


def build_values(values: Sequence[bytes]) -> bytes:
    """A listpack of ``values`` encoded with the integer-vs-string rule (handy for tests)."""
    return build([encode_value(v) for v in values], len(values))
