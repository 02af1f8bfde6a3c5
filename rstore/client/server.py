"""redis-py's PING, ECHO, CONFIG GET / SET methods (the command: :mod:`rstore.commands.server`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    bool_ok,
    parse_config_get,
)

__all__ = ["ServerCommands"]


class ServerCommands(ClientBase):
    """PING, ECHO, CONFIG GET / SET, as redis-py 8.1's ``Redis`` has them."""

    def ping(self) -> Any:
        return self._command([b"PING"], lambda r, **_: r == "PONG")

    def echo(self, value: Any) -> Any:
        return self._command([b"ECHO", value])

    def config_get(self, pattern: Any = "*", *args: Any) -> Any:
        """``{"stream-node-max-entries": "100", ...}`` for matching settings."""
        return self._command([b"CONFIG", b"GET", pattern, *args], parse_config_get)

    def config_set(self, name: Any, value: Any, *args: Any) -> Any:
        """Change ``stream-node-max-entries`` / ``stream-node-max-bytes`` (persisted); ``True``."""
        return self._command([b"CONFIG", b"SET", name, value, *args], bool_ok)
