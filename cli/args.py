"""Turning command-line arguments into command arguments (``bytes``).

By default an argument is passed byte for byte: the bytes the shell gave the process, including
bytes that are not UTF-8 (Python hands those over as surrogate escapes, and
:func:`os.fsencode` restores them).  A NUL byte cannot travel in a command line at all, so
commands that take names or values accept ``--unescape``: each argument is then read with the
escapes redis-cli understands inside double quotes (:func:`unescape`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import click

__all__ = ["parse_fields", "to_bytes", "unescape"]

_SIMPLE = {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a"}
_HEX = frozenset("0123456789abcdefABCDEF")


def unescape(raw: bytes) -> bytes:
    """Interpret ``\\xHH``, ``\\n``, ``\\r``, ``\\t``, ``\\b``, ``\\a`` and ``\\<c>`` (``c``
    itself, so ``\\\\`` and ``\\"``), as redis-cli does in a double-quoted argument.

    A trailing lone backslash is refused with :class:`ValueError`.
    """
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        byte = raw[i]
        if byte != 0x5C:  # not a backslash
            out.append(byte)
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError("a trailing backslash escapes nothing (write \\\\ for a backslash)")
        nxt = chr(raw[i + 1])
        if nxt == "x" and i + 3 < n and {chr(raw[i + 2]), chr(raw[i + 3])} <= _HEX:
            out.append(int(raw[i + 2 : i + 4], 16))
            i += 4
        elif nxt in _SIMPLE:
            out += _SIMPLE[nxt]
            i += 2
        else:
            out.append(raw[i + 1])
            i += 2
    return bytes(out)


def to_bytes(value: str, unescaped: bool = False, param: str | None = None) -> bytes:
    """One command-line argument as the bytes to send (see the module docstring)."""
    raw = os.fsencode(value)
    if not unescaped:
        return raw
    try:
        return unescape(raw)
    except ValueError as exc:
        raise click.BadParameter(f"{value}: {exc}", param_hint=param) from None


def parse_fields(pairs: Iterable[str], unescaped: bool = False) -> list[bytes]:
    """``FIELD=VALUE`` arguments as a flat ``[field, value, ...]`` list.

    Each argument is split at its first ``=`` before any unescaping, so with ``--unescape`` a
    field name may hold ``=`` written as ``\\x3d``.  The value may contain ``=`` freely.
    """
    flat: list[bytes] = []
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(
                f"{pair!r} is not FIELD=VALUE (to store an empty value write {pair}=)",
                param_hint="FIELD=VALUE",
            )
        flat.append(to_bytes(field, unescaped, "FIELD=VALUE"))
        flat.append(to_bytes(value, unescaped, "FIELD=VALUE"))
    return flat
