"""redis-py's XGROUP subcommands methods (the command: :mod:`rstore.commands.groups`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    bool_ok,
)

__all__ = ["GroupsCommands"]


class GroupsCommands(ClientBase):
    """The XGROUP subcommands methods, as redis-py 8.1's ``Redis`` has them."""

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
