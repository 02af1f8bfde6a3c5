"""redis-py's XSETID methods (the command: :mod:`rstore.commands.setid`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    bool_ok,
)

__all__ = ["SetidCommands"]


class SetidCommands(ClientBase):
    """XSETID, as redis-py 8.1's ``Redis`` has them."""

    def xsetid(
        self,
        name: Any,
        last_id: Any,
        entries_added: int | None = None,
        max_deleted_id: Any = None,
    ) -> Any:
        """XSETID (not in redis-py): set the stream's last ID and counters; ``True``."""
        pieces: list[Any] = [last_id]
        if entries_added is not None:
            pieces += [b"ENTRIESADDED", entries_added]
        if max_deleted_id is not None:
            pieces += [b"MAXDELETEDID", max_deleted_id]
        return self._command([b"XSETID", name, *pieces], bool_ok)
