"""redis-py's XLEN, XRANGE, XREVRANGE, XREAD methods (the command: :mod:`rstore.commands.read`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    parse_stream_list,
    parse_xread,
)
from rstore.errors import DataError

__all__ = ["ReadCommands", "reply_caps"]


def reply_caps(
    command: str, count: int | None, max_count: int | None, max_size: int | None
) -> list[Any]:
    """The MAXCOUNT / MAXSIZE arguments of XREAD and XREADGROUP, checked as redis-py checks
    them (``command`` names the command in the messages)."""
    pieces: list[Any] = []
    if max_count is not None:
        if not isinstance(max_count, int) or max_count < 1:
            raise DataError(f"{command} max_count must be a positive integer")
        if count is not None and max_count < count:
            raise DataError(f"{command} max_count must be greater than or equal to count")
        pieces += [b"MAXCOUNT", str(max_count)]
    if max_size is not None:
        if not isinstance(max_size, int) or max_size < 1:
            raise DataError(f"{command} max_size must be a positive integer")
        pieces += [b"MAXSIZE", str(max_size)]
    return pieces


class ReadCommands(ClientBase):
    """XLEN, XRANGE, XREVRANGE, XREAD, as redis-py 8.1's ``Redis`` has them."""

    def xlen(self, name: Any) -> Any:
        """Number of entries in the stream (0 when it does not exist)."""
        return self._command([b"XLEN", name])

    def xrange(self, name: Any, min: Any = "-", max: Any = "+", count: int | None = None) -> Any:
        """Entries from ``min`` to ``max`` (inclusive; ``(`` for exclusive), ascending."""
        pieces: list[Any] = [min, max]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XRANGE count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        return self._command([b"XRANGE", name, *pieces], parse_stream_list)

    def xrevrange(self, name: Any, max: Any = "+", min: Any = "-", count: int | None = None) -> Any:
        """Entries from ``max`` down to ``min``, descending."""
        pieces: list[Any] = [max, min]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREVRANGE count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        return self._command([b"XREVRANGE", name, *pieces], parse_stream_list)

    def xread(
        self,
        streams: Mapping[Any, Any],
        count: int | None = None,
        block: int | None = None,
        max_count: int | None = None,
        max_size: int | None = None,
    ) -> Any:
        """Entries after the given IDs, ``[[key, [(id, fields), ...]], ...]``; ``[]`` when none.

        ``max_count`` and ``max_size`` (MAXCOUNT / MAXSIZE, Redis 8.10) are checked as redis-py
        checks them and sent; rstore answers them as Valkey 8.0 does (a syntax error).
        """
        pieces: list[Any] = []
        if block is not None:
            if not isinstance(block, int) or block < 0:
                raise DataError("XREAD block must be a non-negative integer")
            pieces += [b"BLOCK", str(block)]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREAD count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        pieces += reply_caps("XREAD", count, max_count, max_size)
        if not isinstance(streams, dict) or len(streams) == 0:
            raise DataError("XREAD streams must be a non empty dict")
        pieces.append(b"STREAMS")
        pieces.extend(streams.keys())
        pieces.extend(streams.values())
        return self._command([b"XREAD", *pieces], parse_xread)
