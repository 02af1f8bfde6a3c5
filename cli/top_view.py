"""What ``rstore top`` shows: a :class:`Frame` made of two health samples (the later one's
values, the rates between them), its rows sorted worst first, as text lines or as JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import rstore

from .format import token
from .jsonout import jsonable
from .timefmt import duration

__all__ = ["SORT_KEYS", "Frame", "frame_json", "frame_lines"]

#: The orders ``top`` knows, each worst first: the groups' lag, pending entries, oldest
#: pending entry's idle time; the streams' entries in per second; their names.
SORT_KEYS = ("lag", "pending", "idle", "rate", "name")

_HEADERS = ("STREAM", "LENGTH", "IN/S", "LAST", "GROUP", "LAG", "PENDING", "DELIV/S",
            "ACK/S", "OLDEST IDLE", "ALIVE")  # fmt: skip
_RIGHT = frozenset({1, 2, 3, 5, 6, 7, 8, 9, 10})  # numeric columns, aligned right


@dataclass(frozen=True)
class Frame:
    """One refresh: the later sample, the rates since the earlier one and the milliseconds
    between the two (``None`` for a first frame), how long the later sample took, the
    order and the filter."""

    source: str
    sample: rstore.HealthSample
    rates: dict[bytes, rstore.StreamRates] | None
    rates_over_ms: int | None
    sample_ms: float
    sort: str = "lag"
    text_filter: str = ""

    def shown_as(self, sort: str, text_filter: str) -> Frame:
        """This frame in another order or with another filter (no new sample)."""
        return dataclasses.replace(self, sort=sort, text_filter=text_filter)

    def streams(self) -> list[rstore.StreamHealth]:
        """The streams shown: those whose name or a group's name holds the filter, worst
        first by :attr:`sort` (name: alphabetical), their groups likewise."""
        needle = self.text_filter.encode("utf-8", "surrogateescape")
        shown = [
            s for s in self.sample.streams
            if needle in s.key or any(needle in g.name for g in s.groups)
        ]  # fmt: skip
        if self.sort == "name":
            return sorted(shown, key=lambda s: s.key)
        return sorted(shown, key=lambda s: (-self._stream_score(s), s.key))

    def groups(self, stream: rstore.StreamHealth) -> list[rstore.GroupHealth]:
        if self.sort in ("name", "rate"):
            return sorted(stream.groups, key=lambda g: g.name)
        return sorted(stream.groups, key=lambda g: (-self._group_score(g), g.name))

    def _stream_score(self, stream: rstore.StreamHealth) -> float:
        if self.sort == "rate":
            rates = self.rates.get(stream.key) if self.rates else None
            return rates.added if rates else 0.0
        return max((self._group_score(g) for g in stream.groups), default=-1.0)

    def _group_score(self, group: rstore.GroupHealth) -> float:
        if self.sort == "pending":
            return float(group.pending)
        if self.sort == "idle":
            return float(group.oldest_pending_idle_ms or 0)
        return float(group.lag or 0)

    def group_rates(self, stream: bytes, group: bytes) -> rstore.GroupRates | None:
        rates = self.rates.get(stream) if self.rates else None
        return rates.groups.get(group) if rates else None


def frame_lines(frame: Frame, keys_help: bool = False) -> list[str]:
    """The frame as text: a title line (the source, the time), a summary line (the counts,
    the sample's cost, the order, the filter), a blank line, a table (a row per group, the
    stream's columns on its first row; a stream without groups has a row of its own)."""
    sample = frame.sample
    groups = sum(len(s.groups) for s in sample.streams)
    moment = datetime.fromtimestamp(sample.now_ms / 1000, timezone.utc)
    title = f"rstore top - {frame.source} - {moment:%Y-%m-%d %H:%M:%S} UTC"
    summary = (
        f"{len(sample.streams)} streams, {groups} groups - sampled in {frame.sample_ms:.1f} ms"
        f" - sort: {frame.sort}" + (f" - filter: {frame.text_filter}" if frame.text_filter else "")
    )
    if keys_help:
        summary += " - keys: s sort, / filter, q quit"
    rows = list(_rows(frame))
    if not rows:
        return [
            title,
            summary,
            "",
            "no streams" + (" match the filter" if frame.text_filter else ""),
        ]
    return [title, summary, "", *_table(rows)]


def _rows(frame: Frame) -> Iterator[tuple[str, ...]]:
    now = frame.sample.now_ms
    for stream in frame.streams():
        rates = frame.rates.get(stream.key) if frame.rates else None
        age = stream.age_ms(now)
        head = (
            token(stream.key), f"{stream.length:,}", _rate(rates.added if rates else None),
            "-" if age is None else duration(age),
        )  # fmt: skip
        groups = frame.groups(stream)
        if not groups:
            yield (*head, "-", "", "", "", "", "", "")
        for i, group in enumerate(groups):
            shown = head if i == 0 else ("", "", "", "")
            yield (*shown, *_group_cells(group, frame.group_rates(stream.key, group.name)))


def _group_cells(group: rstore.GroupHealth, rates: rstore.GroupRates | None) -> tuple[str, ...]:
    idle = group.oldest_pending_idle_ms
    return (
        token(group.name),
        "?" if group.lag is None else f"{group.lag:,}",
        f"{group.pending:,}",
        _rate(rates.delivered if rates else None),
        _rate(rates.acknowledged if rates else None),
        "-" if idle is None else duration(idle),
        f"{group.consumers_alive}/{group.consumers}",
    )


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in _RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return [line(_HEADERS), *(line(r) for r in rows)]


def frame_json(frame: Frame, interval_s: float) -> dict[str, Any]:
    """The frame as a JSON object (docs/monitoring.md#rstore-top has its fields)."""
    now = frame.sample.now_ms
    streams = []
    for stream in frame.streams():
        rates = frame.rates.get(stream.key) if frame.rates else None
        streams.append({
            "stream": stream.key,
            "length": stream.length,
            "entries_added": stream.entries_added,
            "last_id": stream.last_id,
            "last_age_ms": stream.age_ms(now),
            "added_per_s": rates.added if rates else None,
            "groups": [_group_json(g, frame.group_rates(stream.key, g.name), now)
                       for g in frame.groups(stream)],
        })  # fmt: skip
    shown: dict[str, Any] = jsonable({
        "source": frame.source,
        "now_ms": now,
        "interval_s": interval_s,
        "sample_ms": round(frame.sample_ms, 3),
        "rates_over_ms": frame.rates_over_ms,
        "sort": frame.sort,
        "streams": streams,
    })  # fmt: skip
    return shown


def _group_json(
    group: rstore.GroupHealth, rates: rstore.GroupRates | None, now_ms: int
) -> dict[str, Any]:
    return {
        "group": group.name,
        "lag": group.lag,
        "pending": group.pending,
        "entries_read": group.entries_read,
        "last_delivered_id": group.last_delivered_id,
        "consumers": group.consumers,
        "consumers_alive": group.consumers_alive,
        "oldest_pending_id": group.oldest_pending_id,
        "oldest_pending_idle_ms": group.oldest_pending_idle_ms,
        "oldest_pending_age_ms": group.oldest_pending_age_ms(now_ms),
        "delivered_per_s": rates.delivered if rates else None,
        "acknowledged_per_s": rates.acknowledged if rates else None,
    }
