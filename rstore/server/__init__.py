"""``rstore serve``: a RESP2/RESP3 server over a store, for every Redis client and tool.

An outer layer, like the CLI: it uses rstore's public API only (:meth:`rstore.Store.execute_many`
runs the commands, so their semantics live once).  See ``docs/server.md``.
"""

from __future__ import annotations

from .config import ServerConfig
from .server import Server

__all__ = ["Server", "ServerConfig"]
