"""Integer parsing with Redis's exact rules (pure, stdlib only).

Redis parses integers in two ways, and the difference is visible to users:

* ``string2ll`` -- strict canonical decimal: optional ``-``, no leading zeros (except ``0``
  itself), no ``+``, no spaces, at most 20 characters, inside the signed 64-bit range.  Used for
  every count/option argument and by listpacks to decide whether a string is stored as an integer.
* ``strtoull`` (C library, base 10) -- used as a fallback by stream ID parsing: leading white
  space, a ``+`` or ``-`` sign and leading zeros are accepted; a ``-`` sign wraps modulo 2**64.
"""

from __future__ import annotations

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1

_DIGITS = frozenset(b"0123456789")
_INT_START = frozenset(b"-0123456789")
_C_SPACE = b" \t\n\v\f\r"


def string2ll(s: bytes) -> int | None:
    """Parse ``s`` as a canonical signed 64-bit decimal, or return ``None``.

    ``b"0"``, ``b"-5"``, ``b"9223372036854775807"`` parse; ``b"007"``, ``b"-0"``, ``b"+1"``,
    ``b" 1"``, ``b""`` and ``b"9223372036854775808"`` do not.
    """
    if not s or len(s) > 20 or s[0] not in _INT_START:
        return None
    try:
        v = int(s)
    except ValueError:
        return None
    # int() also takes spaces, "+", "_" and leading zeros: only the canonical text round-trips.
    if b"%d" % v != s or v < INT64_MIN or v > INT64_MAX:
        return None
    return v


def as_signed64(v: int) -> int:
    """A uint64 as Redis replies with it through a ``long long`` (values >= 2**63 wrap)."""
    return v - (1 << 64) if v > INT64_MAX else v


def strtoull(s: bytes) -> int | None:
    """Emulate ``strtoull(s, &end, 10)`` requiring the whole, non-empty string to be consumed.

    Returns the unsigned 64-bit result (a ``-`` sign wraps modulo 2**64), or ``None`` when C
    would fail (no digits, trailing characters, overflow).
    """
    i = 0
    n = len(s)
    while i < n and s[i] in _C_SPACE:
        i += 1
    negative = False
    if i < n and s[i] in b"+-":
        negative = s[i] == 0x2D
        i += 1
    digits_start = i
    while i < n and s[i] in _DIGITS:
        i += 1
    if i == digits_start or i != n:
        return None
    v = int(s[digits_start:i])
    if v > UINT64_MAX:
        return None
    return (-v) & UINT64_MAX if negative else v


def string2ull(s: bytes) -> int | None:
    """Redis's ``string2ull``: strict parse first (negative -> invalid), else ``strtoull``."""
    v = string2ll(s)
    if v is not None:
        return v if v >= 0 else None
    return strtoull(s)


_MEMORY_UNITS = {
    "": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3,
    "gb": 1024**3,
}  # fmt: skip


def parse_size(text: str | bytes) -> int | None:
    """A size in bytes written as Redis's configuration writes memory (``maxmemory``): digits,
    then optionally a unit, any case -- ``b``; ``k``, ``m``, ``g`` (powers of 1000); ``kb``,
    ``mb``, ``gb`` (powers of 1024).  ``1G`` is 10**9, ``1gb`` 2**30; ``None`` when ``text``
    is not one, or is beyond 63 bits."""
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    digits = len(text) - len(text.lstrip("0123456789"))
    unit = _MEMORY_UNITS.get(text[digits:].lower())
    if not digits or unit is None:
        return None
    size = int(text[:digits]) * unit
    return size if size <= INT64_MAX else None
