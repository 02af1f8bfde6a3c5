"""Runs of entries appended to one node: with automatic IDs, the inner loop of pipelined XADDs
(:func:`append_auto`); with their own IDs from a batch of columns, the inner loop of building
nodes from a file (:func:`append_columns`).

A pipeline of ``XADD key * field value ...`` commands on one stream appends entry after entry to
the stream's last node.  :func:`append_auto` does a whole run of them in one call: each entry
gets the ID XADD's ``*`` gives it (the time snapshot ``now_ms`` if it is above the last ID's
milliseconds, else the last ID plus one) and is appended by :func:`stream_node.append_entry`'s
rule, while it fits in the node by XADD's node rule (the node's byte size plus the entry's raw
length stays below ``max_bytes``; fewer than ``max_entries`` entries, tombstones counted, when
``max_entries`` is not 0).

The run stops before the first entry it does not do, and the caller takes that entry through
the general path: one that opens a new node, one that is not plain (not a list or tuple, or its
fields and values are not an even number, at least two, of ``bytes``), or one that finds the
last ID at ``max-max`` (XADD's error).  So the answer never depends on where a run stops.

The C version (``_append.c``) does the runs whose node it can read; :func:`append_auto_py` is
the reference and the fallback (``tests/codec/test_append_speedup.py`` compares the two byte for
byte), and is built from the same pieces as a single XADD.  :func:`append_columns` and its
reference :func:`append_columns_py` work the same way (``tests/codec/test_append_columns.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rstore.codec.columns import Columns
from rstore.codec.speedups import c_append_auto as _c_append_auto
from rstore.codec.speedups import c_append_columns as _c_append_columns
from rstore.codec.speedups import c_new_node_columns as _c_new_node_columns
from rstore.codec.stream_node import append_entry, entry_size, new_node, node_counts
from rstore.model import ID

__all__ = ["append_auto", "append_auto_py", "append_columns", "append_columns_py", "open_node"]

_U64 = (1 << 64) - 1


def append_auto(
    node: bytearray,
    master_id: ID,
    last_id: ID,
    now_ms: int,
    entries: Sequence[Sequence[bytes]],
    start: int,
    stop: int,
    offset: int,
    max_bytes: int,
    max_entries: int,
    ids: list[bytes],
) -> tuple[int, ID]:
    """Append ``entries[start:stop]`` to ``node`` (whose master ID is ``master_id``) with
    automatic IDs after ``last_id`` under ``now_ms``, as far as the run goes (see the module).

    The fields and values of each entry are its items from ``offset`` on (``offset`` 3 takes
    them from an ``XADD key * ...`` argv).  Each new ID is appended to ``ids`` as XADD replies
    it (``b"<ms>-<seq>"``).  Returns the index of the first entry not appended and the last ID.
    """
    if _c_append_auto is not None:
        done = _c_append_auto(
            node, *master_id, *last_id, now_ms, entries, start, stop, offset, max_bytes,
            max_entries, ids,
        )  # fmt: skip
        if done is not None:
            nxt, ms, seq = done
            return nxt, (ms, seq)
    return append_auto_py(
        node, master_id, last_id, now_ms, entries, start, stop, offset, max_bytes, max_entries,
        ids,
    )  # fmt: skip


def append_auto_py(
    node: bytearray,
    master_id: ID,
    last_id: ID,
    now_ms: int,
    entries: Sequence[Sequence[bytes]],
    start: int,
    stop: int,
    offset: int,
    max_bytes: int,
    max_entries: int,
    ids: list[bytes],
) -> tuple[int, ID]:
    """:func:`append_auto` in Python: the reference, and the fallback."""
    count, deleted = node_counts(node)
    used = count + deleted
    i = start
    while i < stop:
        entry = entries[i]
        if type(entry) is not list and type(entry) is not tuple:
            break
        fv = entry[offset:]
        if len(fv) < 2 or len(fv) % 2 or any(type(x) is not bytes for x in fv):
            break
        ms, seq = last_id
        if ms == seq == _U64:
            break  # no ID left: XADD refuses it
        if 0 < max_entries <= used or len(node) + entry_size(fv) >= max_bytes:
            break  # the entry opens a new node
        if now_ms > ms:
            new_id = (now_ms, 0)
        elif seq < _U64:
            new_id = (ms, seq + 1)
        else:
            new_id = (ms + 1, 0)
        append_entry(node, master_id, new_id, fv)
        ids.append(b"%d-%d" % new_id)
        last_id = new_id
        used += 1
        i += 1
    return i, last_id


def append_columns(
    node: bytearray,
    master_id: ID,
    last_id: ID,
    cols: Columns,
    start: int,
    max_bytes: int,
    max_entries: int,
) -> tuple[int, ID]:
    """Append the entries ``start``.. of ``cols`` to ``node`` (whose master ID is
    ``master_id``) with their own IDs, each by :func:`stream_node.append_entry`'s rule, while
    it is above ``last_id`` (then the last ID appended), holds fields, and fits in the node by
    XADD's node rule (as :func:`append_auto`).  Returns the index of the first entry not
    appended (``cols.count`` when all were) and the last ID appended.
    """
    if _c_append_columns is not None:
        done = _c_append_columns(
            node, *master_id, *last_id, cols.ms, cols.seq, cols.entry_offsets, cols.key_offsets,
            cols.key_data, cols.value_offsets, cols.value_data, start, max_bytes, max_entries,
        )  # fmt: skip
        if done is not None:
            nxt, ms, seq = done
            return nxt, (ms, seq)
    return append_columns_py(node, master_id, last_id, cols, start, max_bytes, max_entries)


def open_node(cols: Columns, i: int) -> bytearray | None:
    """The node entry ``i`` of ``cols`` opens (:func:`stream_node.new_node` of its fields and
    values), ``None`` for an entry without fields."""
    if _c_new_node_columns is not None:
        node = _c_new_node_columns(
            cols.ms, cols.seq, cols.entry_offsets, cols.key_offsets, cols.key_data,
            cols.value_offsets, cols.value_data, i,
        )  # fmt: skip
        if node is not None:
            return node
    flat = cols.entry(i)[1]
    return new_node(flat) if flat else None


def append_columns_py(
    node: bytearray,
    master_id: ID,
    last_id: ID,
    cols: Columns,
    start: int,
    max_bytes: int,
    max_entries: int,
) -> tuple[int, ID]:
    """:func:`append_columns` in Python: the reference, and the fallback."""
    count, deleted = node_counts(node)
    used = count + deleted
    i = start
    while i < cols.count:
        entry_id, fv = cols.entry(i)
        if not fv or entry_id <= last_id:
            break  # no fields, or not above the last ID: not for this node
        if 0 < max_entries <= used or len(node) + entry_size(fv) >= max_bytes:
            break  # the entry opens a new node
        append_entry(node, master_id, entry_id, fv)
        last_id = entry_id
        used += 1
        i += 1
    return i, last_id
