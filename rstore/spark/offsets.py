"""The streaming source's offsets, worked out over a store: pure rstore (no pyspark), so that
the long-lived stream-reader process and the tests without Spark run the same code.

An offset is a dict ``{stream name: ID of the last entry consumed}`` written as JSON text
(``{"events": "1700000000000-3"}``); ``"0-0"`` means nothing consumed yet.  A micro-batch reads
``(start, end]`` of every stream.  What is counted here is exact: entries of the nodes at a
range's edges are decoded, so ``maxEntriesPerTrigger`` cuts batches to the entry.

Data loss (entries after the committed offset removed before they were read) is noticed two
ways (``docs/spark.md``, "Streaming"): within one run of a query the reader remembers, per
stream, the entries added and the entries left after each end offset it handed out, and the
next look compares (exact, catches XDEL and trims); after a restart only the stream's edges
can tell: its first entry lies after the offset while entries were removed from it.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import rstore
from rstore.spark.options import ReadOptions, read_options

__all__ = [
    "ZERO",
    "Advance",
    "Seen",
    "StreamOptions",
    "advance",
    "allocate",
    "count_range",
    "format_id",
    "initial_offsets",
    "next_id",
    "nth_id",
    "offsets_from_json",
    "offsets_to_json",
    "parse_id",
    "stream_names",
    "stream_options",
]

ID = tuple[int, int]
ZERO: ID = (0, 0)
_U64 = (1 << 64) - 1
_ALL = 1 << 30  # batch size when decoding one node: everything in one batch


# ------------------------------------------------------------------ IDs and JSON offsets


def format_id(sid: ID) -> str:
    return f"{sid[0]}-{sid[1]}"


def parse_id(text: object, what: str) -> ID:
    """``"ms-seq"`` or ``"ms"`` (sequence 0) to an ID; a one-line ValueError naming ``what``."""
    raw = str(text).strip()
    ms, dash, seq = raw.partition("-")
    try:
        if not ms.isdigit() or (dash and not seq.isdigit()):
            raise ValueError
        sid = (int(ms), int(seq) if dash else 0)
    except ValueError:
        raise ValueError(f"{what}: {raw!r} is not a stream ID (ms-seq)") from None
    if sid[0] > _U64 or sid[1] > _U64:
        raise ValueError(f"{what}: {raw!r} is not a stream ID (ms-seq)")
    return sid


def next_id(sid: ID) -> ID | None:
    """The smallest ID after ``sid`` (``None`` after the largest)."""
    ms, seq = sid
    if seq < _U64:
        return (ms, seq + 1)
    return (ms + 1, 0) if ms < _U64 else None


def _name(name: bytes) -> str:
    try:
        return name.decode()
    except UnicodeDecodeError:
        raise ValueError(
            f"stream {name!r}: its name is not UTF-8 text, which a Spark offset (JSON) and the "
            "stream column need; exclude it with option streams"
        ) from None


def offsets_to_json(offsets: Mapping[bytes, ID]) -> dict[str, str]:
    """The offset Spark stores: keys sorted (Spark compares offsets as JSON text)."""
    return {_name(k): format_id(offsets[k]) for k in sorted(offsets)}


def offsets_from_json(offset: Mapping[str, Any] | None, what: str = "offset") -> dict[bytes, ID]:
    if not offset:
        return {}
    if not isinstance(offset, Mapping):
        raise ValueError(f"{what}: expected a JSON object of stream: ID, not {offset!r}")
    return {str(k).encode(): parse_id(v, f"{what} of stream {k!r}") for k, v in offset.items()}


# ------------------------------------------------------------------ options


@dataclass(frozen=True)
class StreamOptions:
    """The options of a streaming read, as plain (picklable) values."""

    read: ReadOptions
    starting: ID | None  # where streams start by default; None: at their last ID ($)
    starting_ids: dict[bytes, ID | None]  # per stream (a JSON startingIds); None: $
    group: bytes | None
    max_entries: int | None
    fail_on_data_loss: bool


_EARLIEST = ("earliest", "0", "0-0", "-")
_LATEST = ("latest", "$")


def _start_id(text: str, what: str) -> ID | None:
    if text.lower() in _EARLIEST:
        return ZERO
    if text.lower() in _LATEST:
        return None
    return parse_id(text, what)


def _starting(raw: object) -> tuple[ID | None, dict[bytes, ID | None]]:
    text = str(raw).strip()
    if not text.startswith("{"):
        return _start_id(text, "option startingIds"), {}
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise ValueError(
            f"option startingIds={text!r}: expected earliest (0-0), latest ($), an ID or a JSON "
            'object of stream: ID ({"events": "1700000000000-0", "audit": "$"})'
        )
    ids = {
        str(k).encode(): _start_id(str(v).strip(), f"option startingIds, stream {k!r}")
        for k, v in doc.items()
    }
    return ZERO, ids


def stream_options(options: Mapping[str, str]) -> StreamOptions:
    """Check and convert the options of ``spark.readStream.format("rstore")``."""
    read = read_options(options)
    if read.kind != "store":
        raise ValueError(
            f"{read.path}: streaming reads need a store directory (an RDB file does not grow); "
            'read dumps with spark.read.format("rstore")'
        )
    if read.table != "entries":
        raise ValueError(f"option table={read.table}: streaming reads give the entries table only")
    for name in ("start", "end"):
        if options.get(name) is not None:
            raise ValueError(
                f"option {name}: not for streaming reads; use startingIds (where to begin) "
                "and maxEntriesPerTrigger (how much per batch)"
            )
    starting, ids = _starting(options.get("startingIds", "earliest"))
    group = options.get("group")
    raw_max = options.get("maxEntriesPerTrigger")
    max_entries = None
    if raw_max is not None:
        try:
            max_entries = int(str(raw_max))
        except ValueError:
            max_entries = 0
        if max_entries < 1:
            raise ValueError(
                f"option maxEntriesPerTrigger={raw_max!r}: expected a positive integer"
            )
    fail = str(options.get("failOnDataLoss", "true")).strip().lower()
    if fail not in ("true", "false"):
        raise ValueError(f"option failOnDataLoss={fail!r}: expected true or false")
    if group is not None and not str(group):
        raise ValueError("option group: expected a consumer group name")
    return StreamOptions(
        read=read,
        starting=starting,
        starting_ids=ids,
        group=None if group is None else str(group).encode(),
        max_entries=max_entries,
        fail_on_data_loss=fail == "true",
    )


# ------------------------------------------------------------------ counting over a view


def _wanted(read: ReadOptions, name: bytes) -> bool:
    """Whether option ``streams`` (names, or one glob) covers stream ``name``."""
    if read.streams is not None:
        return name in read.streams
    return read.pattern is None or rstore.key_matches(read.pattern, name)


def stream_names(view: rstore.StoreView, read: ReadOptions) -> list[bytes]:
    """The store's streams the query reads, sorted (names must be UTF-8)."""
    names = [n for n in view.keys(read.pattern) if _wanted(read, n)]
    for n in names:
        _name(n)
    return names


def _node_ids(view: rstore.StoreView, name: bytes, master: ID, lo: ID, hi: ID) -> list[ID]:
    """The IDs of the live entries of the node starting at ``master`` with lo <= id <= hi."""
    for m, node in view.nodes(name, master, hi):
        ids: list[ID] = []
        for cols in rstore.iter_columns([(m, node)], lo, hi, batch_entries=_ALL):
            n = cols.count
            ms = struct.unpack(f"<{n}q", cols.ms)
            seq = struct.unpack(f"<{n}q", cols.seq)
            ids += [(a & _U64, b & _U64) for a, b in zip(ms, seq, strict=True)]
        return ids
    return []


def count_range(view: rstore.StoreView, name: bytes, lo: ID, hi: ID) -> int:
    """The live entries of ``name`` with ``lo <= id <= hi``, exactly (the nodes at both edges
    are decoded, the others counted from their headers)."""
    if lo > hi:
        return 0
    spans = view.node_index(name, lo, hi)
    if not spans:
        return 0
    first = len(_node_ids(view, name, spans[0].master_id, lo, hi))
    if len(spans) == 1:
        return first
    middle = sum(s.entries for s in spans[1:-1])
    return first + middle + len(_node_ids(view, name, spans[-1].master_id, lo, hi))


def nth_id(view: rstore.StoreView, name: bytes, lo: ID, hi: ID, k: int) -> ID:
    """The ID of the ``k``-th (from 1) live entry of ``name`` with ``lo <= id <= hi``; there
    must be at least ``k``."""
    before = 0
    for i, span in enumerate(view.node_index(name, lo, hi)):
        exact = i == 0 or before + span.entries >= k
        ids = _node_ids(view, name, span.master_id, lo, hi) if exact else []
        held = len(ids) if exact else span.entries
        if before + held >= k:
            return ids[k - before - 1]
        before += held
    raise ValueError(f"stream {name!r} holds fewer than {k} entries in the range")


def allocate(backlog: Mapping[bytes, int], limit: int | None) -> dict[bytes, int]:
    """How many entries each stream gives to a batch of at most ``limit`` entries: a share of
    the limit in proportion to each stream's backlog (rounded down), the rest to the streams in
    name order, so the batch holds exactly ``min(limit, total)``."""
    total = sum(backlog.values())
    if limit is None or total <= limit:
        return dict(backlog)
    take = {n: b * limit // total for n, b in backlog.items()}
    left = limit - sum(take.values())
    for n in sorted(backlog):
        extra = min(left, backlog[n] - take[n])
        take[n] += extra
        left -= extra
    return take


# ------------------------------------------------------------------ offsets


@dataclass(frozen=True)
class Seen:
    """What the reader saw of a stream when it handed out the offset ``at``: the stream's
    entries-added counter and the live entries after ``at`` then."""

    at: ID
    entries_added: int
    live_after: int


def _seen(state: Any, at: ID, live_after: int) -> Seen | None:
    """A memory of the stream at ``at`` (none for an offset past the stream's last ID: entries
    added later may land before it)."""
    added = state.entries_added
    if added is None or at > state.last_id:
        return None
    return Seen(at, added, live_after)


def _live_after(view: rstore.StoreView, name: bytes, at: ID, last: ID) -> int:
    after = next_id(at)
    return 0 if after is None else count_range(view, name, after, last)


def initial_offsets(
    view: rstore.StoreView, opts: StreamOptions, group_ids: Mapping[bytes, ID]
) -> tuple[dict[bytes, ID], dict[bytes, Seen]]:
    """Where a new query starts: the group's last-delivered ID where ``group_ids`` has one,
    else ``startingIds`` (a stream a JSON object leaves out starts at 0-0; one it names that
    does not exist yet starts there when it appears); and what was seen of each stream."""
    offsets: dict[bytes, ID] = {}
    seen: dict[bytes, Seen] = {}
    for name, sid in opts.starting_ids.items():
        if _wanted(opts.read, name):
            offsets[name] = ZERO if sid is None else sid
    for name in stream_names(view, opts.read):
        state = view.state(name)
        if state is None:
            continue
        at = group_ids[name] if name in group_ids else opts.starting_ids.get(name, opts.starting)
        at = state.last_id if at is None else at
        offsets[name] = at
        s = _seen(state, at, _live_after(view, name, at, state.last_id))
        if s is not None:
            seen[name] = s
    return {k: offsets[k] for k in sorted(offsets)}, seen


def _lost(state: Any, start: ID, seen: Seen | None, live_after: int) -> str | None:
    """Why entries after ``start`` are known (or, after a restart, likely) to have been removed
    before they were read; ``None`` when nothing was lost."""
    if seen is not None and seen.at == start and state.entries_added is not None:
        expected = seen.live_after + state.entries_added - seen.entries_added
        if live_after < expected:
            return (
                f"{expected - live_after} entries after {format_id(start)} were deleted or "
                "trimmed before they were read"
            )
        return None
    if start == ZERO:
        return None  # nothing read yet: the stream is read from its first surviving entry
    removed = state.entries_added is None or state.entries_added > state.length
    if state.length == 0:
        if removed and state.last_id > start:
            return (
                f"the stream is empty and its last ID {format_id(state.last_id)} is after "
                f"{format_id(start)}: the entries after it were removed before they were read"
            )
    elif removed and state.first_id > start:
        return (
            f"its first entry {format_id(state.first_id)} is after {format_id(start)}: entries "
            "between them may have been trimmed before they were read"
        )
    return None


@dataclass
class Advance:
    """The outcome of :func:`advance`."""

    end: dict[bytes, ID]
    seen: dict[bytes, Seen]
    lost: list[str]  # one line per stream that lost entries


def advance(
    view: rstore.StoreView,
    opts: StreamOptions,
    start: Mapping[bytes, ID],
    target: Mapping[bytes, ID] | None,
    max_rows: int | None,
    seen: Mapping[bytes, Seen],
) -> Advance:
    """The end offset of the next batch from ``start``: every stream read up to its last ID
    (or to ``target``'s, the AvailableNow snapshot; streams outside it wait), at most
    ``max_rows`` entries in all (split by :func:`allocate`).  Streams not in ``start`` that
    match the query are new: read from 0-0, and named in the offset once they hold entries;
    streams in ``start`` that the query no longer reads keep their offset."""
    wanted = set(stream_names(view, opts.read))
    end: dict[bytes, ID] = {}
    new_seen: dict[bytes, Seen] = {}
    lost: list[str] = []
    backlog: dict[bytes, int] = {}
    bounds: dict[bytes, tuple[ID, ID, int, Any]] = {}
    for name in sorted(wanted | set(start)):
        at = start.get(name)
        if at is not None:
            end[name] = at  # kept as it is: a stream the query no longer reads, or gone
        state = view.state(name) if name in wanted else None
        if state is None:
            continue
        live = _live_after(view, name, at or ZERO, state.last_id)
        if at is not None:
            why = _lost(state, at, seen.get(name), live)
            if why is not None:
                lost.append(f"stream {_name(name)!r}: {why}")
            s = _seen(state, at, live)
            if s is not None:
                new_seen[name] = s
        after = next_id(at or ZERO)
        hi = state.last_id
        if target is not None:
            hi = min(hi, target.get(name, ZERO))
        if after is None or after > hi:
            continue
        ahead = live if hi == state.last_id else count_range(view, name, after, hi)
        backlog[name] = ahead
        bounds[name] = (after, hi, live, state)
    take = allocate(backlog, max_rows)
    for name, (after, hi, live, state) in bounds.items():
        n = take[name]
        if n:
            last = hi if n == backlog[name] else nth_id(view, name, after, hi, n)
            end[name] = last
            s = _seen(state, last, live - n)
            if s is not None:
                new_seen[name] = s
    return Advance({k: end[k] for k in sorted(end)}, new_seen, lost)
