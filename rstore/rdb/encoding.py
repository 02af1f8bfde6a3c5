"""RDB primitives, encoding side (pure functions).

Lengths (first byte's top two bits)::

    00LLLLLL                      0..63
    01LLLLLL LLLLLLLL             14 bits, big-endian, 64..16383
    10000000 <u32 BE>             up to 2**32-1
    10000001 <u64 BE>             anything else
    11EEEEEE                      a special string encoding E (where a string is expected)

Strings: raw (length + bytes); ``C0``/``C1``/``C2`` + int8/16/32 little-endian for short
canonical integers; ``C3`` + compressed length + original length + LZF data.  Redis picks the
integer form when the text is a canonical int32 of at most 11 bytes, else LZF when compression
is on, the string is over 20 bytes and LZF saves at least 4 bytes, else raw -- and so do we.
Millisecond times are 8-byte little-endian signed integers.
"""

from __future__ import annotations

import struct

from rstore.codec import lzf
from rstore.numbers import string2ll

__all__ = [
    "ENC_INT8",
    "ENC_INT16",
    "ENC_INT32",
    "ENC_LZF",
    "encode_id",
    "encode_length",
    "encode_ms",
    "encode_raw_id",
    "encode_string",
]

ENC_INT8 = 0
ENC_INT16 = 1
ENC_INT32 = 2
ENC_LZF = 3

_I64 = struct.Struct("<q")
_ID_BE = struct.Struct(">QQ")
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def encode_length(n: int) -> bytes:
    """The smallest length encoding of ``n`` (0 <= n < 2**64; negatives as their uint64)."""
    n &= (1 << 64) - 1
    if n < 64:
        return bytes((n,))
    if n < 16384:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def encode_string(s: bytes, *, compress: bool = True) -> bytes:
    """A string as Redis's generic string writer encodes it (``rdbSaveRawString``)."""
    n = len(s)
    if n <= 11 and n:
        v = string2ll(s)
        if v is not None and _INT32_MIN <= v <= _INT32_MAX:
            if -128 <= v <= 127:
                return bytes((0xC0 | ENC_INT8,)) + v.to_bytes(1, "little", signed=True)
            if -32768 <= v <= 32767:
                return bytes((0xC0 | ENC_INT16,)) + v.to_bytes(2, "little", signed=True)
            return bytes((0xC0 | ENC_INT32,)) + v.to_bytes(4, "little", signed=True)
    if compress and n > 20:
        packed = lzf.compress(s, n - 4)
        if packed is not None:
            return bytes((0xC0 | ENC_LZF,)) + encode_length(len(packed)) + encode_length(n) + packed
    return encode_length(n) + s


def encode_ms(ms: int) -> bytes:
    """A millisecond time: 8 bytes, little-endian, signed."""
    return _I64.pack(ms)


def encode_id(sid: tuple[int, int]) -> bytes:
    """A stream ID as two lengths (``ms``, ``seq``), as stream metadata stores it."""
    return encode_length(sid[0]) + encode_length(sid[1])


def encode_raw_id(sid: tuple[int, int]) -> bytes:
    """A stream ID as 16 raw big-endian bytes, as PEL entries and node keys store it."""
    return _ID_BE.pack(sid[0], sid[1])
