"""The replay engine: entries of a source, selected, given IDs by a policy, paced, delivered
to a sink, with a bookmark to resume from (``docs/replay.md``).

:func:`run_replay` does it; :func:`plan_replay` computes what it would do (``--dry-run``)
without writing anything.  Both take the entries of any source of :mod:`.sources` or
:mod:`.remote` and a sink of :mod:`.sinks`.

**IDs.**  With ``new_ids`` every entry gets a new ID by XADD's ``*`` rule (the clock in ms, or
the target stream's last ID plus one).  Otherwise the original ID is kept when it is above the
target stream's last ID, and ``on_conflict`` says what happens to one that is not:
``"fail"`` stops the replay before the batch holding it is written (:class:`ReplayConflict`),
``"skip"`` leaves it out (counted), ``"new-id"`` gives it a new ID.  The engine chooses every
ID itself before writing, so a store target never refuses one mid-batch.

**Bookmarks.**  The position is, per source stream, the last source ID delivered (or skipped
as a conflict): JSON ``{"stream": "ms-seq", ...}`` (stream names that are not UTF-8 are kept
through ``\\udcXX`` escapes).  Into a store it is recorded in the same transaction as the batch
(exactly once); for other sinks ``bookmark`` is a file path, rewritten atomically after the
sink's write returned (at least once).  A rerun skips the entries at or below the position;
``count`` counts the selection from its start, so a rerun of the same command stops at the same
entry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rstore import HeldInterrupts, RStoreError
from rstore.renames import renamed_keywords

from .bookmarks import check_bookmark_file, encode_position, read_bookmark, save_bookmark_file
from .envelope import ReplayEntry
from .pacing import Pacer, PaceSchedule
from .sinks import Sink, SinkError, TargetEntry
from .sources import NodeRun, field_filter

__all__ = [
    "ReplayConflict",
    "ReplayReport",
    "StreamPlan",
    "StreamTally",
    "check_conflicts",
    "plan_replay",
    "run_replay",
]

ID = tuple[int, int]
OnConflict = Literal["fail", "skip", "new-id"]
_UINT64_MAX = (1 << 64) - 1
#: Entries per write into a store (a transaction) and into a server (a pipeline) at top speed.
BATCH_ENTRIES = 5000


class ReplayConflict(RStoreError):
    """A kept ID is not above the target stream's last ID, under ``on_conflict="fail"``.

    ``reason`` says which ID and where; ``str()`` adds the arguments that let such entries
    through when ``avoidable`` (a front end such as the CLI names its own options instead).
    A target stream whose IDs are exhausted is not avoidable."""

    def __init__(self, reason: str, *, avoidable: bool = True) -> None:
        advice = " (on_conflict='skip' or 'new-id', or new_ids=True)" if avoidable else ""
        super().__init__(reason + advice)
        self.reason = reason
        self.avoidable = avoidable


@dataclass
class StreamTally:
    """What a replay did (or would do) for one source stream (``bytes`` of fields and values:
    counted by :func:`plan_replay` only)."""

    target: bytes
    entries: int = 0
    first_id: ID | None = None
    last_id: ID | None = None
    bytes: int = 0
    conflicts: int = 0


@dataclass
class ReplayReport:
    """What :func:`run_replay` did: ``delivered`` entries, ``skipped`` conflicts left out,
    ``renumbered`` conflicts given new IDs, ``resumed`` entries left out as delivered before
    (at or below the bookmark), per source stream tallies, seconds, lag behind the pace
    schedule (seconds), and ``interrupted`` when ^C stopped it between entries."""

    delivered: int = 0
    skipped: int = 0
    renumbered: int = 0
    resumed: int = 0
    streams: dict[bytes, StreamTally] = field(default_factory=dict)
    seconds: float = 0.0
    mean_lag: float = 0.0
    max_lag: float = 0.0
    interrupted: bool = False


@dataclass
class StreamPlan(StreamTally):
    """:func:`plan_replay`'s line for one source stream: its tally, the target's last ID now."""

    target_last_id: ID | None = None


def _next_id(last: ID | None, now_ms: int) -> ID:
    """XADD's automatic ID after ``last`` at ``now_ms``."""
    if last is None or now_ms > last[0]:
        return now_ms, 0
    ms, seq = last
    if seq < _UINT64_MAX:
        return ms, seq + 1
    if ms < _UINT64_MAX:
        return ms + 1, 0
    raise ReplayConflict("the target stream has exhausted its IDs", avoidable=False)


def _selected(
    entries: Iterable[ReplayEntry | None], where: Sequence[bytes], count: int | None
) -> Iterable[ReplayEntry | None]:
    keep = field_filter(where) if where else None
    n = 0
    for entry in entries:
        if count is not None and n >= count:
            return
        if entry is None:
            yield entry
        elif keep is None or keep(entry[2]):
            n += 1
            yield entry


class _Ids:
    """The ID policy, with the target streams' last IDs as the replay moves them."""

    def __init__(self, sink: Sink, new_ids: bool, on_conflict: OnConflict) -> None:
        if on_conflict not in ("fail", "skip", "new-id"):
            raise ValueError(f"on_conflict must be fail, skip or new-id, not {on_conflict!r}")
        self.sink = sink
        self.new_ids = new_ids
        self.on_conflict = on_conflict
        self.lasts: dict[bytes, ID | None] = {}

    def last(self, target: bytes) -> ID | None:
        if target not in self.lasts:
            self.lasts[target] = self.sink.last_id(target)
        return self.lasts[target]

    def choose(self, source: bytes, target: bytes, entry_id: ID) -> tuple[ID | None, bool]:
        """The ID to write (``None``: skip it) and whether it conflicted."""
        if not self.sink.checks_ids and not self.new_ids:
            return entry_id, False
        last = self.last(target)
        conflict = False
        if self.new_ids:
            chosen = _next_id(last, int(time.time() * 1000))
        elif last is None or entry_id > last:
            if entry_id == (0, 0):
                conflict = True
            chosen = entry_id
        else:
            conflict = True
            chosen = entry_id
        if conflict:
            if self.on_conflict == "skip":
                return None, True
            if self.on_conflict == "fail":
                raise ReplayConflict(
                    f"entry {entry_id[0]}-{entry_id[1]} of {_shown(source)} is not above the "
                    f"last ID of {_shown(target)} "
                    f"({_id_text(last)}); nothing of its batch was written"
                )
            chosen = _next_id(last, int(time.time() * 1000))
        self.lasts[target] = chosen
        return chosen, conflict


def check_conflicts(
    firsts: Mapping[bytes, ID], sink: Sink, *, target: Callable[[bytes], bytes] | None = None
) -> None:
    """Raise :class:`ReplayConflict` before anything is written when the first entry to be
    replayed of a source stream (``firsts``: stream -> its first selected ID after the
    bookmark) is not above its target stream's last ID -- what ``on_conflict="fail"`` would
    otherwise find only at that stream's turn, after the streams before it were written.
    Source IDs rise, so a stream whose first entry is above the target's last ID has no later
    conflict (unless two streams go into one target, or the target is written meanwhile)."""
    found = []
    for stream, first in firsts.items():
        to = target(stream) if target else stream
        last = sink.last_id(to) if sink.checks_ids else None
        if first == (0, 0) or (last is not None and first <= last):
            found.append(f"{_shown(stream)} from {_id_text(first)} into {_shown(to)} "
                         f"(last ID {_id_text(last)})")  # fmt: skip
    if found:
        raise ReplayConflict(
            f"kept IDs not above the target's last ID: {'; '.join(found)}; nothing was written"
        )


def _id_text(entry_id: ID | None) -> str:
    return "0-0" if entry_id is None else f"{entry_id[0]}-{entry_id[1]}"


def _shown(name: bytes) -> str:
    return "'" + name.decode("utf-8", "backslashreplace") + "'"


def _size(flat: Sequence[bytes]) -> int:
    return sum(map(len, flat))


def plan_replay(
    entries: Iterable[ReplayEntry | NodeRun],
    sink: Sink,
    *,
    target: Callable[[bytes], bytes] | None = None,
    where: Sequence[bytes] = (),
    count: int | None = None,
    new_ids: bool = False,
    on_conflict: OnConflict = "fail",
    schedule: PaceSchedule | None = None,
    position: dict[bytes, ID] | None = None,
) -> tuple[dict[bytes, StreamPlan], float]:
    """What :func:`run_replay` would do, writing nothing: ``{source stream: plan}`` with (entries,
    first/last ID, bytes of fields and values, conflicts with the target as it is now) and the
    seconds the paced replay would take (0.0 at top speed).  Entries at or below ``position``
    (a bookmark's) are left out, as a resumed replay would."""
    ids = _Ids(sink, new_ids, "skip" if on_conflict == "fail" else on_conflict)
    plans: dict[bytes, StreamPlan] = {}
    pace = schedule or PaceSchedule()
    seconds = 0.0
    done = position or {}
    for item in _selected(_expanded(entries), where, count):
        if item is None:
            continue
        stream, entry_id, flat = item
        seen = done.get(stream)
        if seen is not None and entry_id <= seen:
            continue
        plan = plans.get(stream)
        if plan is None:
            to = target(stream) if target else stream
            plan = plans[stream] = StreamPlan(to, target_last_id=ids.last(to))
        due = pace.due(entry_id[0])
        seconds = due if due is not None else 0.0
        _, conflict = ids.choose(stream, plan.target, entry_id)
        plan.conflicts += conflict
        plan.entries += 1
        plan.first_id = plan.first_id or entry_id
        plan.last_id = entry_id
        plan.bytes += _size(flat)
    return plans, seconds


def _tally(
    report: ReplayReport,
    entries: Sequence[tuple[bytes, ID]],
    runs: Sequence[tuple[bytes, bytes, NodeRun]],
) -> None:
    """Count delivered ``(source stream, ID)`` entries and whole nodes in the stream tallies."""
    tallies = report.streams
    tally: StreamTally | None = None
    source = None
    for stream, source_id in entries:
        if stream is not source:
            source, tally = stream, tallies[stream]
        assert tally is not None
        tally.entries += 1
        if tally.first_id is None:
            tally.first_id = source_id
        tally.last_id = source_id
    for stream, _, run in runs:
        tally = tallies[stream]
        tally.entries += run.facts.live
        if tally.first_id is None:
            tally.first_id = run.facts.first_live
        tally.last_id = run.facts.last


def _expanded(items: Iterable[ReplayEntry | NodeRun | None]) -> Iterator[ReplayEntry | None]:
    """``items`` with every :class:`NodeRun` given as its entries."""
    for item in items:
        if type(item) is NodeRun:
            yield from item.entries()
        else:
            yield item  # type: ignore[misc]


def _accepted(
    items: Iterable[ReplayEntry | NodeRun | None], accept: Callable[[NodeRun], bool]
) -> Iterator[ReplayEntry | NodeRun | None]:
    """``items`` with each :class:`NodeRun` that ``accept`` refuses given as its entries;
    ``accept`` is asked when the run is reached, after everything before it was handled."""
    for item in items:
        if type(item) is NodeRun and not accept(item):
            yield from item.entries()
        else:
            yield item


class _Replay:
    """One run of :func:`run_replay`: its report, the position as last recorded, the batch
    held (entries with their source stream and ID, or whole nodes: never both) and the writes
    that deliver it, each counted in the report once the sink took it."""

    def __init__(
        self,
        sink: Sink,
        ids: _Ids,
        target: Callable[[bytes], bytes] | None,
        bookmark: str | None,
        progress: Callable[[ReplayReport], None] | None,
    ) -> None:
        self.began = time.perf_counter()
        self.report = ReplayReport()
        self.sink = sink
        self.ids = ids
        self.target = target
        self.bookmark = bookmark
        self.progress = progress
        # the usual case, inline in deliver: kept IDs checked against the target's last ID
        self.fast = sink.checks_ids and not ids.new_ids
        # the position as last recorded, and as the run found it: entries at or below the
        # latter were delivered by an earlier run (an entry of this run that comes back below
        # what this run delivered is checked against the target like any other)
        self.done: dict[bytes, ID] = {} if bookmark is None else read_bookmark(sink, bookmark)
        if bookmark is not None and not sink.transactional:
            check_bookmark_file(bookmark)  # before the first batch, not after it
        self.start: dict[bytes, ID] = dict(self.done)
        self.pending: list[TargetEntry] = []
        self.pending_from: list[tuple[bytes, ID]] = []  # the source stream and ID of each
        self.nodes: list[tuple[bytes, bytes, NodeRun]] = []  # or whole nodes: source, target
        self.node_entries = 0
        self.moved: dict[bytes, ID] = {}  # the position the pending batch moves to
        self.writing = False
        self.held = HeldInterrupts()

    def goes_whole(self, run: NodeRun) -> bool:
        """Whether ``run`` goes whole: past the bookmark, above the target's last ID."""
        position = self.start.get(run.stream)
        first = run.facts.first_live
        if first is None or (position is not None and position >= first):
            return False
        last = self.ids.last(self.target(run.stream) if self.target else run.stream)
        return run.master_id > (0, 0) if last is None else run.master_id > last

    def deliver(
        self,
        selected: Iterable[ReplayEntry | NodeRun | None],
        pacer: Pacer | None,
        batch_entries: int,
    ) -> None:
        """Hold the ``selected`` entries past the position, each with the ID the policy gives
        it (a conflict counted, a skipped one left out), and the accepted nodes, writing them
        every ``batch_entries``; a ``None`` writes what is held."""
        report, start, ids, sink, flush = self.report, self.start, self.ids, self.sink, self.flush
        pending, pending_from, nodes = self.pending, self.pending_from, self.nodes
        moved, fast, new_ids, lasts = self.moved, self.fast, ids.new_ids, ids.lasts
        current: bytes | None = None
        seen: ID | None = None
        tally = StreamTally(b"")
        to = b""
        for item in selected:
            if item is None:  # a source following live has nothing more for now
                flush()
                continue
            if type(item) is NodeRun:
                stream = item.stream
            else:
                stream, entry_id, flat = item  # type: ignore[misc]
            if stream != current:
                current, seen = stream, start.get(stream)
                tally = self._tally_of(stream)
                to = tally.target
                if fast:
                    ids.last(to)
            if type(item) is NodeRun:  # accepted: it goes whole
                self._hold_node(stream, to, item, batch_entries)
                continue
            if seen is not None and entry_id <= seen:
                report.resumed += 1
                continue
            if pacer is not None:
                pacer.wait(entry_id[0], flush)
            if fast:
                last = lasts.get(to)
                if (last is None and entry_id != (0, 0)) or (last is not None and entry_id > last):
                    lasts[to] = entry_id
                    chosen: ID | None = entry_id
                    conflict = False
                else:
                    chosen, conflict = ids.choose(stream, to, entry_id)
            elif sink.checks_ids or new_ids:
                chosen, conflict = ids.choose(stream, to, entry_id)
            else:
                chosen, conflict = entry_id, False
            moved[stream] = entry_id
            if conflict:
                tally.conflicts += 1
                if chosen is None:
                    report.skipped += 1
                    continue
                report.renumbered += 1
            if nodes:
                flush()
            pending.append((to, chosen, flat))  # type: ignore[arg-type]
            pending_from.append((stream, entry_id))
            if len(pending) >= batch_entries:
                flush()

    def _tally_of(self, stream: bytes) -> StreamTally:
        """The report's tally of the source ``stream``, made on its first entry."""
        found = self.report.streams.get(stream)
        if found is None:
            to = self.target(stream) if self.target else stream
            found = self.report.streams[stream] = StreamTally(to)
        return found

    def _hold_node(self, stream: bytes, to: bytes, run: NodeRun, batch_entries: int) -> None:
        """Hold the accepted ``run`` to go whole into ``to``, after the entries held."""
        if self.pending:
            self.flush()
        self.nodes.append((stream, to, run))
        self.node_entries += run.facts.live
        self.moved[stream] = self.ids.lasts[to] = run.facts.last
        if self.node_entries >= batch_entries:
            self.flush()

    def flush(self) -> None:
        """Write what is held, with the position it moves to."""
        if not self.pending and not self.nodes and not self.moved:
            return
        bookmark = self.bookmark
        value = None if bookmark is None else encode_position({**self.done, **self.moved})
        self.held.hold()  # a Ctrl-C from here is raised once the batch is written and counted
        try:
            self._settle(value)
        finally:
            self.held.holding = False
        self.held.release()

    def _settle(self, value: bytes | None) -> None:
        """Write the batch held with the bookmark ``value``; then record the position (in a
        file for a sink that is not transactional), count the batch, report progress.  A
        failed write leaves a bookmark file at the last entry the sink took."""
        sink, bookmark = self.sink, self.bookmark
        self.writing = True
        try:
            self._write(value)
        except SinkError as exc:
            self.writing = False
            if exc.delivered and bookmark is not None and not sink.transactional:
                part = dict(self.pending_from[: exc.delivered])
                save_bookmark_file(bookmark, encode_position({**self.done, **part}))
            raise
        self.writing = False
        if bookmark is not None and value is not None and not sink.transactional:
            save_bookmark_file(bookmark, value)
        self.done.update(self.moved)
        _tally(self.report, self.pending_from, self.nodes)
        self.report.delivered += len(self.pending) + self.node_entries
        self.pending.clear()
        self.pending_from.clear()
        self.nodes.clear()
        self.node_entries = 0
        self.moved.clear()
        if self.progress is not None:
            self.report.seconds = time.perf_counter() - self.began
            self.progress(self.report)

    def _write(self, value: bytes | None) -> None:
        """Hand the batch held to the sink: whole nodes, or entries (with the bookmark when
        the sink records it in the same transaction)."""
        mark = None if self.bookmark is None or value is None else (self.bookmark, value)
        if self.nodes:
            whole = [(to, run.master_id, run.node) for _, to, run in self.nodes]
            self.sink.write_nodes(whole, mark)  # type: ignore[attr-defined]
        elif self.sink.transactional:
            self.sink.write(self.pending, mark)
        else:
            self.sink.write(self.pending, None)


@renamed_keywords(checkpoint="bookmark")
def run_replay(
    entries: Iterable[ReplayEntry | NodeRun | None],
    sink: Sink,
    *,
    target: Callable[[bytes], bytes] | None = None,
    where: Sequence[bytes] = (),
    count: int | None = None,
    new_ids: bool = False,
    on_conflict: OnConflict = "fail",
    pacer: Pacer | None = None,
    bookmark: str | None = None,
    batch_entries: int = BATCH_ENTRIES,
    progress: Callable[[ReplayReport], None] | None = None,
) -> ReplayReport:
    """Replay ``entries`` (a source's, in its order) into ``sink``: see the module docstring.
    A ``None`` among the entries (:func:`rstore.follow_store` between waits) delivers the
    entries held at once.

    Whole nodes (:class:`rstore.NodeRun`, from :func:`rstore.runs_from_store` and
    :func:`rstore.runs_from_rdb`) go unchanged into a sink that takes them (``write_nodes``:
    :class:`StoreSink`) when the IDs are kept, nothing filters or counts the entries, the
    replay is not paced, and the node lies above the target stream's last ID and past the
    bookmark; otherwise they are replayed entry by entry, with the same result.

    ``target`` maps a source stream name to the target stream's (default: the same name);
    ``where`` holds ``field=glob`` conditions (:func:`rstore.field_filter`); ``count`` the most
    entries selected; ``pacer`` the pace (default: top speed); ``bookmark`` the name of the
    bookmark in a transactional sink, else a file path (``checkpoint=``, its name before, still
    works and warns); ``progress`` is called with the
    report after every write.  ^C (``KeyboardInterrupt``) between writes delivers the entries
    already due, then returns the report with ``interrupted`` set; a failed write raises, the
    bookmark left at the last entry really delivered."""
    if batch_entries < 1:
        raise ValueError("batch_entries must be at least 1")
    replay = _Replay(sink, _Ids(sink, new_ids, on_conflict), target, bookmark, progress)
    report = replay.report
    one_by_one = bool(where) or count is not None or (pacer is not None and pacer.schedule.paced)
    if getattr(sink, "write_nodes", None) and replay.fast and not one_by_one:
        selected: Iterable[ReplayEntry | NodeRun | None] = _accepted(entries, replay.goes_whole)
    else:
        plain = _expanded(entries)
        selected = plain if not where and count is None else _selected(plain, where, count)
    replay.held.install()
    try:
        replay.deliver(selected, pacer, batch_entries)
        replay.flush()
    except KeyboardInterrupt:
        report.interrupted = True
        if not replay.writing:  # stopped between entries: deliver those already due
            replay.flush()
        # stopped inside a write (a second ^C): what landed is what the bookmark says
    finally:
        replay.held.uninstall()
    report.seconds = time.perf_counter() - replay.began
    if pacer is not None:
        report.mean_lag = pacer.mean_lag
        report.max_lag = pacer.max_lag
    return report
