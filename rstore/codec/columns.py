"""Stream nodes decoded into columns: the layout Arrow (and so Spark, pandas, Parquet) reads
without copying.

:class:`Columns` holds a batch of entries as flat little-endian buffers::

    ms, seq          int64 per entry (the ID's two halves, as bit patterns: IDs above 2**63
                     read back negative in a signed column)
    id               int32 offsets (entries + 1) + the bytes of every "ms-seq"
    entry            int32 offsets (entries + 1) into the field/value pairs
    key, value       int32 offsets (pairs + 1) + the bytes of every field name / value

so that ``entry_offsets`` with ``key``/``value`` form an Arrow ``map`` or ``list<struct>``
column and ``id`` a ``string`` column.  :func:`append_node` adds the live entries of one node
within a range, in ID order -- exactly the entries :func:`rstore.codec.stream_node.scan_forward`
gives -- with integers stored in the listpack written out as decimal text, as replies show
them.  With ``dedupe`` an entry that holds a field name twice keeps its last value only (what a
map can hold).  The C version (``_columns.c``) does the same; this one is the reference.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence

from rstore.codec.speedups import c_columns_append as _c_append_node
from rstore.codec.stream_node import scan_forward_py
from rstore.model import ID, Entry

__all__ = ["ACCELERATED", "Columns", "append_node"]

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_U64_TO_I64 = 1 << 64
_MAX_OFFSET = (1 << 31) - 1


#: Whether the C decoder is in use.
ACCELERATED = _c_append_node is not None


class Columns:
    """A batch of entries as flat buffers (see the module docstring)."""

    __slots__ = (
        "entry_offsets",
        "id_data",
        "id_offsets",
        "key_data",
        "key_offsets",
        "ms",
        "seq",
        "value_data",
        "value_offsets",
    )

    def __init__(self) -> None:
        zero = _I32.pack(0)
        self.ms = bytearray()
        self.seq = bytearray()
        self.id_offsets = bytearray(zero)
        self.id_data = bytearray()
        self.entry_offsets = bytearray(zero)
        self.key_offsets = bytearray(zero)
        self.key_data = bytearray()
        self.value_offsets = bytearray(zero)
        self.value_data = bytearray()

    @property
    def count(self) -> int:
        """Entries in the batch."""
        return len(self.ms) // 8

    @property
    def pairs(self) -> int:
        """Field/value pairs in the batch."""
        return len(self.key_offsets) // 4 - 1

    @property
    def nbytes(self) -> int:
        """Bytes held (to decide when a batch is big enough)."""
        return sum(len(getattr(self, name)) for name in self.__slots__)

    def buffers(self) -> tuple[bytearray, ...]:
        """The nine buffers, in the order the C decoder takes them."""
        return tuple(getattr(self, name) for name in _ORDER)

    def add_entry(self, entry_id: ID, flat: Sequence[bytes]) -> None:
        """Append one entry: its ID and ``[field, value, ...]`` (fields kept as given)."""
        ms, seq = entry_id
        self.ms += _I64.pack(ms - _U64_TO_I64 if ms >= 1 << 63 else ms)
        self.seq += _I64.pack(seq - _U64_TO_I64 if seq >= 1 << 63 else seq)
        _append_string(self.id_offsets, self.id_data, b"%d-%d" % (ms, seq))
        for i in range(0, len(flat) - 1, 2):
            _append_string(self.key_offsets, self.key_data, flat[i])
            _append_string(self.value_offsets, self.value_data, flat[i + 1])
        self.entry_offsets += _I32.pack(self.pairs)

    def entry_id(self, i: int) -> ID:
        """The ID of entry ``i`` of the batch."""
        ms = int.from_bytes(self.ms[8 * i : 8 * i + 8], "little")
        return ms, int.from_bytes(self.seq[8 * i : 8 * i + 8], "little")

    def entry(self, i: int) -> Entry:
        """Entry ``i`` of the batch: its ID and ``[field, value, ...]``."""
        first, stop = struct.unpack_from("<ii", self.entry_offsets, 4 * i)
        flat: list[bytes] = []
        for j in range(first, stop):
            ka, kb = struct.unpack_from("<ii", self.key_offsets, 4 * j)
            va, vb = struct.unpack_from("<ii", self.value_offsets, 4 * j)
            flat += (bytes(self.key_data[ka:kb]), bytes(self.value_data[va:vb]))
        return self.entry_id(i), flat

    def entries(self) -> list[Entry]:
        """The batch back as entries (for tests and small reads)."""
        out: list[Entry] = []
        offsets = _offsets(self.entry_offsets)
        keys = _strings(self.key_offsets, self.key_data)
        values = _strings(self.value_offsets, self.value_data)
        for i in range(self.count):
            ms = _I64.unpack_from(self.ms, 8 * i)[0] % _U64_TO_I64
            seq = _I64.unpack_from(self.seq, 8 * i)[0] % _U64_TO_I64
            flat: list[bytes] = []
            for j in range(offsets[i], offsets[i + 1]):
                flat += (keys[j], values[j])
            out.append(((ms, seq), flat))
        return out


_ORDER = (
    "ms",
    "seq",
    "id_offsets",
    "id_data",
    "entry_offsets",
    "key_offsets",
    "key_data",
    "value_offsets",
    "value_data",
)


def _offsets(buf: bytearray) -> list[int]:
    return [v for (v,) in struct.iter_unpack("<i", buf)]


def _strings(offsets: bytearray, data: bytearray) -> list[bytes]:
    bounds = _offsets(offsets)
    return [bytes(data[a:b]) for a, b in itertools.pairwise(bounds)]


def _append_string(offsets: bytearray, data: bytearray, value: bytes) -> None:
    data += value
    if len(data) > _MAX_OFFSET:
        raise ValueError(f"a batch column passed {_MAX_OFFSET} bytes (2 GiB): too large for Arrow")
    offsets += _I32.pack(len(data))


def _last_only(flat: list[bytes]) -> list[bytes]:
    """The pairs of ``flat`` with each field name once, at its last value, in order of the
    kept occurrences."""
    names = flat[0::2]
    if len(set(names)) == len(names):
        return flat
    out: list[bytes] = []
    for i, name in enumerate(names):
        if name not in names[i + 1 :]:
            out += (name, flat[2 * i + 1])
    return out


def append_node_py(
    cols: Columns, node: bytes, master_id: ID, start: ID, end: ID, limit: int, dedupe: bool
) -> tuple[int, bool]:
    """:func:`append_node` in Python."""
    found: list[Entry] = []
    done = scan_forward_py(node, master_id, start, end, limit, found)
    for entry_id, flat in found:
        cols.add_entry(entry_id, _last_only(flat) if dedupe else flat)
    return len(found), done


def append_node(
    cols: Columns,
    node: bytes,
    master_id: ID,
    start: ID,
    end: ID,
    limit: int = 0,
    *,
    dedupe: bool = False,
) -> tuple[int, bool]:
    """Append the live entries of ``node`` with ``start <= id <= end`` to ``cols``, at most
    ``limit`` (0: no limit); ``(entries appended, done)`` -- done when an ID past ``end`` was
    seen or the limit reached, as :func:`scan_forward` reports it."""
    if _c_append_node is not None:
        result = _c_append_node(node, *master_id, *start, *end, limit, dedupe, cols.buffers())
        if result is not None:
            appended, done = result
            return int(appended), bool(done)
    return append_node_py(cols, node, master_id, start, end, limit, dedupe)
