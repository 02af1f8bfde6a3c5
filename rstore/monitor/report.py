"""A queue's health at a glance, as one self-contained HTML file: :func:`write_report`.

For every stream of a store (or of an RDB dump) the page shows

* its size: length, entries added, first and last entries with their times, nodes and the
  listpack bytes they hold;
* its whole history: entries per minute from the entry IDs' millisecond times, one bar per
  minute -- or per wider bucket (2, 5, 10, 15, 30 minutes, hours, days) when the history is
  longer than :data:`~rstore.monitor.charts.HISTORY_PLOT_WIDTH` minutes, the y axis still in
  entries per minute;
* how full its nodes are: live entries per node against ``stream-node-max-entries`` and
  listpack bytes per node against ``stream-node-max-bytes`` (the store's settings; Redis's
  defaults, 100 and 4096, for a dump, which does not record them);
* its consumer groups: consumers, last delivered ID, entries read, lag, pending count, and the
  oldest pending entry -- its age (from its ID's time) and how long since it was delivered.

The page needs nothing else: inline CSS, charts drawn as inline SVG by :mod:`charts`, no
script, and a content security policy that forbids every fetch, so it renders the same with the
network off, attached to a ticket or opened years later.

**How it reads.** Only through rstore's public API: :meth:`rstore.Store.inspect` (or
:func:`rstore.inspect_rdb`) for each stream's state and groups; then ONE pass over each
stream's nodes, a page of nodes at a time (:meth:`rstore.StoreView.nodes` and
:meth:`~rstore.StoreView.node_index` in a short read transaction per page, or
:func:`rstore.index_rdb` then :func:`rstore.read_rdb_nodes`), decoded by
:func:`rstore.iter_columns`; the IDs' times are counted into at most
:data:`~rstore.monitor.charts.HISTORY_PLOT_WIDTH` buckets, node sizes into 11 bins.  Memory is
bounded by a page of nodes and the buckets, whatever the stream's length -- except that a dump's
index (a few dozen bytes per node) is held, and its groups come with their whole pending lists
(:func:`rstore.inspect_rdb` has no other way), held while the file is inspected; a store's
groups' oldest pending entries are read alone (``XINFO STREAM key FULL COUNT 1``).
Entries added while the report is made, after a stream's state was read, are left out.
"""

from __future__ import annotations

import bisect
import contextlib
import io
import itertools
import os
import sys
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import IO, TYPE_CHECKING, Protocol, cast

import rstore

from .charts import HISTORY_PLOT_WIDTH, MINUTE_MS
from .health import reply_id, reply_map
from .report_page import page_end, page_start, stream_section

if TYPE_CHECKING:
    from rstore import GroupInfo, Store, StreamInfo

__all__ = [
    "DEFAULT_NODE_LIMITS",
    "MIN_HISTORY_BUCKETS",
    "DumpSource",
    "EntryHistory",
    "GroupReport",
    "NodeFill",
    "ReportSource",
    "ReportSummary",
    "StoreSource",
    "StreamReport",
    "bucket_width_ms",
    "survey_stream",
    "write_report",
]

ID = tuple[int, int]

#: ``progress(done, total)``: entries read so far, and in all.
Progress = Callable[[int, int | None], None]

#: Redis's defaults for ``stream-node-max-entries`` and ``stream-node-max-bytes``, the limits a
#: dump's nodes are measured against (an RDB file does not record the server's settings).
DEFAULT_NODE_LIMITS = (100, 4096)

#: The fewest buckets a history shows: a short one gets empty minutes after its last entry
#: rather than a single bar as wide as the chart.
MIN_HISTORY_BUCKETS = 10

#: Nodes read per page (about 100 entries each).
PAGE_NODES = 256

# Bucket widths of the history, in minutes, narrowest first; beyond them, multiples of a week.
_BUCKET_MINUTES = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080)
_WEEK_MS = 10080 * MINUTE_MS


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class ReportSummary:
    """What :func:`write_report` wrote: the source it read (``store PATH`` or ``RDB file
    PATH``), the streams, entries (their lengths), consumer groups and pending entries it
    covers, the HTML's size in bytes, and when it was made (Unix milliseconds)."""

    source: str
    streams: int
    entries: int
    groups: int
    pending: int
    bytes: int
    made_ms: int


@dataclass(frozen=True, slots=True)
class GroupReport:
    """A consumer group as the report shows it.  ``lag`` is ``None`` when it cannot be known
    (after deletions); the oldest pending entry is the first of its PEL by ID, and
    ``oldest_pending_idle_ms`` the time from its last delivery to the report's time (``None``
    when nothing is pending, or when XNACK released it: it then has no delivery time)."""

    name: bytes
    consumers: int
    last_delivered_id: ID
    entries_read: int | None
    lag: int | None
    pending: int
    oldest_pending_id: ID | None = None
    oldest_pending_idle_ms: int | None = None


def bucket_width_ms(first_ms: int, last_ms: int, most: int = HISTORY_PLOT_WIDTH) -> int:
    """The narrowest bucket width (1, 2, 5, 10, 15, 30 minutes, 1, 2, 3, 6, 12 hours, 1, 2, 7
    days, then whole weeks) that covers ``first_ms..last_ms`` in at most ``most`` buckets
    aligned on multiples of the width since the Unix epoch."""
    for minutes in _BUCKET_MINUTES:
        width = minutes * MINUTE_MS
        if last_ms // width - first_ms // width < most:
            return width
    weeks = max((last_ms - first_ms) // (most * _WEEK_MS), 1)
    while last_ms // (weeks * _WEEK_MS) - first_ms // (weeks * _WEEK_MS) >= most:
        weeks += 1
    return weeks * _WEEK_MS


class EntryHistory:
    """Entries per bucket of time, from entry IDs' millisecond times: ``counts[i]`` entries
    have ``origin_ms + i * width_ms <= ms < origin_ms + (i + 1) * width_ms``.  Built for a
    stream's first and last entry times (at least :data:`MIN_HISTORY_BUCKETS` buckets from the
    first); times outside them are not counted."""

    __slots__ = ("counts", "origin_ms", "width_ms")

    def __init__(self, first_ms: int, last_ms: int) -> None:
        self.width_ms = bucket_width_ms(first_ms, last_ms)
        self.origin_ms = first_ms // self.width_ms * self.width_ms
        buckets = last_ms // self.width_ms - first_ms // self.width_ms + 1
        self.counts = [0] * max(buckets, MIN_HISTORY_BUCKETS)

    def add(self, times: Sequence[int]) -> None:
        """Count ``times`` (ascending), a bucket at a time: a binary search finds where each
        bucket's run of times ends, so a batch costs per bucket it touches, not per entry."""
        origin, width, counts = self.origin_ms, self.width_ms, self.counts
        i, n = 0, len(times)
        while i < n:
            bucket = (times[i] - origin) // width
            end = origin + (bucket + 1) * width
            j = bisect.bisect_left(times, end, i, n)
            if 0 <= bucket < len(counts):
                counts[bucket] += j - i
            i = j


class NodeFill:
    """How full a stream's nodes are: live entries and listpack bytes per node, each counted
    in 11 bins by its share of the limit -- up to 10 %, up to 20 %, ... up to 100 %, over it
    (a limit of 0, none, counts every node in the first bin)."""

    BINS = 11

    __slots__ = ("byte_bins", "bytes", "entries", "entry_bins", "max_bytes", "max_entries", "nodes")

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.nodes = self.entries = self.bytes = 0
        self.entry_bins = [0] * self.BINS
        self.byte_bins = [0] * self.BINS

    def add(self, entries: int, size: int) -> None:
        """Count one node of ``entries`` live entries and ``size`` listpack bytes."""
        self.nodes += 1
        self.entries += entries
        self.bytes += size
        self.entry_bins[_fill_bin(entries, self.max_entries)] += 1
        self.byte_bins[_fill_bin(size, self.max_bytes)] += 1


def _fill_bin(value: int, limit: int) -> int:
    """The bin of ``value`` against ``limit``: 0 for up to 10 % (or no limit), ..., 9 up to
    100 %, 10 beyond."""
    if limit <= 0 or value <= 0:
        return 0
    return min(-(-value * 10 // limit), NodeFill.BINS) - 1


@dataclass(frozen=True, slots=True)
class StreamReport:
    """One stream's part of the report: its state (``info``, without pending lists), its groups,
    its history (``None`` when it holds no entries) and its node fill."""

    info: StreamInfo
    groups: tuple[GroupReport, ...]
    history: EntryHistory | None
    fill: NodeFill


# ----------------------------------------------------------------------------- sources

#: A page of one stream's nodes: ``(master_id, listpack, live entries)`` each, ascending.
NodePage = list[tuple[ID, bytes, int]]


class ReportSource(Protocol):
    """What a report reads: a store or a dump, behind the same few calls."""

    #: What the source is (``store``, ``RDB file``) and where (its absolute path).
    kind: str
    location: str
    #: A line of facts about it (format, RDB version, size).
    details: str
    #: ``(stream-node-max-entries, stream-node-max-bytes)`` the nodes are measured against.
    node_limits: tuple[int, int]
    #: Where those limits come from, for the page.
    limits_origin: str

    def streams(self, pattern: bytes | None) -> list[StreamInfo]: ...

    def groups(self, info: StreamInfo, now_ms: int) -> tuple[GroupReport, ...]: ...

    def node_pages(self, info: StreamInfo) -> Iterator[NodePage]: ...


def _group_report(group: GroupInfo) -> GroupReport:
    state = group.state
    return GroupReport(
        state.name, len(group.consumers), state.last_id, group.entries_read, group.lag,
        state.pel_count,
    )  # fmt: skip


class StoreSource:
    """A store (read-only is enough): one :meth:`rstore.Store.inspect`, the node limits from
    ``CONFIG GET``, each group's oldest pending entry from ``XINFO STREAM key FULL COUNT 1``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.kind, self.location = "store", _shown_path(store.path)
        self.details = f"store format {store.format}"
        reply = store.execute("CONFIG", "GET", "stream-node-max-*")
        config = {reply[i]: int(reply[i + 1]) for i in range(0, len(reply) - 1, 2)}
        self.node_limits = (
            config.get(b"stream-node-max-entries", DEFAULT_NODE_LIMITS[0]),
            config.get(b"stream-node-max-bytes", DEFAULT_NODE_LIMITS[1]),
        )
        self.limits_origin = "the store's settings"

    def streams(self, pattern: bytes | None) -> list[StreamInfo]:
        infos = self.store.inspect()
        chosen = [i for i in infos if pattern is None or rstore.key_matches(pattern, i.key)]
        return sorted(chosen, key=_stream_key)

    def groups(self, info: StreamInfo, now_ms: int) -> tuple[GroupReport, ...]:
        groups = tuple(_group_report(g) for g in info.groups)
        if not any(g.pending for g in groups):
            return groups
        oldest = self._oldest_pending(info.key)
        out = []
        for group in groups:
            if group.name in oldest:
                entry_id, delivered_ms = oldest[group.name]
                idle = None if delivered_ms is None else max(now_ms - delivered_ms, 0)
                group = replace(group, oldest_pending_id=entry_id, oldest_pending_idle_ms=idle)
            out.append(group)
        return tuple(out)

    def _oldest_pending(self, key: bytes) -> dict[bytes, tuple[ID, int | None]]:
        """Each group's first pending entry and its delivery time (``None``: XNACK released
        it), from ``XINFO STREAM key FULL COUNT 1``: one entry of each PEL, not the PELs."""
        try:
            reply = self.store.execute("XINFO", "STREAM", key, "FULL", "COUNT", 1)
        except rstore.ResponseError:  # the stream was deleted meanwhile
            return {}
        out = {}
        for flat in reply_map(reply)[b"groups"]:
            group = reply_map(flat)
            if group[b"pending"]:
                entry_id, owner, delivered_ms, _ = group[b"pending"][0]
                released = owner == b"" or delivered_ms <= 0
                out[group[b"name"]] = (reply_id(entry_id), None if released else delivered_ms)
        return out

    def node_pages(self, info: StreamInfo) -> Iterator[NodePage]:
        cursor: ID | None = (0, 0)
        while cursor is not None:
            read = partial(_store_page, key=info.key, start=cursor, end=info.state.last_id)
            page, cursor = self.store.view(read)
            if page:
                yield page


def _store_page(
    view: rstore.StoreView, *, key: bytes, start: ID, end: ID
) -> tuple[NodePage, ID | None]:
    """Up to :data:`PAGE_NODES` nodes of ``key`` from the one holding ``start`` on, with their
    live entries, and the master ID of the node after them (``None``: none before ``end``)."""
    nodes = list(itertools.islice(view.nodes(key, start, end), PAGE_NODES + 1))
    after = nodes.pop()[0] if len(nodes) > PAGE_NODES else None
    if not nodes:
        return [], None
    spans = view.node_index(key, nodes[0][0], nodes[-1][0])
    return [(m, n, s.entries) for (m, n), s in zip(nodes, spans, strict=True)], after


class DumpSource:
    """An RDB file: :func:`rstore.inspect_rdb` (its pending lists whole, kept only for each
    group's oldest entry), :func:`rstore.index_rdb` for the nodes' offsets, then
    :func:`rstore.read_rdb_nodes` a page at a time.  ``db``: that database only (all when
    ``None``)."""

    def __init__(self, path: str, db: int | None = None) -> None:
        self.path = path
        self.db = db
        self.kind, self.location = "RDB file", _shown_path(path)
        self.details = ""
        self.node_limits = DEFAULT_NODE_LIMITS
        self.limits_origin = "Redis's defaults (a dump does not record the server's settings)"
        self._oldest: dict[tuple[int, bytes, bytes], tuple[ID, int | None]] = {}
        self._spans: dict[tuple[int, bytes], tuple[rstore.NodeSpan, ...]] = {}

    def streams(self, pattern: bytes | None) -> list[StreamInfo]:
        summary = rstore.inspect_rdb(self.path, pending=True)
        self.details = f"RDB version {summary.rdb_version}, {summary.size or 0:,} bytes"
        chosen = []
        for info in summary.streams:
            if (self.db is None or info.db == self.db) and (
                pattern is None or rstore.key_matches(pattern, info.key)
            ):
                for group in info.groups:  # the oldest pending entry; the rest is let go
                    if group.pending:
                        first = group.pending[0]
                        at = None if first.released else first.delivery_time_ms
                        self._oldest[(info.db, info.key, group.state.name)] = (first.id, at)
                groups = tuple(_without_pending(g) for g in info.groups)
                chosen.append(replace(info, groups=groups))
        wanted = {(i.db, i.key) for i in chosen}
        for stream in rstore.index_rdb(self.path) if wanted else ():
            if (stream.db, stream.key) in wanted:
                self._spans[(stream.db, stream.key)] = stream.nodes
        return sorted(chosen, key=_stream_key)

    def groups(self, info: StreamInfo, now_ms: int) -> tuple[GroupReport, ...]:
        out = []
        for group in info.groups:
            report = _group_report(group)
            oldest = self._oldest.get((info.db, info.key, group.state.name))
            if oldest is not None:
                entry_id, delivered_ms = oldest
                idle = None if delivered_ms is None else max(now_ms - delivered_ms, 0)
                report = replace(report, oldest_pending_id=entry_id, oldest_pending_idle_ms=idle)
            out.append(report)
        return tuple(out)

    def node_pages(self, info: StreamInfo) -> Iterator[NodePage]:
        spans = self._spans.get((info.db, info.key), ())
        for i in range(0, len(spans), PAGE_NODES):
            chunk = spans[i : i + PAGE_NODES]
            after = spans[i - 1].master_id if i else None
            nodes = rstore.read_rdb_nodes(self.path, chunk[0].offset or 0, len(chunk), after=after)
            yield [(m, n, s.entries) for (m, n), s in zip(nodes, chunk, strict=True)]


def _without_pending(group: GroupInfo) -> GroupInfo:
    consumers = tuple(replace(c, pending=()) for c in group.consumers)
    return replace(group, pending=(), consumers=consumers)


def _stream_key(info: StreamInfo) -> tuple[int, bytes]:
    return info.db, info.key


def _shown_path(path: str) -> str:
    """``path`` made absolute, bytes that are not UTF-8 as ``\\xHH``."""
    return os.fsencode(os.path.abspath(path)).decode("utf-8", "backslashreplace")


# ----------------------------------------------------------------------------- the pass


def _id_times(cols: rstore.Columns) -> array[int]:
    """The batch's ID times as unsigned integers (Columns stores them little-endian)."""
    times = array("Q")
    times.frombytes(cols.ms)
    if sys.byteorder == "big":
        times.byteswap()
    return times


def survey_stream(
    source: ReportSource, info: StreamInfo, now_ms: int, advance: Callable[[int], None]
) -> StreamReport:
    """One stream's report, reading its nodes once; ``advance(n)`` after each page of ``n``
    entries."""
    first, last = info.first_entry_id, info.last_entry_id
    history = None
    if info.state.length and first is not None and last is not None:
        history = EntryHistory(first[0], last[0])
    fill = NodeFill(*source.node_limits)
    for page in source.node_pages(info):
        for _, node, live in page:
            fill.add(live, len(node))
        nodes = [(master_id, node) for master_id, node, _ in page]
        for cols in rstore.iter_columns(nodes, (0, 0), info.state.last_id, batch_entries=1 << 30):
            if history is not None:
                history.add(_id_times(cols))
            advance(cols.count)
    return StreamReport(info, source.groups(info, now_ms), history, fill)


# ----------------------------------------------------------------------------- writing


@contextlib.contextmanager
def _writer(out: str | os.PathLike[str] | IO[str] | IO[bytes]) -> Iterator[Callable[[str], int]]:
    """``write(text) -> bytes written`` into a path (written whole or not at all, by
    :func:`rstore.atomic_file`), a text stream or a binary stream; UTF-8."""
    if isinstance(out, str | os.PathLike):
        with rstore.atomic_file(out) as binary:
            yield lambda text: binary.write(text.encode())
        return
    if isinstance(out, io.TextIOBase):
        text_out = out

        def write_text(text: str) -> int:
            text_out.write(text)
            return len(text.encode())

        yield write_text
        return
    binary_out = cast("IO[bytes]", out)
    yield lambda text: binary_out.write(text.encode())


def write_report(
    out: str | os.PathLike[str] | IO[str] | IO[bytes],
    *,
    store: Store | None = None,
    rdb: str | os.PathLike[str] | None = None,
    pattern: bytes | None = None,
    db: int | None = None,
    now_ms: int | None = None,
    progress: Progress | None = None,
) -> ReportSummary:
    """Write the HTML report of ``store``, or of the RDB file ``rdb`` (one of them), into
    ``out``: a path (written under a temporary name and renamed once complete), or an open
    text or binary stream.  ``pattern``: only the streams whose name matches this glob (KEYS's
    syntax); ``db``: only that database of the dump (every database by default; a store is one
    database).  ``now_ms``: the report's time (Unix ms; now by default), from which ages are
    counted.  ``progress(entries_done, entries_total)`` is called as each stream is read.

    Raises what reading the source raises (:class:`rstore.RStoreError`, :class:`OSError` for
    a file that cannot be read or written).  See the module docstring for what the page shows
    and how the source is read."""
    source: ReportSource
    if store is not None and rdb is None:
        source = StoreSource(store)
    elif rdb is not None and store is None:
        source = DumpSource(os.fspath(rdb), db)
    else:
        raise ValueError("write_report reads a store or an RDB file: give one of store= and rdb=")
    made_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    infos = source.streams(pattern)
    total = sum(i.state.length for i in infos)
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    written = 0
    with _writer(out) as write:
        written += write(page_start(source, infos, made_ms, pattern))
        for number, info in enumerate(infos, start=1):
            report = survey_stream(source, info, made_ms, advance)
            written += write(stream_section(number, report, source, made_ms))
        written += write(page_end())
    return ReportSummary(
        f"{source.kind} {source.location}", len(infos), total, sum(len(i.groups) for i in infos),
        sum(g.state.pel_count for i in infos for g in i.groups), written, made_ms,
    )  # fmt: skip
