"""RESP2 replies as Python values.

Command handlers return the *internal* form:

======================  ================================
RESP2                   Python
======================  ================================
bulk string             ``bytes``
simple string (status)  ``str``
integer                 ``int``
nil bulk (``$-1``)      ``None``
nil array (``*-1``)     :data:`NIL_ARRAY`
array                   ``list``
error                   raised :class:`~rstore.errors.ResponseError`
======================  ================================

The public form (what :meth:`rstore.Store.execute` returns) is the same with both nils as
``None``.  Keeping the two nils apart internally lets a network front reply with exact bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from rstore.codec.speedups import c_entries_reply
from rstore.ids import format_id
from rstore.model import Entry

__all__ = [
    "NIL_ARRAY",
    "DictEntries",
    "HistoryReads",
    "NilArray",
    "RespReply",
    "StreamedEntries",
    "StreamedReads",
    "entries_reply",
    "entries_reply_py",
    "entry_reply",
    "pending_rows_resp",
    "public_stream_reply",
    "to_public",
]


class DictEntries(list[Any]):
    """Stream entries already in redis-py's form, ``[(b"<ms>-<seq>", {field: value}), ...]``,
    built straight from the nodes for a client that asked for them
    (:func:`rstore.commands.executor.execute` with ``dicts=True``): the one reply that is not
    in the internal form.  Only a client's shaping sees it, never a RESP front."""

    __slots__ = ()


class RespReply(bytes):
    """A reply already written as RESP -- the same bytes in RESP2 and RESP3 -- for a network
    front (:meth:`rstore.Store.execute_many` with ``streamed=True``): an XRANGE or XREVRANGE
    whose entries were written straight from the nodes (in C where it is built), with no
    Python object per entry."""

    __slots__ = ()


class StreamedEntries:
    """A reply of ``count`` stream entries that is built while it is written, for a network
    front (:meth:`rstore.Store.execute_many` with ``streamed=True``), from nodes copied out of
    the read transaction -- so a reply of any size takes bounded memory.  :meth:`chunks` gives
    its RESP bytes (the same in RESP2 and RESP3) a page at a time, :meth:`pages` its entries
    (``(id, [field, value, ...])``) a page at a time; use one of them, once."""

    __slots__ = ("_pages", "_resp", "count")

    def __init__(
        self,
        count: int,
        pages: Callable[[], Iterator[list[Entry]]],
        resp: Callable[[], Iterator[tuple[bytes, int]]],
    ) -> None:
        self.count = count
        self._pages = pages
        self._resp = resp  # RESP pages, each with how many entries it holds

    def pages(self) -> Iterator[list[Entry]]:
        """The entries, in order, a page at a time."""
        return self._pages()

    def chunks(self) -> Iterator[bytes]:
        """The reply's RESP bytes: the array's length, then the entries a page at a time.
        Should the pages hold another number of entries -- a bug, as the length is written
        first -- :class:`RuntimeError` ends it (the connection cannot be mended)."""
        yield b"*%d\r\n" % self.count
        sent = 0
        for chunk, entries in self._resp():
            sent += entries
            yield chunk
        if sent != self.count:
            raise RuntimeError(f"a streamed reply of {self.count} entries held {sent}")

    def build(self) -> list[Any]:
        """The whole reply, in the internal form (what :meth:`rstore.Store.execute` gives)."""
        return [item for page in self._pages() for item in entries_reply(page)]


class StreamedReads:
    """An XREAD reply of streams each with its :class:`StreamedEntries`, built while it is
    written (:meth:`rstore.Store.execute_many` with ``streamed=True``).  Unlike an entries
    array its framing differs by protocol: RESP2 an array of ``[key, entries]`` pairs, RESP3
    a map of key to entries -- :meth:`chunks` takes the protocol."""

    __slots__ = ("streams",)

    def __init__(self, streams: list[tuple[bytes, StreamedEntries]]) -> None:
        self.streams = streams

    def chunks(self, proto: int) -> Iterator[bytes]:
        """The reply's RESP bytes (``proto`` 2 or 3), a page at a time."""
        n = len(self.streams)
        yield b"%%%d\r\n" % n if proto == 3 else b"*%d\r\n" % n
        for key, entries in self.streams:
            pair = b"" if proto == 3 else b"*2\r\n"
            yield b"%s$%d\r\n%s\r\n" % (pair, len(key), key)
            yield from entries.chunks()

    def build(self) -> list[Any]:
        """The whole reply, in the internal form (what :meth:`rstore.Store.execute` gives)."""
        return [[key, entries.build()] for key, entries in self.streams]


#: the largest chunk :meth:`HistoryReads.chunks` gives at a time
_PIECE = 1 << 16


class HistoryReads:
    """An XREADGROUP reply of consumers' histories written as RESP while they were read, for
    a network front (:meth:`rstore.Store.execute_many` with ``streamed=True``): no Python
    object per entry is kept, so a history of any length costs about its reply's bytes.  Per
    stream: its key, how many entries, and the RESP of the live entries in runs between the
    deleted ones (whose IDs are kept: a deleted entry is ``[id, nil]``, and the nil differs by
    protocol, as does the framing) -- :meth:`chunks` takes the protocol."""

    __slots__ = ("streams",)

    def __init__(self, streams: list[tuple[bytes, int, list[bytearray], list[bytes]]]) -> None:
        #: ``(key, entries, runs, deleted IDs)``: ``runs`` is one longer than ``deleted``
        self.streams = streams

    def chunks(self, proto: int) -> Iterator[bytes]:
        """The reply's RESP bytes (``proto`` 2 or 3)."""
        n = len(self.streams)
        yield b"%%%d\r\n" % n if proto == 3 else b"*%d\r\n" % n
        nil = b"_\r\n" if proto == 3 else b"*-1\r\n"
        for key, count, runs, deleted in self.streams:
            pair = b"" if proto == 3 else b"*2\r\n"
            yield b"%s$%d\r\n%s\r\n*%d\r\n" % (pair, len(key), key, count)
            for run, gone in zip(runs, [*deleted, None]):
                view = memoryview(run)  # in pieces: the transport buffers what it is given
                for at in range(0, len(run), _PIECE):
                    yield bytes(view[at : at + _PIECE])
                if gone is not None:
                    yield b"*2\r\n$%d\r\n%s\r\n%s" % (len(gone), gone, nil)


def pending_rows_resp(rows: Iterable[tuple[bytes, bytes, int, int]]) -> RespReply:
    """Pending entries as RESP arrays of four -- ID, owner, a time, deliveries -- written as
    they come (XPENDING's extended reply, XINFO STREAM FULL's group PEL): the same bytes in
    RESP2 and RESP3."""
    out = bytearray()
    n = 0
    for entry_id, owner, time_ms, deliveries in rows:
        out += b"*4\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n:%d\r\n:%d\r\n" % (
            len(entry_id),
            entry_id,
            len(owner),
            owner,
            time_ms,
            deliveries,
        )
        n += 1
    return RespReply(b"*%d\r\n%s" % (n, out))


class NilArray:
    """The RESP2 null array (``*-1``)."""

    _instance: NilArray | None = None

    def __new__(cls) -> NilArray:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NIL_ARRAY"

    def __bool__(self) -> bool:
        return False


NIL_ARRAY: Final = NilArray()

Reply = Any


def to_public(reply: Reply, convert: Callable[[Reply], Reply] | None = None) -> Reply:
    """Replace :data:`NIL_ARRAY` by ``None``: at the top level, and below it through the
    command's own ``convert`` for the few replies that nest one."""
    if reply is NIL_ARRAY:
        return None
    return reply if convert is None else convert(reply)


def public_stream_reply(reply: Reply) -> Reply:
    """XREADGROUP: history entries deleted from the stream have a nil array body."""
    if isinstance(reply, list):
        for _key, entries in reply:
            for entry in entries:
                if entry[1] is NIL_ARRAY:
                    entry[1] = None
    return reply


def entry_reply(entry: Entry) -> list[Any]:
    """``[id, [field, value, ...]]``."""
    return [format_id(entry[0]), entry[1]]


def entries_reply(entries: list[Entry]) -> list[Any]:
    """``[[b"<ms>-<seq>", [field, value, ...]], ...]`` of scanned entries (in C when the codec's
    accelerator is built: :func:`entries_reply_py` is the reference)."""
    if c_entries_reply is not None:
        out = c_entries_reply(entries)
        if out is not None:
            return out
    return entries_reply_py(entries)


def entries_reply_py(entries: list[Entry]) -> list[Any]:
    """:func:`entries_reply` in Python."""
    return [[b"%d-%d" % sid, fv] for sid, fv in entries]
