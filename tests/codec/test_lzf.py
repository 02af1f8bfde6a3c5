"""LZF as Redis uses it (docs/rdb.md#lzf): round trips, the pure port against the C
library (python-lzf) and against the compressed strings in files written by real servers,
Redis's budget rule, and damaged input refused with CorruptDataError."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from rstore.codec import lzf
from rstore.errors import CorruptDataError
from rstore.rdb.decoding import Source

from .strategies import READABLE_FAILURES

pytestmark = READABLE_FAILURES

try:
    import lzf as c_lzf
except ImportError:  # pragma: no cover - depends on the environment
    c_lzf = None

needs_c_lzf = pytest.mark.skipif(c_lzf is None, reason="python-lzf is not installed")
RDB_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdb"

# Inputs LZF treats differently: repetitive (long and overlapping back-references), text-like,
# incompressible.
compressible = st.builds(
    lambda alphabet, n, seed: bytes(random.Random(seed).choices(alphabet, k=n)),
    st.sampled_from([b"a", b"ab", b"abc ", b"the quick brown fox ", bytes(range(256))]),
    st.integers(0, 3000),
    st.integers(0, 2**32),
)
inputs = st.one_of(st.binary(max_size=600), compressible)


def roomy(n: int) -> int:
    """A budget every input fits in (worst case: one header byte per 32 literals)."""
    return n + n // 32 + 8


@given(inputs)
@example(b"a" * 300)  # a back-reference longer than 264 bytes is split
@example(b"ab" * 5000)  # references reaching back up to 8 KiB
@example(b"x")
def test_round_trip(data: bytes) -> None:
    packed = lzf.py_compress(data, roomy(len(data)))
    if not data:
        assert packed is None  # liblzf reports failure for empty input
        return
    assert packed is not None
    assert len(packed) <= roomy(len(data))
    assert lzf.py_decompress(packed, len(data)) == data
    assert lzf.decompress(packed, len(data)) == data
    accelerated = lzf.compress(data, roomy(len(data)))
    assert accelerated is not None
    assert lzf.py_decompress(accelerated, len(data)) == data


@needs_c_lzf
@given(inputs, st.integers(2, 4000))
@example(b"abcabcabcabcabcabcabcabc", 20)
def test_pure_port_is_byte_identical_to_liblzf(data: bytes, budget: int) -> None:
    """Same bytes and the same fits / does-not-fit decision at every budget.  (python-lzf hands
    liblzf one byte more than it is asked for; ``lzf.compress`` allows for that.)  Inputs of one
    or two bytes are left out: Redis never compresses strings under 21 bytes, and there the
    bundled liblzf of python-lzf differs in its last budget check."""
    assume(len(data) >= 3)
    assert c_lzf is not None
    assert lzf.py_compress(data, budget) == c_lzf.compress(data, budget - 1)


@needs_c_lzf
@given(inputs)
def test_pure_port_under_redis_budget(data: bytes) -> None:
    """Redis compresses a string of more than 20 bytes into at most ``len - 4`` bytes, else
    stores it raw: both implementations make the same call, with the same bytes."""
    assume(len(data) > 20)
    assert c_lzf is not None
    pure = lzf.py_compress(data, len(data) - 4)
    assert pure == c_lzf.compress(data, len(data) - 5)
    assert pure == lzf.compress(data, len(data) - 4)
    if pure is not None:
        assert len(pure) <= len(data) - 4


@given(inputs)
def test_budget_only_decides_success(data: bytes) -> None:
    """The output never depends on the budget, only whether it fits: liblzf's checks are
    conservative by at most 4 bytes (it reserves room for the largest token before writing)."""
    full = lzf.py_compress(data, roomy(len(data)))
    assume(full is not None)
    assert full is not None
    for budget in range(max(1, len(full) - 2), len(full) + 7):
        got = lzf.py_compress(data, budget)
        assert got is None or got == full
        if budget < len(full):
            assert got is None
        if budget >= len(full) + 4:
            assert got == full


def _server_lzf_strings() -> list[tuple[bytes, bytes]]:
    """(compressed, original) for every LZF-compressed node listpack in the fixture files that
    real servers wrote with ``rdbcompression yes``: a node key (``10`` + 16 bytes) followed by a
    ``C3`` string."""
    found = []
    for path in sorted(RDB_FIXTURES.glob("*.rdb")):
        data = path.read_bytes()
        at = data.find(b"\x10")
        while at != -1:
            start = at + 17
            if start < len(data) and data[start] == 0xC3:
                src = Source.from_bytes(data[start + 1 :])
                try:
                    clen = src.length()
                    ulen = src.length()
                    packed = src.read(clen)
                    original = lzf.py_decompress(packed, ulen)
                except CorruptDataError:
                    pass  # a 0x10 byte that was not a node key
                else:
                    found.append((packed, original))
            at = data.find(b"\x10", at + 1)
    return found


SERVER_STRINGS = _server_lzf_strings()


def test_server_compressed_strings_are_reproduced_exactly() -> None:
    """valkey 8.0 and redis 7.0 compressed these node listpacks; compressing what they hold
    again, under Redis's budget, gives the very same bytes (docs/rdb.md#the-compressor)."""
    assert len(SERVER_STRINGS) >= 20
    for packed, original in SERVER_STRINGS:
        assert lzf.py_compress(original, len(original) - 4) == packed
        assert lzf.compress(original, len(original) - 4) == packed


# --------------------------------------------------------------------------- damaged input

DAMAGED = [
    ("literal past the end", b"\x05abc", 6),
    ("reference before the start", b"\x00a\x20\x05", 4),
    ("missing offset byte", b"\x00a\x20", 4),
    ("missing length byte", b"\x00a\xe0", 12),
    ("output longer than declared", b"\x02abc", 2),
    ("output shorter than declared", b"\x02abc", 4),
    ("reference longer than declared", b"\x00a\x20\x00", 3),
]


@pytest.mark.parametrize(("data", "ulen"), [d[1:] for d in DAMAGED], ids=[d[0] for d in DAMAGED])
def test_damaged_input_is_refused(data: bytes, ulen: int) -> None:
    with pytest.raises(CorruptDataError, match="LZF"):
        lzf.py_decompress(data, ulen)
    with pytest.raises(CorruptDataError, match="LZF"):
        lzf.decompress(data, ulen)


def test_overlapping_reference_repeats() -> None:
    # "a", then copy 3 bytes from 1 back: "aaaa"
    assert lzf.py_decompress(b"\x00a\x20\x00", 4) == b"aaaa"
    assert lzf.decompress(b"\x00a\x20\x00", 4) == b"aaaa"


@settings(max_examples=300)
@given(st.binary(max_size=200), st.integers(0, 2000))
def test_arbitrary_bytes_decompress_or_raise(data: bytes, ulen: int) -> None:
    """Never another exception, never more or fewer bytes than declared; the pure port and the
    C library agree on what is valid."""
    try:
        pure: bytes | None = lzf.py_decompress(data, ulen)
    except CorruptDataError:
        pure = None
    if pure is not None:
        assert len(pure) == ulen
    try:
        fast: bytes | None = lzf.decompress(data, ulen)
    except CorruptDataError:
        fast = None
    if ulen > 0:
        assert fast == pure


@given(compressible, st.data())
def test_mutated_streams_decompress_or_raise(original: bytes, data: st.DataObject) -> None:
    packed = lzf.py_compress(original, roomy(len(original)))
    assume(packed is not None)
    assert packed is not None
    damaged = bytearray(packed)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(damaged) - 1))
        damaged[i] = data.draw(st.integers(0, 255))
    try:
        out = lzf.py_decompress(bytes(damaged), len(original))
    except CorruptDataError:
        return
    assert len(out) == len(original)
