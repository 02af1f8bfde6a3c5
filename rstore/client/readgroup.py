"""redis-py's XREADGROUP methods (the command: :mod:`rstore.commands.readgroup`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rstore.client.base import ClientBase
from rstore.client.read import reply_caps
from rstore.client.shapes import (
    parse_xread,
)
from rstore.errors import DataError

__all__ = ["ReadgroupCommands"]


class ReadgroupCommands(ClientBase):
    """XREADGROUP, as redis-py 8.1's ``Redis`` has them."""

    def xreadgroup(
        self,
        groupname: Any,
        consumername: Any,
        streams: Mapping[Any, Any],
        count: int | None = None,
        block: int | None = None,
        noack: bool = False,
        claim_min_idle_time: int | None = None,
        max_count: int | None = None,
        max_size: int | None = None,
    ) -> Any:
        """Read as ``consumername``: ``">"`` for new entries, an ID for its pending history.

        ``block`` waits up to that many ms (0: forever) for entries written by any thread or
        process.  Returns ``[[key, [(id, fields), ...]], ...]``, or ``[]`` when nothing came.
        ``claim_min_idle_time`` (CLAIM, Redis 8.4), ``max_count`` and ``max_size`` (MAXCOUNT /
        MAXSIZE, Redis 8.10) are checked as redis-py checks them and sent; rstore answers them as
        Valkey 8.0 does (a syntax error).
        """
        options: dict[str, Any] = {}
        pieces: list[Any] = [b"GROUP", groupname, consumername]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREADGROUP count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        pieces += reply_caps("XREADGROUP", count, max_count, max_size)
        if block is not None:
            if not isinstance(block, int) or block < 0:
                raise DataError("XREADGROUP block must be a non-negative integer")
            pieces += [b"BLOCK", str(block)]
        if noack:
            pieces.append(b"NOACK")
        if claim_min_idle_time is not None:
            if not isinstance(claim_min_idle_time, int) or claim_min_idle_time < 0:
                raise DataError("XREADGROUP claim_min_idle_time must be a non-negative integer")
            pieces += [b"CLAIM", claim_min_idle_time]
            options["claim_min_idle_time"] = claim_min_idle_time
        if not isinstance(streams, dict) or len(streams) == 0:
            raise DataError("XREADGROUP streams must be a non empty dict")
        pieces.append(b"STREAMS")
        pieces.extend(streams.keys())
        pieces.extend(streams.values())
        return self._command([b"XREADGROUP", *pieces], parse_xread, **options)
