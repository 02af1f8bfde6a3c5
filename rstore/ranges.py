"""Reading a long range of a stream page by page, in bounded memory: :func:`iter_range`.

``Store.xrange`` returns the whole range at once; a stream of millions of entries, or of a few
entries of hundreds of megabytes, does not fit that.  :func:`iter_range` asks for one page at a
time and sizes the pages by bytes as well as by entries: it starts with one entry, grows the
page while the entries are small (up to ``max_page`` entries), and keeps about ``page_bytes``
of entries per page, so memory holds one page -- a single entry when the entries are huge.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

from rstore.ids import StreamID, decrement, format_id, increment, parse_range_bound

if TYPE_CHECKING:
    from rstore.store import Store

__all__ = ["DEFAULT_MAX_PAGE", "DEFAULT_PAGE_BYTES", "RawEntry", "iter_range", "iter_range_pages"]

#: One entry as XRANGE replies it: ``(id, [field, value, field, value, ...])``.  Fields stay a
#: flat list, in stored order, because an entry may hold the same field twice.
RawEntry = tuple[bytes, list[bytes]]

DEFAULT_MAX_PAGE = 1000
DEFAULT_PAGE_BYTES = 4 << 20


def iter_range(
    store: Store,
    key: bytes | str,
    start: bytes | str = "-",
    end: bytes | str = "+",
    *,
    count: int | None = None,
    reverse: bool = False,
    max_page: int = DEFAULT_MAX_PAGE,
    page_bytes: int = DEFAULT_PAGE_BYTES,
) -> Iterator[RawEntry]:
    """The entries of stream ``key`` from ``start`` to ``end``, ascending (descending with
    ``reverse``), at most ``count`` (``None``: all), read page by page with XRANGE /
    XREVRANGE as the iteration goes.

    ``start`` and ``end`` are read by :func:`rstore.parse_range_bound` (XRANGE's grammar:
    ``-``, ``+``, ``MS``, ``MS-SEQ``, ``(ID``; and times such as ``1h`` or
    ``2026-11-01T10:00``); they always name the low and the high end, also with ``reverse``.
    A stream that does not exist has no entries.  Each page is one read transaction, so
    entries added or deleted between pages may or may not be seen, as with a client paging
    through a server with ``(``-exclusive bounds.
    """
    for page in iter_range_pages(
        store,
        key,
        start,
        end,
        count=count,
        reverse=reverse,
        max_page=max_page,
        page_bytes=page_bytes,
    ):
        yield from page
        del page  # hold no page while the next one is read


def iter_range_pages(
    store: Store,
    key: bytes | str,
    start: bytes | str = "-",
    end: bytes | str = "+",
    *,
    count: int | None = None,
    reverse: bool = False,
    max_page: int = DEFAULT_MAX_PAGE,
    page_bytes: int = DEFAULT_PAGE_BYTES,
) -> Iterator[list[RawEntry]]:
    """:func:`iter_range` a page at a time: each page a list of entries, read by one XRANGE /
    XREVRANGE when the previous page has been handed over (drop it before asking for the
    next, and memory holds one page)."""
    low = parse_range_bound(start, is_end=False)
    high = parse_range_bound(end, is_end=True)
    if low > high:
        return
    name = key.encode() if isinstance(key, str) else key
    remaining = count
    page = 1
    while remaining is None or remaining > 0:
        size = page if remaining is None else min(page, remaining)
        if reverse:
            reply: Any = store.execute(
                b"XREVRANGE", name, format_id(high), format_id(low), b"COUNT", size
            )
        else:
            reply = store.execute(b"XRANGE", name, format_id(low), format_id(high), b"COUNT", size)
        if not reply:
            return
        got = sum(map(len, chain.from_iterable(flat for _, flat in reply)))
        read, last_id = len(reply), reply[-1][0]
        page_entries: list[RawEntry] = list(map(tuple, reply))
        del reply
        yield page_entries
        del page_entries  # hold no page while the next one is read
        if read < size:
            return
        if remaining is not None:
            remaining -= read
        last = parse_range_bound(last_id, is_end=False)
        following = decrement(last) if reverse else increment(last)
        if following is None:  # past 0-0 or max-max: nothing further
            return
        if reverse:
            high = StreamID(*following)
        else:
            low = StreamID(*following)
        # Next page: about page_bytes of entries of the size just seen, at least one.
        page = max(1, min(max_page, page * 2, page_bytes // max(1, got // read)))
