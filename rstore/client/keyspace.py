"""redis-py's keyspace methods (the command: :mod:`rstore.commands.keyspace`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    bool_ok,
    parse_scan,
    status_reply,
)

__all__ = ["KeyspaceCommands"]


class KeyspaceCommands(ClientBase):
    """The keyspace methods, as redis-py 8.1's ``Redis`` has them."""

    def delete(self, *names: Any) -> Any:
        """Delete keys; the number removed."""
        return self._command([b"DEL", *names])

    def unlink(self, *names: Any) -> Any:
        return self._command([b"UNLINK", *names])

    def rename(self, src: Any, dst: Any) -> Any:
        """Rename key ``src`` to ``dst`` (an existing ``dst`` is replaced); ``True``."""
        return self._command([b"RENAME", src, dst], bool_ok)

    def renamenx(self, src: Any, dst: Any) -> Any:
        """Rename ``src`` to ``dst`` unless ``dst`` exists; whether it was renamed."""
        return self._command([b"RENAMENX", src, dst], bool)

    def exists(self, *names: Any) -> Any:
        """How many of ``names`` exist."""
        return self._command([b"EXISTS", *names])

    __contains__ = exists

    def type(self, name: Any) -> Any:
        """``b"stream"`` or ``b"none"`` (``str`` with ``decode_responses``)."""
        return self._command([b"TYPE", name], status_reply)

    def keys(self, pattern: Any = "*") -> Any:
        """Key names matching a glob pattern."""
        return self._command([b"KEYS", pattern])

    def scan(
        self,
        cursor: int = 0,
        match: Any = None,
        count: int | None = None,
        _type: str | None = None,
    ) -> Any:
        """One SCAN step: ``(next_cursor, [names])``; iterate until the cursor is 0."""
        pieces: list[Any] = [cursor]
        if match is not None:
            pieces += [b"MATCH", match]
        if count is not None:
            pieces += [b"COUNT", count]
        if _type is not None:
            pieces += [b"TYPE", _type]
        return self._command([b"SCAN", *pieces], parse_scan)

    def scan_iter(
        self, match: Any = None, count: int | None = None, _type: str | None = None
    ) -> Iterator[Any]:
        """Every key name (matching ``match``), through repeated SCAN calls."""
        cursor: Any = "0"
        while cursor != 0:
            cursor, data = self.scan(cursor=cursor, match=match, count=count, _type=_type)
            yield from data

    def dbsize(self) -> Any:
        return self._command([b"DBSIZE"])

    def flushall(self, asynchronous: bool = False) -> Any:
        """Delete every key; ``True``."""
        return self._command([b"FLUSHALL", *([b"ASYNC"] if asynchronous else [])], bool_ok)
