"""A replay's bookmark: a named record of how far a replay got -- per source stream the last
source ID delivered (or skipped as a conflict) -- which a rerun resumes from.  It is JSON
``{"stream": "ms-seq", ...}`` (stream names that are not UTF-8 kept through ``\\udcXX``
escapes).  Into a store it is recorded in the same transaction as the batch it covers
(:meth:`rstore.Store.append_entries`); for other sinks it is a small file rewritten atomically
after each write (see :mod:`rstore.replay.engine`).  Bookmarks were called checkpoints before;
what they write is unchanged, so those recorded before read the same (docs/replay.md)."""

from __future__ import annotations

import errno
import json
import os
import warnings
from typing import Any, cast

from rstore import RStoreError, atomic_file

from .sinks import Sink

__all__ = [
    "check_bookmark_file",
    "decode_position",
    "encode_position",
    "load_bookmark_file",
    "read_bookmark",
    "save_bookmark_file",
]

ID = tuple[int, int]


def encode_position(position: dict[bytes, ID]) -> bytes:
    items = {k.decode("utf-8", "surrogateescape"): f"{v[0]}-{v[1]}" for k, v in position.items()}
    return json.dumps(items, sort_keys=True).encode("ascii")


def decode_position(raw: bytes | None, where: str) -> dict[bytes, ID]:
    if not raw:
        return {}
    try:
        items = json.loads(raw)
        out = {}
        for k, v in items.items():
            ms, _, seq = v.partition("-")
            out[k.encode("utf-8", "surrogateescape")] = (int(ms), int(seq))
        return out
    except (ValueError, AttributeError) as exc:
        raise RStoreError(f"{where} is not a replay bookmark ({exc})") from None


def load_bookmark_file(path: str) -> dict[bytes, ID]:
    """The position a bookmark file holds (``{}`` when the file does not exist)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    return decode_position(raw, f"bookmark file {path}")


def read_bookmark(sink: Sink, name: str) -> dict[bytes, ID]:
    """The position recorded under bookmark ``name`` for ``sink``: in the sink's store when
    it is transactional, else in the file ``name`` (``{}`` when there is none yet)."""
    if sink.transactional:
        return decode_position(_recorded(sink, name), f"bookmark {name}")
    return load_bookmark_file(name)


def check_bookmark_file(path: str) -> None:
    """Before a replay writes anything: raise the ``OSError`` that writing the bookmark file
    ``path`` would raise after the first batch -- its directory missing or not writable, or a
    directory in its place (the CLI names the file and the reason as for any file it cannot
    write)."""
    where = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        code = errno.EISDIR
    elif not os.path.isdir(where):
        code = errno.ENOENT if not os.path.exists(where) else errno.ENOTDIR
    elif not os.access(where, os.W_OK):
        code = errno.EACCES
    else:
        return
    raise OSError(code, os.strerror(code), path)


def _recorded(sink: Sink, name: str) -> bytes | None:
    """A transactional sink's bookmark ``name``.  A sink written before the rename, with
    ``load_checkpoint`` instead of ``load_bookmark``, is still read, with a
    ``DeprecationWarning`` pointing at that method (where the user's code must change)."""
    if hasattr(sink, "load_bookmark") or not hasattr(sink, "load_checkpoint"):
        return sink.load_bookmark(name)
    legacy = cast(Any, sink).load_checkpoint
    message = (
        f"{type(sink).__qualname__}.load_checkpoint is deprecated: name the method "
        "load_bookmark (the same method)"
    )
    code = getattr(legacy, "__code__", None)
    if code is None:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
    else:
        module = getattr(type(sink), "__module__", "")
        warnings.warn_explicit(
            message, DeprecationWarning, code.co_filename, code.co_firstlineno, module
        )
    result: bytes | None = legacy(name)
    return result


def save_bookmark_file(path: str, value: bytes) -> None:
    """Write ``value`` to the file ``path`` atomically (:func:`rstore.atomic_file`)."""
    with atomic_file(path) as f:
        f.write(value)
