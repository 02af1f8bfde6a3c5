"""Planning a read: the streams and ID ranges a query covers, cut at node boundaries into a few
large partitions.  Pure rstore (no pyspark): runs in Spark's planner process, and in tests.

A partition is plain data (Spark pickles it to a task).  Each holds slices ``(stream, lo, hi)``
whose bounds are fixed here, at planning: every task reads the same snapshot even while
writers append (``hi`` never passes the stream's last ID as planned).  A node is never split
between partitions, so a slice starts at a node's master ID (or the query's start) and ends
just before the next slice's first node.  Tasks cost about 30 ms each in PySpark: partitions
hold ``entries_per_partition`` entries (250 000 by default), and small streams share one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import rstore
from rstore.spark.options import ReadOptions

__all__ = [
    "Part", "Slice", "pack_slices", "plan_parts", "plan_read", "plan_store_ranges", "wanted",
]  # fmt: skip

ID = tuple[int, int]

#: RDB files above this size are indexed and split between tasks; smaller ones are read whole
#: by one task each (an index pass costs about what reading the file costs).
SPLIT_FILE_BYTES = 32 << 20


@dataclass(frozen=True)
class Slice:
    """Entries of ``stream`` with ``lo <= id <= hi``.  In an RDB file, the ``count`` nodes
    starting at file offset ``offset`` (``after``: the master ID of the node before them)."""

    stream: bytes
    lo: ID
    hi: ID
    entries: int = 0
    offset: int | None = None
    count: int = 0
    after: ID | None = None


@dataclass(frozen=True)
class Part:
    """One task's work: slices of one store or one RDB file (``whole``: every matching stream
    of the file, read in one pass without an index)."""

    kind: str  # "store" or "rdb"
    path: str
    slices: tuple[Slice, ...] = ()
    whole: bool = False
    entries: int = 0
    host: str = field(default_factory=lambda: os.uname().nodename)


def _decrement(i: ID) -> ID:
    ms, seq = i
    return (ms, seq - 1) if seq else (ms - 1, 2**64 - 1)


def wanted(opts: ReadOptions, name: bytes) -> bool:
    """Whether the read covers stream ``name`` (option ``streams``: names or a glob)."""
    if opts.streams is not None:
        return name in opts.streams
    if opts.pattern is not None:
        return rstore.key_matches(opts.pattern, name)
    return True


def _cut(stream: bytes, lo: ID, hi: ID, spans: list[rstore.NodeSpan], per: int) -> Iterator[Slice]:
    """Consecutive slices of one stream holding about ``per`` entries each, whole nodes."""
    if not spans:
        return
    first = 0
    held = 0
    for i, span in enumerate(spans):
        held += span.entries
        last = i == len(spans) - 1
        if held >= per or last:
            s_lo = lo if first == 0 else spans[first].master_id
            s_hi = hi if last else _decrement(spans[i + 1].master_id)
            yield Slice(
                stream,
                max(s_lo, lo),
                min(s_hi, hi),
                held,
                spans[first].offset,
                i + 1 - first,
                spans[first - 1].master_id if first else None,
            )
            first, held = i + 1, 0


def pack_slices(kind: str, path: str, slices: list[Slice], per: int) -> list[Part]:
    """Slices into partitions of about ``per`` entries, in order (small streams share)."""
    parts: list[Part] = []
    current: list[Slice] = []
    held = 0
    for s in slices:
        if current and held + s.entries > per:
            parts.append(Part(kind, path, tuple(current), entries=held))
            current, held = [], 0
        current.append(s)
        held += s.entries
    if current:
        parts.append(Part(kind, path, tuple(current), entries=held))
    return parts


def _per_partition(opts: ReadOptions, total: int) -> int:
    if opts.num_partitions:
        return max(1, math.ceil(total / opts.num_partitions))
    return opts.entries_per_partition


def _slices_in(
    view: rstore.StoreView, ranges: dict[bytes, tuple[ID, ID]], per: int
) -> tuple[list[Slice], dict[bytes, ID]]:
    """:func:`plan_store_ranges` on an open snapshot."""
    slices: list[Slice] = []
    last: dict[bytes, ID] = {}
    for name, (lo, hi) in ranges.items():
        state = view.state(name)
        if state is None:
            continue
        last[name] = state.last_id
        hi = min(hi, state.last_id)
        if lo > hi or state.length == 0:
            continue
        slices += _cut(name, lo, hi, view.node_index(name, lo, hi), per)
    return slices, last


def plan_store_ranges(
    path: str, ranges: dict[bytes, tuple[ID, ID]], per: int
) -> tuple[list[Slice], dict[bytes, ID]]:
    """Slices of a store covering ``ranges`` ({stream: (lo, hi)}, inclusive), whole nodes of
    about ``per`` entries, all read from one snapshot; and each stream's last ID then."""
    with rstore.Store(path, create=False) as store:
        return store.view(lambda view: _slices_in(view, ranges, per))


def _plan_store(opts: ReadOptions) -> list[Part]:
    """The streams chosen, their sizes and their slices, from one snapshot."""

    def plan(view: rstore.StoreView) -> tuple[list[Slice], int]:
        names = [n for n in view.keys(opts.pattern) if wanted(opts, n)]
        total = 0
        for name in names:
            state = view.state(name)
            total += state.length if state is not None else 0
        per = _per_partition(opts, total)
        slices, _ = _slices_in(view, dict.fromkeys(names, (opts.start, opts.end)), per)
        return slices, per

    with rstore.Store(opts.path, create=False) as store:
        slices, per = store.view(plan)
    return pack_slices("store", opts.path, slices, per)


def _plan_rdb(opts: ReadOptions) -> list[Part]:
    parts: list[Part] = []
    big = [f for f in opts.files if os.path.getsize(f) > SPLIT_FILE_BYTES]
    for f in opts.files:
        if f not in big:
            parts.append(Part("rdb", f, whole=True))
            continue
        index = [s for s in rstore.index_rdb(f) if s.db == opts.db and wanted(opts, s.key)]
        total = sum(s.state.length for s in index)
        per = _per_partition(opts, total)
        slices: list[Slice] = []
        for s in index:
            hi = min(opts.end, s.state.last_id)
            spans = [
                n
                for i, n in enumerate(s.nodes)
                if n.master_id <= hi
                and (i + 1 == len(s.nodes) or s.nodes[i + 1].master_id > opts.start)
            ]
            slices += _cut(s.key, opts.start, hi, spans, per)
        parts += pack_slices("rdb", f, slices, per)
    return parts


def plan_read(opts: ReadOptions) -> list[Part]:
    """The partitions of a batch read of the entries table."""
    return _plan_store(opts) if opts.kind == "store" else _plan_rdb(opts)


def plan_parts(opts: ReadOptions) -> list[Part]:
    """The partitions of a batch read of any table: the entries at node boundaries, or one
    partition per source for the tables of consumer-group state."""
    if opts.table == "entries":
        return plan_read(opts)
    from rstore.spark.tables import plan_table  # noqa: PLC0415 - tables imports this module

    return plan_table(opts)
