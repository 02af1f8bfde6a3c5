"""redis-py's XACK, XNACK, XPENDING methods (the command: :mod:`rstore.commands.pending`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    parse_xpending,
)
from rstore.errors import DataError

__all__ = ["PendingCommands"]


class PendingCommands(ClientBase):
    """XACK, XPENDING, as redis-py 8.1's ``Redis`` has them."""

    def xack(self, name: Any, groupname: Any, *ids: Any) -> Any:
        """Acknowledge entries; the number that were pending."""
        return self._command([b"XACK", name, groupname, *ids])

    def xnack(
        self,
        name: Any,
        groupname: Any,
        mode: str,
        *ids: Any,
        retrycount: int | None = None,
        force: bool = False,
    ) -> Any:
        """Give pending entries back to the group (Redis 8.8): they lose their owner and the
        next claim of any minimum idle time (XREADGROUP CLAIM first) takes them.  ``mode``:
        ``SILENT`` (the delivery count goes down by one), ``FAIL`` (kept) or ``FATAL`` (set to
        its maximum); ``retrycount`` sets it instead; ``force`` also releases entries of the
        stream that are not pending.  Returns how many were released."""
        if not ids:
            raise DataError("XNACK requires at least one message ID")
        if mode not in {"SILENT", "FAIL", "FATAL"}:
            raise DataError("XNACK mode must be one of: SILENT, FAIL, FATAL")
        pieces: list[Any] = [b"XNACK", name, groupname, mode, b"IDS", len(ids), *ids]
        if retrycount is not None:
            if retrycount < 0:
                raise DataError("XNACK retrycount must be >= 0")
            pieces += [b"RETRYCOUNT", retrycount]
        if force:
            pieces.append(b"FORCE")
        return self._command(pieces)

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
