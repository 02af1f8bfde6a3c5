"""XADD: choosing the new ID and appending the entry, as Redis's ``streamAppendItem``.

A new node is opened when the tail node's byte size plus the raw length of the new fields and
values reaches ``stream-node-max-bytes``, or when the tail already holds
``stream-node-max-entries`` entries counting tombstones.  Otherwise the entry is appended to the
tail.  Identical rules give identical nodes, so ``radix-tree-keys`` and ``~`` trimming match.

:func:`add_auto` is the same semantics for a run of ``XADD key * field value ...`` on one
stream (a pipeline): the entries that go into the stream's last node are appended in one call
(:func:`rstore.codec.stream_append.append_auto`, in C when it is built); an entry that opens a
node or is refused goes through :func:`add`.

An XADD that opens a node applies the stream's retention policy, if it has one
(:mod:`rstore.streams.retention`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rstore import messages
from rstore.codec import stream_node as sn
from rstore.codec.stream_append import append_auto
from rstore.ids import ID, MAX_ID, increment
from rstore.numbers import UINT64_MAX
from rstore.storage.records import layout
from rstore.storage.records.txn import Txn
from rstore.streams import retention
from rstore.streams.keyspace import StreamRef, create_stream, lookup_stream
from rstore.streams.trim import TrimSpec, trim

__all__ = ["add", "add_auto", "count_entry", "next_id", "node_limits", "stored_tail", "tail_full"]

STREAM_LISTPACK_MAX_SIZE = 1 << 30


def next_id(last_id: ID, explicit: tuple[int, int | None] | None, now_ms: int) -> ID:
    """The ID XADD gives the new entry.

    ``explicit`` is ``None`` for ``*``, ``(ms, None)`` for ``<ms>-*`` and ``(ms, seq)`` otherwise.
    Raises the "equal or smaller" error when the result does not beat ``last_id``.
    """
    if explicit is None:
        if now_ms > last_id[0]:
            return (now_ms, 0)
        nxt = increment(last_id)
        assert nxt is not None  # max-max was refused before
        return nxt
    ms, seq = explicit
    if seq is None:
        if ms == last_id[0]:
            if last_id[1] == UINT64_MAX:
                raise messages.error(messages.XADD_ID_SMALL)
            return (ms, last_id[1] + 1)
        new_id = (ms, 0)
    else:
        new_id = (ms, seq)
    if new_id <= last_id:
        raise messages.error(messages.XADD_ID_SMALL)
    return new_id


def add(
    txn: Txn,
    name: bytes,
    fields_values: Sequence[bytes],
    *,
    explicit_id: tuple[int, int | None] | None,
    nomkstream: bool,
    trim_spec: TrimSpec | None,
    now_ms: int,
) -> ID | None:
    """XADD semantics; the new ID, or ``None`` for NOMKSTREAM on a missing key."""
    if explicit_id == (0, 0):
        raise messages.error(messages.XADD_ID_ZERO)
    stream = lookup_stream(txn, name)
    if stream is not None:
        meta = stream.meta
        if meta.last_id == MAX_ID:
            raise messages.error(messages.XADD_EXHAUSTED)
        new_id = next_id(meta.last_id, explicit_id, now_ms)
    else:
        if nomkstream:
            return None
        new_id = next_id((0, 0), explicit_id, now_ms)
    totelelen = sn.entry_size(fields_values)
    if totelelen > STREAM_LISTPACK_MAX_SIZE:
        raise messages.error(messages.XADD_TOO_LARGE)
    if stream is None:
        stream = create_stream(txn, name)
        meta = stream.meta
    opened = _append(txn, stream, new_id, fields_values, totelelen)
    if trim_spec is not None:
        trim(txn, stream, trim_spec)
    if opened:  # whole nodes are what a retention policy removes: look when one is added
        retention.apply(txn, name, now_ms)
    return new_id


def add_auto(
    txn: Txn,
    name: bytes,
    entries: list[list[bytes]],
    start: int,
    stop: int,
    offset: int,
    now_ms: int,
    ids: list[bytes],
) -> int:
    """``XADD name * ...`` for each of ``entries[start:stop]`` in turn (their fields and values
    from ``offset`` on; ``offset`` 3 for XADD argvs), as far as the entries go into the stream's
    last node, which is everything but opening a node and refusing: the new IDs are appended to
    ``ids`` as XADD replies them.

    Returns the index of the first entry not added (``stop`` when all were); the caller runs it
    through :func:`add`, which opens a new node for it, or gives XADD's error, and may go on
    after it.  Nothing is done for a missing or empty stream (the first entry creates or sets
    the stream's first ID: :func:`add`'s work).
    """
    stream = lookup_stream(txn, name)
    if stream is None:
        return start
    meta = stream.meta
    if not meta.length or not meta.node_count:
        return start
    node = txn.node_for_update(stream.handle, meta.tail_id)
    if node is None:
        return start  # add() reports the missing node
    max_bytes, max_entries = node_limits(txn)
    nxt, last_id = append_auto(
        node, meta.tail_id, meta.last_id, now_ms, entries, start, stop, offset, max_bytes,
        max_entries, ids,
    )  # fmt: skip
    added = nxt - start
    if added:
        meta.length += added
        meta.entries_added += added
        meta.last_id = last_id
        txn.stream_put(stream.handle, meta)
    return nxt


def node_limits(txn: Txn) -> tuple[int, int]:
    """``(max_bytes, max_entries)`` of the store's node rule (0 entries = no limit)."""
    config = txn.config()
    max_bytes = config.node_max_bytes
    if max_bytes == 0 or max_bytes > STREAM_LISTPACK_MAX_SIZE:
        max_bytes = STREAM_LISTPACK_MAX_SIZE
    return max_bytes, config.node_max_entries


def tail_full(node_len: int, used: int, totelelen: int, max_bytes: int, max_entries: int) -> bool:
    """Whether a new entry of ``totelelen`` raw bytes must open a new node rather than go into
    the tail node of ``node_len`` bytes holding ``used`` entries (tombstones counted)."""
    return node_len + totelelen >= max_bytes or (0 < max_entries <= used)


def count_entry(meta: layout.StreamMeta, new_id: ID) -> None:
    """The stream counters after appending the entry ``new_id``."""
    meta.length += 1
    meta.entries_added += 1
    meta.last_id = new_id
    if meta.length == 1:
        meta.first_id = new_id


def stored_tail(txn: Txn, stream: StreamRef) -> bytes | bytearray | None:
    """The stream's last node, or ``None`` when it has none."""
    meta = stream.meta
    if not meta.node_count:
        return None
    tail = txn.node_get(stream.handle, meta.tail_id)
    if tail is None:
        raise txn.inconsistent(
            layout.DB_NODES, "the stream's metadata names a last node that is not stored",
            txn.stream_name(stream.handle),
        )  # fmt: skip
    return tail


def _append(
    txn: Txn, stream: StreamRef, new_id: ID, fields_values: Sequence[bytes], totelelen: int
) -> bool:
    """Append the entry to the tail node or a new one; whether a node was opened."""
    meta = stream.meta
    handle = stream.handle
    tail = stored_tail(txn, stream)
    if tail is not None:
        max_bytes, max_entries = node_limits(txn)
        count, deleted = sn.node_counts(tail) if max_entries else (0, 0)
        if tail_full(len(tail), count + deleted, totelelen, max_bytes, max_entries):
            tail = None
    if tail is None:
        txn.node_put(handle, new_id, sn.new_node(fields_values))
        meta.node_count += 1
        meta.tail_id = new_id
    else:
        node = txn.node_for_update(handle, meta.tail_id)
        assert node is not None
        sn.append_entry(node, meta.tail_id, new_id, fields_values)
    count_entry(meta, new_id)
    txn.stream_put(handle, meta)
    return tail is None
