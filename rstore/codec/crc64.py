"""CRC-64/Jones as Redis uses it (``crc64.c``): the RDB trailer, DUMP payloads, key hashing.

Width 64, polynomial 0xAD93D23594C935A9 (reflected 0x95AC9329AC4BC9B5), input and output
reflected, initial value 0, no final XOR.  ``crc64(b"123456789") == 0xE9C6D914C4B8D9CA``.
Computed by rstore's C extension (``_crc64.c``, slicing-by-8) when it is built; else by
crcmod (its C extension when built, its pure-Python table code otherwise), which is also the
reference the C version is tested against (:func:`py_crc64`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from rstore.codec.speedups import c_crc64

__all__ = ["crc64", "py_crc64"]


@functools.cache
def _crc() -> Callable[[bytes, int], int]:
    """crcmod's CRC64 function (made on first use: with the C CRC64, never -- crcmod is not
    loaded at start-up)."""
    import crcmod  # noqa: PLC0415

    fn: Callable[[bytes, int], int] = crcmod.mkCrcFun(
        0x1AD93D23594C935A9, initCrc=0, rev=True, xorOut=0
    )
    return fn


def py_crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC64 of ``data`` by crcmod, continuing from ``crc`` (the reference)."""
    return _crc()(bytes(data), crc)


def crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC64 of ``data``, continuing from ``crc`` (so ``crc64(a + b) == crc64(b, crc64(a))``)."""
    if c_crc64 is not None:
        return c_crc64(data, crc)
    return _crc()(bytes(data), crc)
