"""redis-py-compatible consumer-group methods (mixed into :class:`rstore.client.RedisCommands`).

Names, arguments, client-side checks and reply shapes follow redis-py 8.1's ``Redis`` over RESP2
(see :mod:`rstore.client`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rstore.client_shapes import (
    bool_ok,
    parse_list_of_dicts,
    parse_xautoclaim,
    parse_xclaim,
    parse_xpending,
    parse_xread,
)
from rstore.errors import DataError

__all__ = ["GroupCommands", "reply_caps"]


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


class GroupCommands:
    """Consumer-group methods; subclasses provide ``_command``."""

    _command: Callable[..., Any]

    def xgroup_create(
        self,
        name: Any,
        groupname: Any,
        id: Any = "$",
        mkstream: bool = False,
        entries_read: int | None = None,
    ) -> Any:
        """Create a group reading from ``id`` (``"$"``: only new entries); ``True``."""
        pieces: list[Any] = [b"XGROUP", b"CREATE", name, groupname, id]
        if mkstream:
            pieces.append(b"MKSTREAM")
        if entries_read is not None:
            pieces += [b"ENTRIESREAD", entries_read]
        return self._command(pieces, bool_ok)

    def xgroup_setid(
        self, name: Any, groupname: Any, id: Any, entries_read: int | None = None
    ) -> Any:
        """Move the group's last delivered ID; ``True``."""
        pieces: list[Any] = [b"XGROUP", b"SETID", name, groupname, id]
        if entries_read is not None:
            pieces += [b"ENTRIESREAD", entries_read]
        return self._command(pieces, bool_ok)

    def xgroup_destroy(self, name: Any, groupname: Any) -> Any:
        """Remove a group; ``True`` when it existed."""
        return self._command([b"XGROUP", b"DESTROY", name, groupname], lambda r, **_: bool(r))

    def xgroup_createconsumer(self, name: Any, groupname: Any, consumername: Any) -> Any:
        """Create a consumer; 1 when created, 0 when it existed."""
        return self._command([b"XGROUP", b"CREATECONSUMER", name, groupname, consumername])

    def xgroup_delconsumer(self, name: Any, groupname: Any, consumername: Any) -> Any:
        """Delete a consumer; the number of pending entries it had (now no longer pending)."""
        return self._command([b"XGROUP", b"DELCONSUMER", name, groupname, consumername])

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

    def xack(self, name: Any, groupname: Any, *ids: Any) -> Any:
        """Acknowledge entries; the number that were pending."""
        return self._command([b"XACK", name, groupname, *ids])

    def xpending(self, name: Any, groupname: Any) -> Any:
        """``{"pending": n, "min": id, "max": id, "consumers": [{"name", "pending"}...]}``."""
        return self._command([b"XPENDING", name, groupname], parse_xpending)

    def xpending_range(
        self,
        name: Any,
        groupname: Any,
        min: Any,
        max: Any,
        count: int,
        consumername: Any = None,
        idle: int | None = None,
    ) -> Any:
        """Pending entries from ``min`` to ``max``: a list of dicts with ``message_id``,
        ``consumer``, ``time_since_delivered`` and ``times_delivered``."""
        if {min, max, count} == {None}:
            if idle is not None or consumername is not None:
                raise DataError(
                    "if XPENDING is provided with idle time or consumername, it must be "
                    "provided with min, max and count parameters"
                )
            return self.xpending(name, groupname)
        if min is None or max is None or count is None:
            raise DataError(
                "XPENDING must be provided with min, max and count parameters, or none of them."
            )
        pieces: list[Any] = [b"XPENDING", name, groupname]
        if idle is not None:
            if int(idle) < 0:
                raise DataError("XPENDING idle must be a integer >= 0")
            pieces += [b"IDLE", idle]
        if int(count) < 0:
            raise DataError("XPENDING count must be a integer >= 0")
        pieces += [min, max, count]
        if consumername:
            pieces.append(consumername)
        return self._command(pieces, parse_xpending, parse_detail=True)

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

    def xinfo_groups(self, name: Any) -> Any:
        """One dict per group: name, consumers, pending, last-delivered-id, entries-read, lag."""
        return self._command([b"XINFO", b"GROUPS", name], parse_list_of_dicts)

    def xinfo_consumers(self, name: Any, groupname: Any) -> Any:
        """One dict per consumer: name, pending, idle, inactive."""
        return self._command([b"XINFO", b"CONSUMERS", name, groupname], parse_list_of_dicts)
