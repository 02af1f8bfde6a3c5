"""redis-py-compatible methods, shared by :class:`rstore.Store` and its pipelines.

Each method builds the command's argv exactly as redis-py 8.1's ``Redis`` does (same names,
same argument names and defaults, same client-side ``DataError`` checks) and shapes the reply as
redis-py does over RESP2, with or without ``decode_responses``: ``xrange`` gives ``[(id,
{field: value}), ...]``, ``xread`` gives ``[[key, [(id, {...}), ...]], ...]``, ``xinfo_stream``
a dict with ``str`` keys, and so on (:mod:`rstore.client_shapes`).  The commands themselves run
through the same dispatcher as :meth:`rstore.Store.execute`, so replies and errors are identical
on every front.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rstore.client_groups import GroupCommands, reply_caps
from rstore.client_shapes import (
    NEVER_DECODE,
    bool_ok,
    parse_config_get,
    parse_scan,
    parse_stream_list,
    parse_xinfo_stream,
    parse_xread,
    status_reply,
)
from rstore.errors import DataError

__all__ = ["RedisCommands"]

Callback = Callable[..., Any] | None

# ----------------------------------------------------------------------------- methods


class RedisCommands(GroupCommands):
    """The redis-py method surface; subclasses provide :meth:`_command`."""

    def _command(self, argv: list[Any], callback: Callback = None, **options: Any) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------------ streams

    def xadd(
        self,
        name: Any,
        fields: Mapping[Any, Any],
        id: Any = "*",
        maxlen: int | None = None,
        approximate: bool = True,
        nomkstream: bool = False,
        minid: Any = None,
        limit: int | None = None,
    ) -> Any:
        """Append an entry; returns its ID (``bytes``), or ``None`` with ``nomkstream`` on a
        missing stream."""
        pieces: list[Any] = []
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ```maxlen``` or ```minid``` may be specified")
        if nomkstream:
            pieces.append(b"NOMKSTREAM")
        if maxlen is not None:
            if not isinstance(maxlen, int) or maxlen < 0:
                raise DataError("XADD maxlen must be non-negative integer")
            pieces.append(b"MAXLEN")
            if approximate:
                pieces.append(b"~")
            pieces.append(str(maxlen))
        if minid is not None:
            pieces.append(b"MINID")
            if approximate:
                pieces.append(b"~")
            pieces.append(minid)
        if limit is not None:
            pieces.extend([b"LIMIT", limit])
        pieces.append(id)
        if not isinstance(fields, dict) or len(fields) == 0:
            raise DataError("XADD fields must be a non-empty dict")
        for pair in fields.items():
            pieces.extend(pair)
        return self._command([b"XADD", name, *pieces])

    def xlen(self, name: Any) -> Any:
        """Number of entries in the stream (0 when it does not exist)."""
        return self._command([b"XLEN", name])

    def xrange(self, name: Any, min: Any = "-", max: Any = "+", count: int | None = None) -> Any:
        """Entries from ``min`` to ``max`` (inclusive; ``(`` for exclusive), ascending."""
        pieces: list[Any] = [min, max]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XRANGE count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        return self._command([b"XRANGE", name, *pieces], parse_stream_list)

    def xrevrange(self, name: Any, max: Any = "+", min: Any = "-", count: int | None = None) -> Any:
        """Entries from ``max`` down to ``min``, descending."""
        pieces: list[Any] = [max, min]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREVRANGE count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        return self._command([b"XREVRANGE", name, *pieces], parse_stream_list)

    def xread(
        self,
        streams: Mapping[Any, Any],
        count: int | None = None,
        block: int | None = None,
        max_count: int | None = None,
        max_size: int | None = None,
    ) -> Any:
        """Entries after the given IDs, ``[[key, [(id, fields), ...]], ...]``; ``[]`` when none.

        ``max_count`` and ``max_size`` (MAXCOUNT / MAXSIZE, Redis 8.10) are checked as redis-py
        checks them and sent; rstore answers them as Valkey 8.0 does (a syntax error).
        """
        pieces: list[Any] = []
        if block is not None:
            if not isinstance(block, int) or block < 0:
                raise DataError("XREAD block must be a non-negative integer")
            pieces += [b"BLOCK", str(block)]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREAD count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        pieces += reply_caps("XREAD", count, max_count, max_size)
        if not isinstance(streams, dict) or len(streams) == 0:
            raise DataError("XREAD streams must be a non empty dict")
        pieces.append(b"STREAMS")
        pieces.extend(streams.keys())
        pieces.extend(streams.values())
        return self._command([b"XREAD", *pieces], parse_xread)

    def xdel(self, name: Any, *ids: Any) -> Any:
        """Delete entries; the number actually deleted."""
        return self._command([b"XDEL", name, *ids])

    def xtrim(
        self,
        name: Any,
        maxlen: int | None = None,
        approximate: bool = True,
        minid: Any = None,
        limit: int | None = None,
    ) -> Any:
        """Trim by ``maxlen`` or ``minid``; the number of entries removed."""
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ``maxlen`` or ``minid`` may be specified")
        if maxlen is None and minid is None:
            raise DataError("One of ``maxlen`` or ``minid`` must be specified")
        pieces: list[Any] = [b"MAXLEN" if maxlen is not None else b"MINID"]
        if approximate:
            pieces.append(b"~")
        pieces.append(maxlen if maxlen is not None else minid)
        if limit is not None:
            pieces += [b"LIMIT", limit]
        return self._command([b"XTRIM", name, *pieces])

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

    def xinfo_stream(self, name: Any, full: bool = False) -> Any:
        """XINFO STREAM as a dict with ``str`` keys (``full=True`` for the FULL form)."""
        pieces: list[Any] = [b"XINFO", b"STREAM", name]
        options = {}
        if full:
            pieces.append(b"FULL")
            options = {"full": full}
        return self._command(pieces, parse_xinfo_stream, **options)

    # ------------------------------------------------------------------ keyspace

    def dump(self, name: Any) -> Any:
        """The key's value as a DUMP payload (``bytes``, even with ``decode_responses``), or
        ``None`` when it does not exist."""
        return self._command([b"DUMP", name], None, **{NEVER_DECODE: True})

    def restore(
        self,
        name: Any,
        ttl: int,
        value: bytes,
        replace: bool = False,
        absttl: bool = False,
        idletime: int | None = None,
        frequency: int | None = None,
    ) -> Any:
        """Create ``name`` from a DUMP payload (from rstore, Redis or Valkey); ``b"OK"`` (``"OK"``
        with ``decode_responses``).

        rstore keys never expire, so ``ttl`` must be 0.
        """
        params: list[Any] = [name, ttl, value]
        if replace:
            params.append(b"REPLACE")
        if absttl:
            params.append(b"ABSTTL")
        if idletime is not None:
            params.append(b"IDLETIME")
            try:
                params.append(int(idletime))
            except ValueError as exc:
                raise DataError("idletimemust be an integer") from exc
        if frequency is not None:
            params.append(b"FREQ")
            try:
                params.append(int(frequency))
            except ValueError as exc:
                raise DataError("frequency must be an integer") from exc
        return self._command([b"RESTORE", *params], status_reply)

    def delete(self, *names: Any) -> Any:
        """Delete keys; the number removed."""
        return self._command([b"DEL", *names])

    def unlink(self, *names: Any) -> Any:
        return self._command([b"UNLINK", *names])

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
