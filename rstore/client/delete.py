"""redis-py's XDEL methods (the command: :mod:`rstore.commands.delete`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase

__all__ = ["DeleteCommands"]


class DeleteCommands(ClientBase):
    """XDEL, as redis-py 8.1's ``Redis`` has them."""

    def xdel(self, name: Any, *ids: Any) -> Any:
        """Delete entries; the number actually deleted."""
        return self._command([b"XDEL", name, *ids])
