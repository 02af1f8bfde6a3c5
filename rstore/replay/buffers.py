"""The little-endian buffers of :class:`rstore.Columns` read back as Python values."""

from __future__ import annotations

from array import array
from itertools import pairwise
from sys import byteorder

__all__ = ["int32_array", "int32s", "int64s", "little", "strings"]


def int32_array(buf: bytes | bytearray) -> array[int]:
    """A buffer of little-endian int32 as an array (native order)."""
    values = array("i")
    values.frombytes(buf)
    if byteorder == "big":
        values.byteswap()
    return values


def int32s(buf: bytes | bytearray) -> list[int]:
    """A buffer of little-endian int32 as a list."""
    return int32_array(buf).tolist()


def int64s(buf: bytes | bytearray) -> list[int]:
    """A buffer of little-endian int64 as a list."""
    values = array("q")
    values.frombytes(buf)
    if byteorder == "big":
        values.byteswap()
    return values.tolist()


def little(values: array[int]) -> bytes:
    """An array's items as little-endian bytes."""
    if byteorder == "big":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def strings(offsets: bytes | bytearray, data: bytes | bytearray) -> list[bytes]:
    """The strings of an offsets buffer (``n + 1`` int32) over ``data``."""
    whole = bytes(data)
    return [whole[a:b] for a, b in pairwise(int32s(offsets))]
