"""CRC-64/Jones as Redis computes it (docs/rdb.md#crc-64): the standard check value, a
bit-by-bit reference written here from the definition, crcmod's pure-Python code, incremental
use, the trailers of files written by real servers, and rstore's C version against crcmod."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import crcmod
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rstore.codec.crc64 import crc64, py_crc64
from rstore.codec.speedups import c_crc64

from .strategies import READABLE_FAILURES

pytestmark = READABLE_FAILURES

RDB_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdb"
REFLECTED_POLY = 0x95AC9329AC4BC9B5  # 0xAD93D23594C935A9 with its bits reversed


def crc64_bitwise(data: bytes, crc: int = 0) -> int:
    """The definition, one bit at a time: reflected input and output, init 0, no final XOR."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ REFLECTED_POLY if crc & 1 else crc >> 1
    return crc


# crcmod's table-driven pure-Python implementation (whatever the C extension does)
_crcmod_py = crcmod.Crc(0x1AD93D23594C935A9, initCrc=0, rev=True, xorOut=0)


def crc64_crcmod_py(data: bytes) -> int:
    c = _crcmod_py.new()
    c.update(data)
    return int(c.crcValue)


def test_check_value() -> None:
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert crc64_bitwise(b"123456789") == 0xE9C6D914C4B8D9CA


def test_empty_input_and_initial_value() -> None:
    assert crc64(b"") == 0
    assert crc64(b"", 0x1234) == 0x1234


@given(st.binary(max_size=600))
def test_agrees_with_the_definition_and_crcmod(data: bytes) -> None:
    expected = crc64_bitwise(data)
    assert crc64(data) == expected
    assert crc64_crcmod_py(data) == expected


@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=6))
def test_incremental_equals_one_shot(data: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    crc = 0
    for start, end in itertools.pairwise(points):
        crc = crc64(data[start:end], crc)
    assert crc == crc64(data)


@given(st.binary(max_size=200))
def test_accepts_every_bytes_like_type(data: bytes) -> None:
    assert crc64(bytearray(data)) == crc64(memoryview(data)) == crc64(data)


@pytest.mark.parametrize("path", sorted(RDB_FIXTURES.glob("*.rdb")), ids=lambda p: p.name)
def test_trailer_of_server_written_files(path: Path) -> None:
    """valkey-server and redis-server end every RDB file with the little-endian CRC64 of all the
    bytes before it."""
    data = path.read_bytes()
    (stored,) = struct.unpack("<Q", data[-8:])
    assert stored != 0
    assert crc64(data[:-8]) == stored


# rstore's C version (rstore/codec/_crc64.c, slicing-by-8) against crcmod, the reference: on
# random bytes, at every alignment, across the 8-byte steps, and fed in random pieces.
needs_c = pytest.mark.skipif(c_crc64 is None, reason="the C accelerator is not built")


@needs_c
@given(st.binary(max_size=3000), st.integers(0, 7), st.integers(0, 2**64 - 1))
def test_c_version_agrees_with_crcmod(data: bytes, skip: int, crc: int) -> None:
    assert c_crc64 is not None
    view = memoryview(data)[min(skip, len(data)) :]  # every start alignment
    assert c_crc64(view, crc) == py_crc64(view, crc)


@needs_c
@given(st.binary(max_size=5000), st.lists(st.integers(0, 5000), max_size=12))
def test_c_version_fed_in_pieces(data: bytes, cuts: list[int]) -> None:
    assert c_crc64 is not None
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    crc = 0
    for start, end in itertools.pairwise(points):
        crc = c_crc64(data[start:end], crc)
    assert crc == py_crc64(data)


@needs_c
def test_c_version_on_large_inputs() -> None:
    """Inputs of 64 KiB and more are checksummed with the GIL released: same answer."""
    data = bytes(range(256)) * 1100 + b"tail"
    assert c_crc64 is not None
    assert c_crc64(data) == py_crc64(data)
    assert c_crc64(data[3:], 12345) == py_crc64(data[3:], 12345)
