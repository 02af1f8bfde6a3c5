"""redis-py's XINFO subcommands methods (the command: :mod:`rstore.commands.info`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    parse_list_of_dicts,
    parse_xinfo_stream,
)

__all__ = ["InfoCommands"]


class InfoCommands(ClientBase):
    """The XINFO subcommands methods, as redis-py 8.1's ``Redis`` has them."""

    def xinfo_stream(self, name: Any, full: bool = False) -> Any:
        """XINFO STREAM as a dict with ``str`` keys (``full=True`` for the FULL form)."""
        pieces: list[Any] = [b"XINFO", b"STREAM", name]
        options = {}
        if full:
            pieces.append(b"FULL")
            options = {"full": full}
        return self._command(pieces, parse_xinfo_stream, **options)

    def xinfo_groups(self, name: Any) -> Any:
        """One dict per group: name, consumers, pending, last-delivered-id, entries-read, lag."""
        return self._command([b"XINFO", b"GROUPS", name], parse_list_of_dicts)

    def xinfo_consumers(self, name: Any, groupname: Any) -> Any:
        """One dict per consumer: name, pending, idle, inactive."""
        return self._command([b"XINFO", b"CONSUMERS", name, groupname], parse_list_of_dicts)
