"""Argument helpers shared by the command parsers.

Redis compares option keywords with ``strcasecmp`` on C strings, so a keyword argument ends at
its first NUL byte (``b"COUNT\\0x"`` is ``COUNT``); integers are parsed length-aware with
``string2ll``.  Both behaviours are reproduced here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rstore import ids, messages
from rstore.codec.speedups import c_encode_args as _c_encode_args
from rstore.codec.speedups import c_parse_ids as _c_parse_ids
from rstore.errors import DataError, ResponseError
from rstore.numbers import string2ll

__all__ = ["cstr", "encode_arg", "encode_argv", "is_kw", "keyword", "parse_ids", "parse_int"]

ArgT = bytes | bytearray | memoryview | str | int | float


def cstr(arg: bytes) -> bytes:
    """``arg`` as C sees it: up to the first NUL byte."""
    nul = arg.find(b"\0")
    return arg if nul < 0 else arg[:nul]


def keyword(arg: bytes) -> bytes:
    """The lower-cased C-string form of ``arg``, for case-insensitive keyword matching."""
    return cstr(arg).lower()


def is_kw(arg: bytes, word: bytes) -> bool:
    """``strcasecmp(arg, word) == 0`` (``word`` in lower case)."""
    return len(arg) >= len(word) and keyword(arg) == word


def parse_int(arg: bytes, message: str = messages.NOT_INTEGER) -> int:
    """A signed 64-bit integer argument, or the given error (Redis ``getLongLongFromObject``)."""
    v = string2ll(arg)
    if v is None:
        raise ResponseError(message)
    return v


def encode_argv(argv: Sequence[Any]) -> list[bytes]:
    """:func:`encode_arg` over a whole argv, with bytes and str handled inline (hot path; in
    C when the accelerator is built and ``argv`` is a list of str and bytes)."""
    if _c_encode_args is not None:
        out = _c_encode_args(argv)
        if out is not None:
            return out
    return [
        a if type(a) is bytes else a.encode() if type(a) is str else encode_arg(a) for a in argv
    ]


def parse_ids(args: list[bytes]) -> list[ids.ID]:
    """:func:`rstore.ids.parse_ids` (XACK's and XDEL's IDs), in C when every one is a plain
    ``<ms>-<seq>`` and the accelerator is built."""
    if _c_parse_ids is not None:
        out = _c_parse_ids(args)
        if out is not None:
            return out
    return ids.parse_ids(args)


def encode_arg(value: object) -> bytes:
    """Turn one command argument into bytes the way redis-py's encoder does.

    bytes and memoryviews pass through, ``str`` is UTF-8 encoded, ``int`` and ``float`` use
    ``repr``; anything else (``None``, ``bool``, containers) is a :class:`DataError`.
    """
    t = type(value)
    if t is bytes:
        return value  # type: ignore[return-value]
    if t is str:
        return value.encode("utf-8")  # type: ignore[attr-defined,no-any-return]
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, bool):
        raise DataError(
            "Invalid input of type: 'bool'. Convert to a bytes, string, int or float first."
        )
    if isinstance(value, int | float):
        return repr(value).encode()
    raise DataError(
        f"Invalid input of type: '{type(value).__name__}'. "
        "Convert to a bytes, string, int or float first."
    )
