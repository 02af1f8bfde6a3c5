"""Writing replies in RESP2 or RESP3.

Replies come from the command layer in rstore's internal form (``bytes`` bulk, ``str``
status, ``int``, ``None`` nil bulk, :data:`rstore.NIL_ARRAY` nil array, ``list`` array,
:class:`rstore.ResponseError` error) plus the RESP3-only shapes of this module: :class:`Map`,
:class:`Double`, :class:`Push` (and :class:`Verbatim`).  In RESP2 a :class:`Map` is a flat
array of keys and values, a :class:`Double` a bulk string, as Valkey sends them.

:func:`encoded` writes in C when ``_replies.c`` was built (``RSTORE_NO_SPEEDUPS=1`` turns it
off): the kinds nearly every reply is made of, in one pass, with no Python object per
element; :func:`encode_py`, the reference, writes everything else and is what a property test
compares it with.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from typing import Any

from rstore import NIL_ARRAY, ResponseError, RespReply

__all__ = ["Double", "Map", "Verbatim", "encode_py", "encoded", "error_line"]


class Map(list):  # type: ignore[type-arg]
    """A RESP3 map (``%``): a list of ``(key, value)`` pairs; in RESP2 a flat array."""


class Verbatim(bytes):
    """A RESP3 verbatim text (``=``, format ``txt``: INFO, CLIENT LIST); in RESP2 a bulk."""


class Double(float):
    """A RESP3 double (``,``); in RESP2 a bulk string of its text."""


def error_line(message: str | bytes) -> bytes:
    """``-<message>\\r\\n``, with CR and LF turned into blanks (Valkey's rule)."""
    raw = message.encode("utf-8", "surrogateescape") if isinstance(message, str) else message
    return b"-" + raw.replace(b"\r", b" ").replace(b"\n", b" ") + b"\r\n"


def _double_text(value: float) -> bytes:
    if math.isnan(value):
        return b"nan"
    if value in (float("inf"), float("-inf")):
        return b"inf" if value > 0 else b"-inf"
    text = repr(value)
    return (text[:-2] if text.endswith(".0") else text).encode()


def encode_py(reply: Any, proto: int, out: list[bytes]) -> None:
    """Append the RESP bytes of ``reply`` to ``out`` (joined by the caller): the reference
    writer, and the C writer's fallback for what it does not write itself."""
    kind = type(reply)
    if kind is bytes:
        out.append(b"$%d\r\n%s\r\n" % (len(reply), reply))
    elif kind is int:
        out.append(b":%d\r\n" % reply)
    elif kind is list:
        out.append(b"*%d\r\n" % len(reply))
        for item in reply:
            encode_py(item, proto, out)
    elif kind is str:
        out.append(b"+" + reply.encode("utf-8", "surrogateescape") + b"\r\n")
    elif reply is None:
        out.append(b"_\r\n" if proto == 3 else b"$-1\r\n")
    elif reply is NIL_ARRAY:
        out.append(b"_\r\n" if proto == 3 else b"*-1\r\n")
    elif kind is Map:
        if proto == 3:
            out.append(b"%%%d\r\n" % len(reply))
        else:
            out.append(b"*%d\r\n" % (2 * len(reply)))
        for key, value in reply:
            encode_py(key, proto, out)
            encode_py(value, proto, out)
    elif kind is Verbatim:
        if proto == 3:
            out.append(b"=%d\r\ntxt:%s\r\n" % (len(reply) + 4, reply))
        else:
            out.append(b"$%d\r\n%s\r\n" % (len(reply), reply))
    elif kind is Double:
        text = _double_text(reply)
        out.append(b",%s\r\n" % text if proto == 3 else b"$%d\r\n%s\r\n" % (len(text), text))
    elif isinstance(reply, ResponseError):
        out.append(error_line(reply.line if hasattr(reply, "line") else str(reply)))
    elif kind is bool:
        out.append(b":%d\r\n" % reply if proto == 2 else (b"#t\r\n" if reply else b"#f\r\n"))
    elif kind is RespReply:  # a part written as RESP already (the same in RESP2 and RESP3)
        out.append(reply)
    elif isinstance(reply, bytes | bytearray | memoryview):
        encode_py(bytes(reply), proto, out)
    else:
        raise TypeError(f"no RESP form for {kind.__name__}")


def _encoded_py(reply: Any, proto: int) -> bytes:
    out: list[bytes] = []
    encode_py(reply, proto, out)
    return b"".join(out)


#: the C writer (``encode(reply, proto) -> bytes``), or ``None`` (not built, or turned off)
c_encode: Callable[[Any, int], bytes] | None = None
if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    with contextlib.suppress(ImportError):
        from . import _replies  # type: ignore[attr-defined]

        _replies.setup(NIL_ARRAY, Map, _encoded_py)
        c_encode = _replies.encode


def encoded(reply: Any, proto: int) -> bytes:
    """The RESP bytes of ``reply`` (in C where it is built)."""
    return c_encode(reply, proto) if c_encode is not None else _encoded_py(reply, proto)
