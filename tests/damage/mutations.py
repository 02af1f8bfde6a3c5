"""Damage to a copy of ``data.mdb``, replayable from ``(seed, case, kind)``.

Five kinds: ``truncate`` (to a random length, page-aligned half of the time), ``bitflip`` (1 to
8 random bits anywhere), ``zero-page``, ``random-page`` (a whole page of random bytes) and
``bytes`` (1 to 8 consecutive bytes overwritten inside a random page).  LMDB's page size is
4096 bytes on this platform; page numbers in descriptions are ``offset // 4096``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

PAGE = 4096
KINDS = ("truncate", "bitflip", "zero-page", "random-page", "bytes")


@dataclass(frozen=True)
class Mutation:
    """One damage: a new length, bits to flip, or bytes to write at an offset."""

    kind: str
    file_size: int
    truncate_to: int | None = None
    bits: tuple[int, ...] = ()
    offset: int = 0
    data: bytes = b""

    def apply(self, path: Path) -> None:
        """Damage the file at ``path`` in place."""
        if self.truncate_to is not None:
            os.truncate(path, self.truncate_to)
            return
        with open(path, "r+b") as f:
            for bit in self.bits:
                f.seek(bit // 8)
                byte = f.read(1)[0] ^ (1 << (bit % 8))
                f.seek(bit // 8)
                f.write(bytes([byte]))
            if self.data:
                f.seek(self.offset)
                f.write(self.data)

    def describe(self) -> str:
        pages = self.file_size // PAGE
        if self.truncate_to is not None:
            n = self.truncate_to
            return f"truncate {self.file_size} -> {n} bytes (page {n // PAGE} + {n % PAGE})"
        if self.bits:
            where = ", ".join(
                f"byte {b // 8} bit {b % 8} (page {b // 8 // PAGE})" for b in self.bits
            )
            return f"bitflip {where}"
        page, within = divmod(self.offset, PAGE)
        if self.kind in ("zero-page", "random-page"):
            last = self.offset + PAGE - 1
            return f"{self.kind} page {page} of {pages} (bytes {self.offset}..{last})"
        return f"bytes {self.data.hex()} at {self.offset} (page {page} + {within})"


def make(seed: int, case: int, kind: str, file_size: int) -> Mutation:
    """The mutation of ``case`` in the campaign of ``seed``; the same arguments give the same
    mutation on any machine."""
    rng = random.Random(f"{seed}:{case}:{kind}")
    pages = max(file_size // PAGE, 1)
    if kind == "truncate":
        if rng.random() < 0.5:
            size = rng.randrange(pages) * PAGE
        else:
            size = rng.randrange(file_size)
        return Mutation(kind, file_size, truncate_to=size)
    if kind == "bitflip":
        bits = tuple(sorted(rng.sample(range(file_size * 8), rng.randint(1, 8))))
        return Mutation(kind, file_size, bits=bits)
    page = rng.randrange(pages)
    if kind == "zero-page":
        return Mutation(kind, file_size, offset=page * PAGE, data=bytes(PAGE))
    if kind == "random-page":
        return Mutation(kind, file_size, offset=page * PAGE, data=rng.randbytes(PAGE))
    if kind == "bytes":
        length = rng.randint(1, 8)
        offset = page * PAGE + rng.randrange(PAGE - length + 1)
        return Mutation(kind, file_size, offset=offset, data=rng.randbytes(length))
    raise ValueError(f"unknown mutation kind {kind!r}; one of {', '.join(KINDS)}")


def kind_of_case(case: int, kinds: tuple[str, ...] = KINDS) -> str:
    """Campaign cases take the kinds in turn."""
    return kinds[case % len(kinds)]
