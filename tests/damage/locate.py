"""Find the bytes of a planted value in ``data.mdb`` and damage exactly those.

The one place of the campaign that assumes anything about the format: that a planted 64-bit
number is stored as 8 bytes, big- or little-endian, and a planted byte string as itself.  Every
occurrence is damaged (LMDB may keep stale copies in free pages; damaging them too costs
nothing).  When a future format stores them otherwise, :class:`NotFound` says so and the named
tests fail loudly rather than pass without damaging anything.
"""

from __future__ import annotations

from pathlib import Path

from .mutations import PAGE


class NotFound(AssertionError):
    pass


def occurrences(data: bytes, needle: bytes) -> list[int]:
    found: list[int] = []
    at = data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def _require(path: Path, needle: bytes, what: str) -> list[int]:
    found = occurrences(path.read_bytes(), needle)
    if not found:
        raise NotFound(f"{what} ({needle.hex()}) is not in {path}: update tests/damage/locate.py")
    return found


def flip_in_number(path: Path, value: int, bit: int = 1) -> list[int]:
    """Flip ``bit`` of the least significant byte of every stored copy of ``value`` (as a
    64-bit integer, either byte order): the number changes by a little and stays plausible."""
    data = path.read_bytes()
    offsets = [at + 7 for at in occurrences(data, value.to_bytes(8, "big"))]
    offsets += occurrences(data, value.to_bytes(8, "little"))
    if not offsets:
        raise NotFound(f"the number {value:#x} is not in {path}: update tests/damage/locate.py")
    _flip(path, offsets, bit)
    return offsets


def flip_in_bytes(path: Path, needle: bytes, index: int, bit: int = 0) -> list[int]:
    """Flip ``bit`` of byte ``index`` of every stored copy of ``needle``."""
    offsets = [at + index for at in _require(path, needle, "the planted bytes")]
    _flip(path, offsets, bit)
    return offsets


def zero_pages_holding(path: Path, needle: bytes) -> list[int]:
    """Zero every page that holds a copy of ``needle`` (or its first byte); the page numbers."""
    pages = sorted({at // PAGE for at in _require(path, needle, "the planted bytes")})
    with open(path, "r+b") as f:
        for page in pages:
            f.seek(page * PAGE)
            f.write(bytes(PAGE))
    return pages


def _flip(path: Path, offsets: list[int], bit: int) -> None:
    with open(path, "r+b") as f:
        for at in offsets:
            f.seek(at)
            byte = f.read(1)[0] ^ (1 << bit)
            f.seek(at)
            f.write(bytes([byte]))
