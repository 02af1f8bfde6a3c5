"""redis-py's XCLAIM, XAUTOCLAIM methods (the command: :mod:`rstore.commands.claim`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    parse_xautoclaim,
    parse_xclaim,
)
from rstore.errors import DataError

__all__ = ["ClaimCommands"]


class ClaimCommands(ClientBase):
    """XCLAIM, XAUTOCLAIM, as redis-py 8.1's ``Redis`` has them."""

    def xclaim(
        self,
        name: Any,
        groupname: Any,
        consumername: Any,
        min_idle_time: int,
        message_ids: Sequence[Any],
        idle: int | None = None,
        time: int | None = None,
        retrycount: int | None = None,
        force: bool = False,
        justid: bool = False,
    ) -> Any:
        """Take over pending entries idle at least ``min_idle_time`` ms; the claimed entries
        (``[(id, fields), ...]``, or IDs with ``justid``)."""
        if not isinstance(min_idle_time, int) or min_idle_time < 0:
            raise DataError("XCLAIM min_idle_time must be a non negative integer")
        if not isinstance(message_ids, list | tuple) or not message_ids:
            raise DataError(
                "XCLAIM message_ids must be a non empty list or tuple of message IDs to claim"
            )
        options: dict[str, Any] = {}
        pieces: list[Any] = [b"XCLAIM", name, groupname, consumername, str(min_idle_time)]
        pieces.extend(message_ids)
        for option, value in ((b"IDLE", idle), (b"TIME", time), (b"RETRYCOUNT", retrycount)):
            if value is not None:
                if not isinstance(value, int):
                    raise DataError(f"XCLAIM {option.decode().lower()} must be an integer")
                pieces += [option, str(value)]
        if force:
            pieces.append(b"FORCE")
        if justid:
            pieces.append(b"JUSTID")
            options["parse_justid"] = True
        return self._command(pieces, parse_xclaim, **options)

    def xautoclaim(
        self,
        name: Any,
        groupname: Any,
        consumername: Any,
        min_idle_time: int,
        start_id: Any = "0-0",
        count: int | None = None,
        justid: bool = False,
    ) -> Any:
        """Claim idle pending entries scanning from ``start_id``:
        ``[next_cursor, [(id, fields), ...], [deleted ids]]`` (only the IDs with ``justid``)."""
        if int(min_idle_time) < 0:
            raise DataError("XAUTOCLAIM min_idle_time must be a nonnegative integer")
        options: dict[str, Any] = {}
        pieces: list[Any] = [b"XAUTOCLAIM", name, groupname, consumername, min_idle_time, start_id]
        if count is not None:
            if int(count) < 0:
                raise DataError("XPENDING count must be a integer >= 0")
            pieces += [b"COUNT", count]
        if justid:
            pieces.append(b"JUSTID")
            options["parse_justid"] = True
        return self._command(pieces, parse_xautoclaim, **options)
