"""Redis stream nodes: the listpack that holds up to ``stream-node-max-entries`` entries.

A node is keyed by its *master ID* -- the ID of the entry that created it -- and its listpack
starts with a master entry, followed by the entries in ID order::

    master entry:  count | deleted | num_master_fields | field_1 ... field_N | 0
    entry:         flags | ms_delta | seq_delta | [num_fields | f_1 v_1 ... f_n v_n] | lp_count
    same fields:   flags | ms_delta | seq_delta | v_1 ... v_N | lp_count

* ``count`` live entries, ``deleted`` tombstones; both are rewritten in place.
* ``flags``: bit 0 DELETED, bit 1 SAMEFIELDS (the entry's field names equal the master's, so only
  the values are stored).  The entry that creates a node always has SAMEFIELDS.
* ``ms_delta``/``seq_delta``: ``entry - master`` modulo 2**64, stored as signed 64-bit integers.
* ``lp_count``: how many elements the entry has before it (``N + 3`` with SAMEFIELDS, else
  ``2n + 4``), so a reader can walk the node backwards.  The master's trailing ``0`` plays the
  same role for the master entry.

Deleting an entry never removes bytes: its flags get the DELETED bit and the counters move.
All functions here are pure; they take the node bytes and the master ID ``(ms, seq)``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from rstore.codec import listpack as lp
from rstore.codec.listpack import INT_TEXT, element_text, read_element, read_int, skip_element
from rstore.codec.speedups import c_append_entry as _c_append_entry
from rstore.codec.speedups import c_dict_entries as _c_dict_entries
from rstore.codec.speedups import c_scan_forward as _c_scan_forward
from rstore.errors import CorruptDataError
from rstore.model import ID, Entry

#: An entry as redis-py's stream methods give it: ``(b"<ms>-<seq>", {field: value, ...})``.
DictEntry = tuple[bytes, dict[bytes, bytes]]

__all__ = [
    "FLAG_DELETED",
    "FLAG_NONE",
    "FLAG_SAMEFIELDS",
    "DictEntry",
    "RawEntry",
    "append_entry",
    "dict_entries",
    "dict_entry",
    "entry_size",
    "first_live_entry",
    "iter_ids",
    "iter_raw",
    "last_entry_id",
    "mark_deleted",
    "master_fields",
    "new_node",
    "node_counts",
    "scan_backward",
    "scan_backward_py",
    "scan_forward",
    "scan_forward_py",
]

FLAG_NONE = 0
FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2

_U64 = (1 << 64) - 1
_I64_HALF = 1 << 63
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")


class RawEntry(NamedTuple):
    """One physical entry of a node, tombstone or not."""

    id: ID
    flags: int
    flags_pos: int  # offset of the flags element, for in-place tombstoning
    fields_values: list[bytes]


def _delta(a: int, b: int) -> int:
    """``a - b`` modulo 2**64 as a signed 64-bit integer (what Redis stores)."""
    d = (a - b) & _U64
    return d - (1 << 64) if d >= _I64_HALF else d


def entry_size(fields_values: Sequence[bytes]) -> int:
    """Sum of the raw byte lengths of an entry's fields and values (Redis's ``totelelen``)."""
    return sum(map(len, fields_values))


def new_node(fields_values: Sequence[bytes]) -> bytearray:
    """The listpack of a node created by the entry ``fields_values`` (its master entry).

    The entry itself sits at deltas 0/0 with SAMEFIELDS.
    """
    n = len(fields_values) // 2
    fields = fields_values[0::2]
    values = fields_values[1::2]
    enc = lp.encode_value
    parts = [b"\x01\x01", b"\x00\x01", lp.encode_int(n)]  # count 1, deleted 0, N
    parts.extend(map(enc, fields))
    parts.append(b"\x00\x01")  # master terminator
    parts.append(b"\x02\x01\x00\x01\x00\x01")  # SAMEFIELDS, ms_delta 0, seq_delta 0
    parts.extend(map(enc, values))
    parts.append(lp.encode_int(n + 3))
    return bytearray(lp.build(parts, 2 * n + 8))


def node_counts(node: bytes | bytearray) -> tuple[int, int]:
    """``(count, deleted)`` from the master entry."""
    count = node[lp.HEADER_SIZE]
    if count < 0x80:
        p = lp.HEADER_SIZE + 2
    else:
        count, p = read_int(node, lp.HEADER_SIZE)
    deleted = node[p]
    if deleted >= 0x80:
        deleted, _ = read_int(node, p)
    return count, deleted


def master_fields(node: bytes | bytearray) -> tuple[list[bytes], int]:
    """The master field names and the offset of the first entry's flags."""
    p = skip_element(node, lp.HEADER_SIZE)
    p = skip_element(node, p)
    n, p = read_int(node, p)
    fields = []
    for _ in range(n):
        v, p = read_element(node, p)
        fields.append(element_text(v))
    p = skip_element(node, p)  # master terminator
    return fields, p


def _replace_int(node: bytearray, p: int, value: int) -> int:
    """Replace the integer element at ``p`` in place; return the size change in bytes."""
    old_end = skip_element(node, p)
    new = lp.encode_int(value)
    delta = len(new) - (old_end - p)
    node[p:old_end] = new
    return delta


def _set_header(node: bytearray, added_elements: int) -> None:
    _U32.pack_into(node, 0, len(node))
    cur = node[4] | (node[5] << 8)
    if cur != lp.NUMELE_UNKNOWN:
        _U16.pack_into(node, 4, min(cur + added_elements, lp.NUMELE_UNKNOWN))


_field_blobs: dict[tuple[bytes, ...], bytes] = {}
_FIELD_BLOB_CACHE_MAX = 1024


def _fields_blob(fields: tuple[bytes, ...]) -> bytes:
    """The encoded field names followed by the master terminator, as a node stores them.

    Field sets repeat from entry to entry, so the encoding is cached (bounded)."""
    blob = _field_blobs.get(fields)
    if blob is None:
        if len(_field_blobs) >= _FIELD_BLOB_CACHE_MAX:
            _field_blobs.clear()
        blob = b"".join(map(lp.encode_value, fields)) + b"\x00\x01"
        _field_blobs[fields] = blob
    return blob


def _same_fields(node: bytearray, p: int, fields: tuple[bytes, ...]) -> bool:
    """Whether the master field names starting at ``p`` equal ``fields`` (compared as text).

    Nodes are written with canonical encodings, so equal text means equal bytes; a node with
    non-canonical encodings (possible only in a crafted file) falls back to decoding.
    """
    blob = _fields_blob(fields)
    if node[p : p + len(blob)] == blob:
        return True
    for f in fields:
        v, p = read_element(node, p)
        if element_text(v) != f:
            return False
    return True


def append_entry(
    node: bytearray, master_id: ID, entry_id: ID, fields_values: Sequence[bytes]
) -> None:
    """Append an entry to ``node`` in place, exactly as Redis's ``streamAppendItem`` does.

    The live count goes up by one; SAMEFIELDS is set when the field names equal the master's
    (same count, same order, compared as text).  The C version (``_append.c``) does the plain
    cases; this one is the reference, and does the rest.
    """
    if _c_append_entry is not None and _c_append_entry(
        node, master_id[0], master_id[1], entry_id[0], entry_id[1], fields_values
    ):
        return
    b = node[lp.HEADER_SIZE]
    if b < 127:  # live count stays a one-byte integer: bump it in place
        node[lp.HEADER_SIZE] = b + 1
        p = lp.HEADER_SIZE + 2
    else:
        count, p = read_int(node, lp.HEADER_SIZE)
        p += _replace_int(node, lp.HEADER_SIZE, count + 1)
    p = p + 2 if node[p] < 0x80 else skip_element(node, p)  # deleted
    b = node[p]
    if b < 0x80:
        n_master = b
        p += 2
    else:
        n_master, p = read_int(node, p)
    n = len(fields_values) >> 1
    same = n == n_master and _same_fields(node, p, tuple(fields_values[0::2]))
    ms_d = entry_id[0] - master_id[0]
    seq_d = entry_id[1] - master_id[1]
    if not -_I64_HALF <= ms_d < _I64_HALF:
        ms_d = _delta(entry_id[0], master_id[0])
    if not -_I64_HALF <= seq_d < _I64_HALF:
        seq_d = _delta(entry_id[1], master_id[1])
    if 0 <= ms_d < 128 and 0 <= seq_d < 128:
        head = bytes((2 if same else 0, 1, ms_d, 1, seq_d, 1))
    else:
        head = (b"\x02\x01" if same else b"\x00\x01") + lp.encode_int(ms_d) + lp.encode_int(seq_d)
    enc = lp.encode_value
    if same:
        body = b"".join([enc(v) for v in fields_values[1::2]])
        lp_count = n + 3
        added = n + 4
    else:
        body = lp.encode_int(n) + b"".join([enc(v) for v in fields_values])
        lp_count = 2 * n + 4
        added = 2 * n + 5
    tail = bytes((lp_count, 1, lp.EOF)) if lp_count < 128 else lp.encode_int(lp_count) + b"\xff"
    node[-1:] = head + body + tail
    _set_header(node, added)


# --------------------------------------------------------------------------- reading


def _entry_id(master_id: ID, ms_d: int, seq_d: int) -> ID:
    return ((master_id[0] + ms_d) & _U64, (master_id[1] + seq_d) & _U64)


def iter_raw(node: bytes | bytearray, master_id: ID) -> Iterator[RawEntry]:
    """Every physical entry in order, tombstones included, with its flags offset."""
    fields, p = master_fields(node)
    end = len(node) - 1
    while p < end:
        flags_pos = p
        flags, p = read_int(node, p)
        ms_d, p = read_int(node, p)
        seq_d, p = read_int(node, p)
        fv: list[bytes] = []
        if flags & FLAG_SAMEFIELDS:
            for f in fields:
                v, p = read_element(node, p)
                fv.append(f)
                fv.append(element_text(v))
        else:
            n, p = read_int(node, p)
            for _ in range(2 * n):
                v, p = read_element(node, p)
                fv.append(element_text(v))
        p = skip_element(node, p)  # lp_count
        yield RawEntry(_entry_id(master_id, ms_d, seq_d), flags, flags_pos, fv)


def iter_ids(node: bytes | bytearray, master_id: ID) -> Iterator[tuple[ID, int, int]]:
    """Every physical entry as ``(id, flags, flags_offset)`` without decoding values."""
    fields, p = master_fields(node)
    nfields = len(fields)
    end = len(node) - 1
    while p < end:
        flags_pos = p
        flags, p = read_int(node, p)
        ms_d, p = read_int(node, p)
        seq_d, p = read_int(node, p)
        if flags & FLAG_SAMEFIELDS:
            nvals = nfields
        else:
            nvals, p = read_int(node, p)
            nvals *= 2
        for _ in range(nvals + 1):  # values, then lp_count
            p = skip_element(node, p)
        yield _entry_id(master_id, ms_d, seq_d), flags, flags_pos


def dict_entry(entry: Entry) -> DictEntry:
    """``(b"<ms>-<seq>", {field: value, ...})``: an entry as redis-py's stream methods give it
    (a field repeated in the entry: its last value, as ``dict`` keeps it)."""
    sid, fv = entry
    return b"%d-%d" % sid, dict(zip(fv[0::2], fv[1::2]))


def dict_entries(entries: list[Entry]) -> list[DictEntry]:
    """:func:`dict_entry` of each of ``entries`` (in C when the accelerator is built)."""
    if _c_dict_entries is not None:
        out = _c_dict_entries(entries)
        if out is not None:
            return out
    return [dict_entry(e) for e in entries]


def scan_forward(
    node: bytes | bytearray,
    master_id: ID,
    start: ID,
    end: ID,
    limit: int,
    out: list[Any],
    dicts: bool = False,
) -> bool:
    """Append to ``out`` the live entries with ``start <= id <= end``, ascending, stopping once
    ``out`` holds ``limit`` entries (``limit`` <= 0 means no limit); with ``dicts``, each as
    :func:`dict_entry` gives it (built at once, with no entry in between).

    Returns ``True`` when the scan must stop (an ID past ``end`` was seen or the limit was hit),
    ``False`` when the caller should continue with the next node.
    Entries below ``start`` and tombstones are skipped without decoding their values.

    Runs in C when the optional accelerator is built (see :mod:`rstore.codec.speedups`); the
    C version hands anything unusual back to :func:`scan_forward_py`, which raises
    :class:`~rstore.errors.CorruptDataError` on a malformed node.
    """
    if _c_scan_forward is not None:
        done = _c_scan_forward(
            node, master_id[0], master_id[1], start[0], start[1], end[0], end[1], limit, out, dicts
        )
        if done is not None:
            return bool(done)
    if not dicts:
        return scan_forward_py(node, master_id, start, end, limit, out)
    entries: list[Entry] = []
    # as many as ``out`` lacks (a full ``out`` still takes one: scan_forward_py's rule)
    room = max(limit - len(out), 1) if limit > 0 else limit
    done = scan_forward_py(node, master_id, start, end, room, entries)
    out.extend(dict_entry(e) for e in entries)
    return done


def scan_forward_py(
    node: bytes | bytearray,
    master_id: ID,
    start: ID,
    end: ID,
    limit: int,
    out: list[Entry],
) -> bool:
    """:func:`scan_forward` in Python: the reference, and the fallback."""
    if type(node) is not bytes:
        node = bytes(node)  # slices of a bytes object are the bytes replies need
    fields, p = master_fields(node)
    nfields = len(fields)
    template: list[bytes] = []
    for f in fields:
        template += (f, b"")
    stop = len(node) - 1
    mms, mseq = master_id
    buf = node
    text = element_text
    small = INT_TEXT
    while p < stop:
        # flags, ms_delta, seq_delta: small ints in the common case (one byte + backlen).
        b = buf[p]
        if b < 0x80:
            flags = b
            p += 2
        else:
            flags, p = read_int(buf, p)
        b = buf[p]
        if b < 0x80:
            ms_d = b
            p += 2
        else:
            ms_d, p = read_int(buf, p)
        b = buf[p]
        if b < 0x80:
            seq_d = b
            p += 2
        else:
            seq_d, p = read_int(buf, p)
        sid = ((mms + ms_d) & _U64, (mseq + seq_d) & _U64)
        if sid > end:
            return True
        if flags & FLAG_SAMEFIELDS:
            nvals = nfields
            named = False
        else:
            nvals, p = read_int(buf, p)
            nvals *= 2
            named = True
        if flags & FLAG_DELETED or sid < start:
            for _ in range(nvals + 1):  # the values, then lp_count
                p = skip_element(buf, p)
            continue
        vals: list[bytes] = []
        for _ in range(nvals):
            b = buf[p]
            if b < 0x80:  # 7-bit integer
                vals.append(small[b])
                p += 2
            elif b < 0xC0:  # short string
                q = p + 1 + (b & 0x3F)
                vals.append(buf[p + 1 : q])
                p = q + 1
            else:
                v, p = read_element(buf, p)
                vals.append(text(v))
        if named:
            fv = vals
        else:
            fv = template.copy()
            fv[1::2] = vals
        p = p + 2 if buf[p] < 0x80 else skip_element(buf, p)  # lp_count
        out.append((sid, fv))
        if 0 < limit <= len(out):
            return True
    return False


def _entry_start_before(node: bytes | bytearray, p_end: int) -> int | None:
    """Given the offset just past an entry's lp_count (or the EOF offset), return the offset of
    that entry's flags, or ``None`` when the element before is the master terminator."""
    q = lp.prev_element(node, p_end)
    if q is None:
        raise CorruptDataError("corrupt stream node: no master entry", p_end)
    lp_count, _ = read_int(node, q)
    if lp_count == 0:
        return None  # reached the master entry's terminator
    for _ in range(lp_count):
        prev = lp.prev_element(node, q)
        if prev is None:
            raise CorruptDataError("corrupt stream node: lp-count runs past the start", q)
        q = prev
    return q


def scan_backward(
    node: bytes | bytearray,
    master_id: ID,
    start: ID,
    end: ID,
    limit: int,
    out: list[Entry],
) -> bool:
    """Like :func:`scan_forward` but descending from ``end`` down to ``start``; ``True`` when
    the walk may stop (the limit was hit, or an entry below ``start`` was seen).  With the C
    accelerator the node's entries in range are decoded ascending and taken from the end."""
    if _c_scan_forward is not None:
        entries: list[Entry] = []
        if _c_scan_forward(node, master_id[0], master_id[1], start[0], start[1], end[0], end[1],
                           0, entries, False) is not None:  # fmt: skip
            # as many as ``out`` lacks (a full ``out`` still takes one, as in Python)
            room = max(limit - len(out), 1) if limit > 0 else len(entries)
            taken = entries[: -room - 1 : -1]
            out.extend(taken)
            if taken and 0 < limit <= len(out):
                return True
            return master_id < start and _first_id(node, master_id) < start
    return scan_backward_py(node, master_id, start, end, limit, out)


def _first_id(node: bytes | bytearray, master_id: ID) -> ID:
    """The ID of the node's first entry, tombstone or not."""
    _, p = master_fields(node)
    _, q = read_int(node, p)  # flags
    ms_d, q = read_int(node, q)
    seq_d, _ = read_int(node, q)
    return _entry_id(master_id, ms_d, seq_d)


def scan_backward_py(
    node: bytes | bytearray,
    master_id: ID,
    start: ID,
    end: ID,
    limit: int,
    out: list[Entry],
) -> bool:
    """:func:`scan_backward` in Python: the reference, and the fallback."""
    fields, _ = master_fields(node)
    p_end = len(node) - 1
    while True:
        p = _entry_start_before(node, p_end)
        if p is None:
            return False
        p_end = p
        flags, q = read_int(node, p)
        ms_d, q = read_int(node, q)
        seq_d, q = read_int(node, q)
        sid = _entry_id(master_id, ms_d, seq_d)
        if sid < start:
            return True
        if flags & FLAG_DELETED or sid > end:
            continue
        fv: list[bytes] = []
        if flags & FLAG_SAMEFIELDS:
            for f in fields:
                v, q = read_element(node, q)
                fv.append(f)
                fv.append(element_text(v))
        else:
            n, q = read_int(node, q)
            for _ in range(2 * n):
                v, q = read_element(node, q)
                fv.append(element_text(v))
        out.append((sid, fv))
        if 0 < limit <= len(out):
            return True


def first_live_entry(node: bytes | bytearray, master_id: ID) -> Entry | None:
    """The first non-deleted entry of the node, or ``None``."""
    out: list[Entry] = []
    scan_forward(node, master_id, (0, 0), (_U64, _U64), 1, out)
    return out[0] if out else None


def last_entry_id(node: bytes | bytearray, master_id: ID) -> ID:
    """The ID of the last physical entry, tombstone or not (Redis ``lpGetEdgeStreamID``)."""
    p = _entry_start_before(node, len(node) - 1)
    if p is None:
        raise CorruptDataError("corrupt stream node: node holds no entry", lp.HEADER_SIZE)
    _, q = read_int(node, p)
    ms_d, q = read_int(node, q)
    seq_d, _ = read_int(node, q)
    return _entry_id(master_id, ms_d, seq_d)


# --------------------------------------------------------------------------- tombstones


def mark_deleted(node: bytearray, flags_positions: Sequence[int]) -> int:
    """Tombstone the entries whose flags sit at ``flags_positions`` (all live), in place.

    Sets the DELETED bit (same width, so offsets stay valid), then moves the counters:
    ``count -= k``, ``deleted += k``.  Returns the new live count.  A caller that would take the
    live count to zero removes the whole node instead (Redis does that for XDEL).
    """
    for pos in sorted(flags_positions, reverse=True):  # last first: a re-encode shifts the rest
        flags, _ = read_int(node, pos)
        _replace_int(node, pos, flags | FLAG_DELETED)  # 0/2 -> 1/3 in place; other forms re-encoded
    k = len(flags_positions)
    count, p = read_int(node, lp.HEADER_SIZE)
    p += _replace_int(node, lp.HEADER_SIZE, count - k)
    deleted, _ = read_int(node, p)
    _replace_int(node, p, deleted + k)
    _U32.pack_into(node, 0, len(node))
    return count - k
