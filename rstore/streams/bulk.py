"""Many XADDs in one transaction: a bulk load (``Store.append_entries``).

Each entry gets exactly what ``XADD key <id> field value ...`` would give it, in turn: the same
ID rule (:func:`rstore.streams.append.next_id`), the same node rule
(:func:`rstore.streams.append.tail_full`), the same counters and the same error lines.  What
differs is only the bookkeeping: the tail node of each stream stays in hand between entries and
is written once, when it is full or at the end, instead of being read and cached per entry;
so memory stays bounded by the number of streams, not of entries.

The caller's transaction makes it all or nothing: the first refused entry raises (its line is
XADD's; on Python 3.11+ a note names the entry) and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rstore import messages
from rstore.codec import stream_node as sn
from rstore.codec.speedups import c_entry_size
from rstore.errors import ResponseError
from rstore.ids import ID, MAX_ID, format_id, parse_xadd_id
from rstore.storage.records.layout import StreamMeta
from rstore.storage.records.txn import Txn
from rstore.streams import retention
from rstore.streams.append import (
    STREAM_LISTPACK_MAX_SIZE,
    count_entry,
    next_id,
    node_limits,
    stored_tail,
    tail_full,
)
from rstore.streams.keyspace import create_stream, lookup_stream

__all__ = ["add_many"]

#: Streams whose tail node is kept in hand at once; past this, every tail in hand is written.
_TAILS_IN_HAND = 256


class _Tail:
    """One stream being appended to: its metadata and its last node, in hand."""

    __slots__ = ("added", "dirty", "handle", "meta", "node", "used")

    def __init__(self, handle: int, meta: StreamMeta, node: bytearray | None, used: int) -> None:
        self.handle = handle
        self.meta = meta
        self.node = node
        self.used = used  # entries in ``node``, tombstones included
        self.dirty = False
        self.added = 0


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return bytes(value) if type(value) is not bytes else value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"expected bytes or str, not {type(value).__name__}")


def _id_tuple(raw_id: tuple[Any, ...]) -> ID:
    """An explicit ID given as ``(ms, seq)``: two ints in ``[0, 2**64)``, else XADD's invalid
    ID error."""
    if len(raw_id) == 2:
        ms, seq = raw_id
        if type(ms) is int and type(seq) is int and 0 <= ms <= MAX_ID[0] and 0 <= seq <= MAX_ID[1]:
            return ms, seq
    raise messages.error(messages.INVALID_ID)


def _open(txn: Txn, name: bytes) -> _Tail:
    stream = lookup_stream(txn, name)
    if stream is None:
        stream = create_stream(txn, name)
    tail = stored_tail(txn, stream)
    if tail is None:
        return _Tail(stream.handle, stream.meta, None, 0)
    count, deleted = sn.node_counts(tail)
    return _Tail(stream.handle, stream.meta, bytearray(tail), count + deleted)


def _put_tail(txn: Txn, t: _Tail) -> None:
    if t.node is not None and t.dirty:
        txn.node_write(t.handle, t.meta.tail_id, t.node)
    t.dirty = False


def _release(txn: Txn, tails: dict[bytes, _Tail], stats: dict[bytes, tuple[int, ID]]) -> None:
    """Write every tail in hand and let go of it (its node is read again if needed)."""
    for name, t in tails.items():
        _put_tail(txn, t)
        txn.stream_put(t.handle, t.meta)
        stats[name] = (t.added, t.meta.last_id)
    tails.clear()


def add_many(
    txn: Txn, entries: Iterable[tuple[Any, Any, Sequence[Any]]], now_ms: int
) -> dict[bytes, tuple[int, ID]]:
    """Append ``entries`` -- ``(stream, id, [field, value, ...])`` with ``id`` ``None``,
    ``"*"``, ``"<ms>"``, ``"<ms>-*"`` or ``"<ms>-<seq>"`` -- in order, as XADD would one by one.

    Returns ``{stream: (entries added, last ID)}``.  Raises XADD's :class:`ResponseError` for
    the first entry XADD would refuse, with a note naming it (the caller aborts the
    transaction).  Names, IDs, fields and values are ``bytes`` (``str`` is UTF-8 encoded).
    """
    max_bytes, max_entries = node_limits(txn)
    tails: dict[bytes, _Tail] = {}
    stats: dict[bytes, tuple[int, ID]] = {}
    new_node = sn.new_node
    append_entry = sn.append_entry
    entry_size = c_entry_size
    index = -1
    name: Any = None
    raw_id: Any = None
    try:
        for index, (name, raw_id, fv) in enumerate(entries):  # noqa: B007 - in the note
            if type(name) is not bytes:
                name = _as_bytes(name)
            t = tails.get(name)
            if t is None:
                if len(tails) >= _TAILS_IN_HAND:
                    _release(txn, tails, stats)
                t = tails[name] = _open(txn, name)
                if stats:
                    t.added = stats.get(name, (0, MAX_ID))[0]
            # XADD's checks in XADD's order: the ID's syntax, the arity, then the semantics.
            explicit: tuple[int, int | None] | None
            if raw_id is None:
                explicit = None
            elif type(raw_id) is tuple:  # (ms, seq) ints, as the replay engine gives them
                explicit = _id_tuple(raw_id)
            else:
                if type(raw_id) is not bytes:
                    raw_id = _as_bytes(raw_id)
                explicit = None if raw_id == b"*" else parse_xadd_id(raw_id)
            nfv = len(fv)
            if nfv < 2 or nfv & 1:
                raise messages.error(messages.WRONG_ARITY, name="xadd")
            if explicit == (0, 0):
                raise messages.error(messages.XADD_ID_ZERO)
            totelelen = None if entry_size is None else entry_size(fv)
            if totelelen is None:  # not all bytes (or no C helper)
                fv = [x if type(x) is bytes else _as_bytes(x) for x in fv]
                totelelen = sn.entry_size(fv)
            meta = t.meta
            if meta.last_id == MAX_ID:
                raise messages.error(messages.XADD_EXHAUSTED)
            new_id = next_id(meta.last_id, explicit, now_ms)
            if totelelen > STREAM_LISTPACK_MAX_SIZE:
                raise messages.error(messages.XADD_TOO_LARGE)
            node = t.node
            if node is None or tail_full(len(node), t.used, totelelen, max_bytes, max_entries):
                _put_tail(txn, t)
                t.node = new_node(fv)
                t.used = 1
                meta.node_count += 1
                meta.tail_id = new_id
            else:
                append_entry(node, meta.tail_id, new_id, fv)
                t.used += 1
            t.dirty = True
            t.added += 1
            count_entry(meta, new_id)
    except ResponseError as exc:
        shown = "*" if raw_id is None else raw_id
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(f"entry {index} (stream {name!r}, id {shown!r}) was refused; nothing added")
        raise
    _release(txn, tails, stats)
    for stream_name in stats:  # as XADD would have trimmed them (whole nodes)
        retention.apply(txn, stream_name, now_ms)
    return stats


def describe(result: dict[bytes, tuple[int, ID]]) -> dict[bytes, tuple[int, bytes]]:
    """``add_many``'s result with the last IDs formatted as XADD replies them."""
    return {name: (n, format_id(last)) for name, (n, last) in result.items()}
