"""Entries of a live Redis or Valkey server, for replays and exports: XRANGE pages through
redis-py, an extra (``pip install 'rstore[redis]'``) imported only when this source is used.
The only module of the replay package that may import redis-py (tests/test_quality.py).

Selection, order and bounds are those of :mod:`rstore.replay.sources`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rstore import RStoreError

from .envelope import ReplayEntry
from .sources import MAX_ID, MIN_ID, is_glob, select_streams

__all__ = ["URL_PAGE", "connect", "entries_from_url", "response_error", "shown_url"]

ID = tuple[int, int]
_UINT64_MAX = (1 << 64) - 1

#: Entries per XRANGE call on a server.
URL_PAGE = 1000


def shown_url(url: str) -> str:
    """``url`` without its user and password, for messages."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else url


def _parse_id(raw: bytes) -> ID:
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


def _server_streams(client: Any, streams: Sequence[bytes] | None) -> list[bytes]:
    """The stream names on the server that ``streams`` selects (SCAN ... TYPE stream for
    globs and for "all", TYPE for plain names)."""
    globs = [item for item in streams or () if is_glob(item)]
    plain = [item for item in streams or () if not is_glob(item)]
    found: set[bytes] = set()
    if globs or not streams:
        patterns: list[bytes | None] = [*globs] or [None]
        for pattern in patterns:
            found.update(client.scan_iter(match=pattern, count=1000, _type="stream"))
    found.update(item for item in plain if client.type(item) == b"stream")
    return select_streams(found, streams, where=" on the server")


def _next_id(entry_id: ID) -> ID | None:
    ms, seq = entry_id
    if seq < _UINT64_MAX:
        return ms, seq + 1
    return (ms + 1, 0) if ms < _UINT64_MAX else None


def _server_entries(
    client: Any, streams: Sequence[bytes] | None, start: ID, end: ID, page: int
) -> Iterator[ReplayEntry]:
    for key in _server_streams(client, streams):
        newest = client.execute_command("XREVRANGE", key, "+", "-", "COUNT", 1)
        if not newest:
            continue
        last = min(end, _parse_id(newest[0][0]))
        cursor: ID | None = start
        while cursor is not None and cursor <= last:
            reply = client.execute_command(
                "XRANGE", key, b"%d-%d" % cursor, b"%d-%d" % last, "COUNT", page
            )
            for raw_id, flat in reply:
                yield key, _parse_id(raw_id), list(flat)
            if len(reply) < page:
                break
            cursor = _next_id(_parse_id(reply[-1][0]))


def connect(url: str) -> tuple[Any, tuple[type[Exception], ...]]:
    """A redis-py client of ``url`` whose XRANGE/XREVRANGE give raw replies, and the
    exceptions its calls raise; :class:`rstore.RStoreError` without redis-py or for a URL
    redis-py cannot read."""
    try:
        import redis  # noqa: PLC0415 - an extra, loaded only for a server
    except ImportError:
        raise RStoreError(
            "reading from or writing to a server needs redis-py: pip install 'rstore[redis]'"
        ) from None
    try:
        client = redis.Redis.from_url(url)
        # the raw reply keeps repeated field names (redis-py's own parsing makes a dict)
        client.set_response_callback("XRANGE", lambda reply, **_: reply)
        client.set_response_callback("XREVRANGE", lambda reply, **_: reply)
    except ValueError as exc:
        raise RStoreError(f"{shown_url(url)}: {exc}") from None
    return client, (redis.RedisError, OSError)


def response_error() -> type[Exception]:
    """redis-py's class of a command the server refused (an error reply)."""
    import redis  # noqa: PLC0415 - an extra, loaded only for a server

    return redis.ResponseError


def entries_from_url(
    url: str,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    end: ID = MAX_ID,
    *,
    page: int = URL_PAGE,
) -> Iterator[ReplayEntry]:
    """The selected entries of a live Redis or Valkey server (``redis://``, ``rediss://`` or
    ``unix://`` URL, as redis-py reads it), through XRANGE pages of ``page`` entries.  Streams
    are found with SCAN ... TYPE stream (Redis 6.0 or later).  Needs redis-py (``pip install
    'rstore[redis]'``); a server error or a lost connection raises :class:`rstore.RStoreError`
    with the server's message and the URL without its password."""
    client, errors = connect(url)
    try:
        yield from _server_entries(client, streams, start, end, page)
    except errors as exc:
        raise RStoreError(f"{shown_url(url)}: {exc}") from None
    finally:
        client.close()
