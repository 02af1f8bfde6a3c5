"""Turning command-line arguments into command arguments (``bytes``).

By default an argument is passed byte for byte: the bytes the shell gave the process, including
bytes that are not UTF-8 (Python hands those over as surrogate escapes, and
:func:`os.fsencode` restores them).  A NUL byte cannot travel in a command line at all, so
commands that take names or values accept ``--unescape``: each argument is then read with the
escapes redis-cli understands inside double quotes (:func:`unescape`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

import click

import rstore

from .format import token

__all__ = ["after_id", "parse_fields", "range_bound", "split_line", "to_bytes", "unescape"]

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


_SPACE = frozenset(b" \t\n\r\v\f")


def split_line(line: bytes) -> list[bytes]:
    """A command line typed at ``rstore exec``'s prompt, split into arguments as redis-cli
    splits its lines: words separated by white space; ``"..."`` with the escapes of
    :func:`unescape`; ``'...'`` taken literally but for ``\\'``; a quoted part may follow
    other characters of its word (``a"b c"`` is ``ab c``) but must end the word.

    Raises :class:`ValueError` for an unterminated quote or a closing quote followed by more of
    the word (redis-cli says ``Invalid argument(s)``)."""
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return args
        word = bytearray()
        while i < n and line[i] not in _SPACE:
            quote = line[i]
            if quote not in (0x22, 0x27):  # not " or '
                word.append(quote)
                i += 1
                continue
            i += 1
            while True:
                if i >= n:
                    raise ValueError("unterminated quote")
                c = line[i]
                if c == quote:
                    i += 1
                    if i < n and line[i] not in _SPACE:
                        raise ValueError("a closing quote must end the argument")
                    break
                if c == 0x5C and quote == 0x27 and i + 1 < n and line[i + 1] == 0x27:
                    word.append(0x27)
                    i += 2
                elif c == 0x5C and quote == 0x22 and i + 1 < n:
                    length = 4 if line[i + 1 : i + 2] == b"x" and _hex2(line[i + 2 : i + 4]) else 2
                    word += unescape(line[i : i + length])
                    i += length
                else:
                    word.append(c)
                    i += 1
            if i >= n or line[i] in _SPACE:
                break
        args.append(bytes(word))


def _hex2(pair: bytes) -> bool:
    return len(pair) == 2 and all(chr(b) in _HEX for b in pair)


def to_bytes(value: str, unescaped: bool = False, param: str | None = None) -> bytes:
    """One command-line argument as the bytes to send (see the module docstring)."""
    raw = os.fsencode(value)
    if not unescaped:
        return raw
    try:
        return unescape(raw)
    except ValueError as exc:
        raise click.BadParameter(f"{value}: {exc}", param_hint=param) from None


def _read_value(source: str, stdin_used: list[bool]) -> bytes:
    """The bytes of the file ``source`` names (``-``: stdin, once per command)."""
    if source == "-":
        if stdin_used:
            raise click.BadParameter(
                "only one value can be read from stdin (@-)", param_hint="FIELD=VALUE"
            )
        stdin_used.append(True)
        return sys.stdin.buffer.read()
    try:
        with open(os.fsencode(source), "rb") as f:
            return f.read()
    except OSError as exc:
        shown = os.fsencode(source).decode("utf-8", "backslashreplace")
        raise click.ClickException(
            f"cannot read @{shown}: {exc.strerror or exc} (a value that starts with @ is "
            f"written @@)"
        ) from None


def parse_fields(
    pairs: Iterable[str], unescaped: bool = False, *, files: bool = False
) -> list[bytes]:
    """``FIELD=VALUE`` arguments as a flat ``[field, value, ...]`` list.

    Each argument is split at its first ``=`` before any unescaping, so with ``--unescape`` a
    field name may hold ``=`` written as ``\\x3d``.  The value may contain ``=`` freely.

    With ``files``, a value ``@PATH`` is the bytes of the file at PATH (taken as it is, never
    unescaped), ``@-`` those of stdin (once), and ``@@...`` the literal value ``@...``: the
    check is made on the argument as given, before unescaping, so with ``--unescape`` a value
    written ``\\x40...`` is literal too.
    """
    flat: list[bytes] = []
    stdin_used: list[bool] = []
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(
                f"{token(os.fsencode(pair))} is not FIELD=VALUE (to store an empty value "
                f"write {token(os.fsencode(pair + '='))})",
                param_hint="FIELD=VALUE",
            )
        flat.append(to_bytes(field, unescaped, "FIELD=VALUE"))
        if files and value.startswith("@") and not value.startswith("@@"):
            flat.append(_read_value(value[1:], stdin_used))
        else:
            literal = value[1:] if files and value.startswith("@@") else value
            flat.append(to_bytes(literal, unescaped, "FIELD=VALUE"))
    return flat


#: What a range bound may be, for the usage error of one that is neither an ID nor a time.
BOUND_FORMS = (
    "give an ID (1700000000000-0, 1700000000000, - or +; (ID to exclude it), a date and time "
    "(2026-11-01, 2026-11-01T10:00, local time unless followed by Z or an offset such as "
    "+01:00) or a time ago (90s, 15m, 1h30m, 7d)"
)
# What XRANGE reads as an ID, whether or not it accepts the value: such text keeps its answer.
_ID_SHAPED = re.compile(rb"\(?(?:[-+]|[0-9]+(?:-[0-9]+)?)\Z").match


def range_bound(text: str, *, is_end: bool, param: str) -> bytes:
    """A range bound -- an ID in XRANGE's grammar (``-``, ``+``, ``MS``, ``MS-SEQ``, ``(ID``)
    or a time (``2026-11-01T10:00``, ``1h``, also after ``(``) -- as the inclusive ID
    ``ms-seq`` it stands for, the same for every command that takes a bound.

    Text that is neither an ID nor a time, or a date that does not exist, is a usage error
    saying what is accepted (:data:`BOUND_FORMS`); text shaped like an ID that XRANGE refuses
    all the same (``(18446744073709551615-18446744073709551615``, a number past 64 bits) gets
    XRANGE's error (:class:`rstore.ResponseError`)."""
    try:
        return str(rstore.parse_range_bound(os.fsencode(text), is_end=is_end)).encode()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from None
    except rstore.ResponseError:
        if _ID_SHAPED(os.fsencode(text)):
            raise
        shown = token(os.fsencode(text))
        hint = f"'{param}'" if param.startswith("-") else param  # quoted as click quotes options
        raise click.BadParameter(
            f"{shown} is neither an ID nor a time: {BOUND_FORMS}", param_hint=hint
        ) from None


def after_id(text: str, *, param: str) -> bytes:
    """A position a command reads *after* (XREAD and XREADGROUP IDs, a group's last-delivered
    ID): passed on as given for the command to read (``$``, ``>``, ``0``, ``MS-SEQ``...),
    except a time, which stands for its Unix time in ms (``1h`` is ``<now - 1 hour>``)."""
    raw = os.fsencode(text)
    try:
        ms = rstore.parse_time_ms(raw)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from None
    return raw if ms is None else str(ms).encode()
