"""Charts drawn as inline SVG text, for pages that must render with no network and no script
(``rstore report``): a histogram of a rate over time, vertical bars over labelled bins, and rows
of horizontal bars comparing a few named things on several measures.

Every chart is a string holding one ``<svg>`` element of a fixed size in pixels, bars placed on
whole pixels (``shape-rendering="crispEdges"``) so that each keeps its exact colour.  Each bar
carries ``data-*`` attributes with the numbers it stands for, and a ``<title>`` the browser
shows on hover.  Texts use the page's font (``svg text`` in its style sheet); colours are
attributes, so a chart keeps them wherever it is pasted.  Times are UTC.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape

__all__ = [
    "BINS_COLOUR",
    "HISTORY_COLOUR",
    "HISTORY_PLOT_WIDTH",
    "BarColumn",
    "bar_rows_chart",
    "bins_chart",
    "compact_number",
    "duration_text",
    "history_chart",
    "nice_ticks",
    "rate_text",
    "time_ticks",
    "utc_text",
    "width_text",
]

#: The fill of the history chart's bars, and of the bins charts' bars.
HISTORY_COLOUR = "#2f6fb0"
BINS_COLOUR = "#2a9d8f"

GRID_COLOUR = "#e3e7ec"
AXIS_COLOUR = "#8c959f"

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

# The history chart: a plot of HISTORY_PLOT_WIDTH pixels, so a history of that many buckets or
# fewer gives every bucket a bar at least one pixel wide.
HISTORY_PLOT_WIDTH = 1000
_HISTORY_LEFT = 60
_HISTORY_RIGHT = 16
_HISTORY_TOP = 26
_HISTORY_PLOT_HEIGHT = 190
_HISTORY_BOTTOM = 52

# Steps between time labels: whole minutes, hours, days, weeks (then multiples of a year).
_TIME_STEPS_MS = tuple(
    m * MINUTE_MS for m in (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080)
) + tuple(d * DAY_MS for d in (14, 30, 61, 91, 182, 365))

# The last millisecond datetime can show (the end of year 9999).
_MAX_SHOWN_MS = 253_402_300_799_999


# ----------------------------------------------------------------------------- numbers and times


def utc_text(ms: int, *, seconds: bool = True) -> str:
    """A Unix time in milliseconds as ``2024-05-01 10:03:12.345 UTC`` (without seconds and
    milliseconds: ``2024-05-01 10:03 UTC``); times beyond year 9999 as ``ms N``."""
    if not 0 <= ms <= _MAX_SHOWN_MS:
        return f"ms {ms}"
    moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
    if not seconds:
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def duration_text(ms: int) -> str:
    """A length of time for people: ``850 ms``, ``42 s``, ``7 min 3 s``, ``3 h 12 min``,
    ``2 d 4 h``."""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s} s" if s else f"{minutes} min"
    hours, m = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {m} min" if m else f"{hours} h"
    days, h = divmod(hours, 24)
    return f"{days} d {h} h" if h else f"{days} d"


def width_text(width_ms: int) -> str:
    """A bucket width: ``1 min``, ``15 min``, ``6 h``, ``1 day``, ``14 days``."""
    if width_ms % DAY_MS == 0:
        days = width_ms // DAY_MS
        return f"{days} day" if days == 1 else f"{days} days"
    if width_ms % HOUR_MS == 0:
        return f"{width_ms // HOUR_MS} h"
    return f"{width_ms // MINUTE_MS} min"


def compact_number(value: float) -> str:
    """A number for an axis: ``0``, ``0.25``, ``12``, ``1.5k``, ``2M``, at most 3 significant
    digits."""
    if value == 0:
        return "0"
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def rate_text(value: float) -> str:
    """A rate for people: ``1,234``, ``56.7``, ``0.25``, ``0.00069`` (no exponents)."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.3g}"
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Values from 0 to at least ``top`` in about ``count`` steps of 1, 2, 2.5 or 5 times a
    power of ten (``[0.0, 1.0]`` when ``top`` is not positive)."""
    if top <= 0:
        return [0.0, 1.0]
    rough = top / count
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= rough)
    steps = math.ceil(top / step - 1e-9)
    return [i * step for i in range(steps + 1)]


def time_ticks(start_ms: int, end_ms: int, most: int = 8) -> tuple[list[int], int]:
    """Round UTC times between ``start_ms`` and ``end_ms`` (at most ``most`` + 1 of them) for
    labels, and the step between them."""
    span = max(end_ms - start_ms, 1)
    step = next((s for s in _TIME_STEPS_MS if span / s <= most), 0)
    if not step:
        step = math.ceil(span / most / (365 * DAY_MS)) * 365 * DAY_MS
    first = -(-start_ms // step) * step
    return list(range(first, end_ms + 1, step)), step


def _time_label(ms: int, step: int, previous: int | None) -> tuple[str, str]:
    """A time label's two lines: the time of day (for steps under a day) and the date (when it
    changed since the label before, or for steps of days)."""
    if not 0 <= ms <= _MAX_SHOWN_MS:
        return "", ""
    moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
    date = moment.strftime("%Y-%m-%d")
    if step >= DAY_MS:
        return date, ""
    before = None
    if previous is not None and 0 <= previous <= _MAX_SHOWN_MS:
        before = datetime.fromtimestamp(previous / 1000, timezone.utc).strftime("%Y-%m-%d")
    return moment.strftime("%H:%M"), "" if date == before else date


def _attrs(values: Mapping[str, object]) -> str:
    """``name="value"`` pairs, escaped, leaving out those whose value is ``None``."""
    return "".join(
        f' {name}="{escape(str(value))}"' for name, value in values.items() if value is not None
    )


def _text(x: float, y: float, text: str, *, cls: str = "", anchor: str = "start") -> str:
    kind = f' class="{cls}"' if cls else ""
    return f'<text x="{x:g}" y="{y:g}" text-anchor="{anchor}"{kind}>{escape(text)}</text>'


# ----------------------------------------------------------------------------- history chart


def history_chart(counts: Sequence[int], origin_ms: int, width_ms: int) -> str:
    """Entries per minute over time: one bar per bucket of ``width_ms`` from ``origin_ms`` (at
    most :data:`HISTORY_PLOT_WIDTH` buckets), its height the bucket's count per minute of its
    width; a y axis of rates, a time axis in UTC, and the bucket width in the top corner.

    Each bar is ``<rect class="bar" data-start-ms=... data-count=...>``; empty buckets have
    none."""
    if not 0 < len(counts) <= HISTORY_PLOT_WIDTH:
        raise ValueError(f"a history chart draws 1 to {HISTORY_PLOT_WIDTH} buckets")
    per_minute = MINUTE_MS / width_ms
    ticks = nice_ticks(max(counts) * per_minute)
    top = ticks[-1]
    left, plot_top, height = _HISTORY_LEFT, _HISTORY_TOP, _HISTORY_PLOT_HEIGHT
    bottom = plot_top + height
    width = left + HISTORY_PLOT_WIDTH + _HISTORY_RIGHT
    parts = [
        f'<svg class="chart history" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{bottom + _HISTORY_BOTTOM}" role="img" '
        f'aria-label="entries per minute over time, buckets of {width_text(width_ms)}">'
    ]
    for value in ticks:  # grid lines and rate labels
        y = bottom - round(value / top * height)
        parts.append(
            f'<line x1="{left}" x2="{left + HISTORY_PLOT_WIDTH}" y1="{y}" y2="{y}" '
            f'stroke="{GRID_COLOUR}" shape-rendering="crispEdges"/>'
        )
        parts.append(_text(left - 8, y + 4, compact_number(value), cls="tick", anchor="end"))
    parts.append('<g class="bars" shape-rendering="crispEdges">')
    parts += _history_bars(counts, origin_ms, width_ms, top)
    parts.append("</g>")
    parts += _time_axis(origin_ms, width_ms, len(counts))
    parts.append(
        f'<line x1="{left}" x2="{left + HISTORY_PLOT_WIDTH}" y1="{bottom}" y2="{bottom}" '
        f'stroke="{AXIS_COLOUR}" shape-rendering="crispEdges"/>'
    )
    mid = plot_top + height // 2
    parts.append(
        f'<text class="axis-title" transform="translate(16 {mid}) rotate(-90)" '
        f'text-anchor="middle">entries / min</text>'
    )
    bucket = f"bucket: {width_text(width_ms)}"
    parts.append(_text(left + HISTORY_PLOT_WIDTH, 14, bucket, cls="note", anchor="end"))
    mean = "" if width_ms == MINUTE_MS else f", mean over each {width_text(width_ms)}"
    parts.append(  # the legend: what a bar is
        f'<rect x="{left}" y="5" width="10" height="10" fill="{HISTORY_COLOUR}"/>'
        + _text(left + 15, 14, f"entries per minute{mean} · times in UTC", cls="note")
    )
    parts.append("</svg>")
    return "".join(parts)


def _bar_span(i: int, n: int) -> tuple[int, int]:
    """The x of bucket ``i`` of ``n`` in the plot and its width, on whole pixels; a gap of one
    pixel between bars four pixels wide or more."""
    x0 = _HISTORY_LEFT + i * HISTORY_PLOT_WIDTH // n
    x1 = _HISTORY_LEFT + (i + 1) * HISTORY_PLOT_WIDTH // n
    return x0, (x1 - x0 - 1 if x1 - x0 >= 4 else x1 - x0)


def _history_bars(counts: Sequence[int], origin_ms: int, width_ms: int, top: float) -> list[str]:
    per_minute = MINUTE_MS / width_ms
    bottom = _HISTORY_TOP + _HISTORY_PLOT_HEIGHT
    bars = []
    for i, count in enumerate(counts):
        if not count:
            continue
        rate = count * per_minute
        h = max(round(rate / top * _HISTORY_PLOT_HEIGHT), 1)
        x, w = _bar_span(i, len(counts))
        start = origin_ms + i * width_ms
        tip = f"{utc_text(start, seconds=False)}: {count:,} entries ({rate_text(rate)} / min)"
        bars.append(
            f'<rect class="bar" x="{x}" y="{bottom - h}" width="{w}" height="{h}" '
            f'fill="{HISTORY_COLOUR}" data-start-ms="{start}" data-count="{count}">'
            f"<title>{escape(tip)}</title></rect>"
        )
    return bars


def _time_axis(origin_ms: int, width_ms: int, buckets: int) -> list[str]:
    """Ticks and two-line labels under the history chart's plot."""
    end_ms = origin_ms + buckets * width_ms
    ticks, step = time_ticks(origin_ms, end_ms)
    bottom = _HISTORY_TOP + _HISTORY_PLOT_HEIGHT
    scale = HISTORY_PLOT_WIDTH / (end_ms - origin_ms)
    parts = []
    previous = None
    for ms in ticks:
        x = _HISTORY_LEFT + round((ms - origin_ms) * scale)
        first, second = _time_label(ms, step, previous)
        previous = ms
        parts.append(
            f'<line x1="{x}" x2="{x}" y1="{bottom}" y2="{bottom + 5}" stroke="{AXIS_COLOUR}" '
            f'shape-rendering="crispEdges"/>'
        )
        parts.append(_text(x, bottom + 19, first, cls="tick", anchor="middle"))
        if second:
            parts.append(_text(x, bottom + 34, second, cls="tick date", anchor="middle"))
    return parts


# ----------------------------------------------------------------------------- bins chart


def bins_chart(
    bins: Sequence[str],
    counts: Sequence[int],
    *,
    axis: Sequence[tuple[float, str]],
    title: str,
    x_title: str,
    apart: int | None = None,
    marker: float | None = None,
    marker_text: str = "",
    width: int = 520,
) -> str:
    """Vertical bars, one per bin, each with its count above it: ``<rect class="bin"
    data-bin=NAME data-count=N>``.  Positions on the x axis are in bins: 0 is the left edge of
    the first bin, ``len(bins)`` the right edge of the last.  ``axis`` labels positions;
    ``apart``, a bin unlike the others (over a limit), is drawn half a bin further right, with
    every position past its left edge; ``marker`` draws a dashed line at a position, with
    ``marker_text`` (a mean, say)."""
    left, right, top, plot_h = 44, 12, 54, 110
    plot_w = width - left - right
    bottom = top + plot_h
    highest = max(counts, default=0) or 1
    slot = plot_w / (len(bins) + (0.5 if apart is not None else 0))

    def x_of(at: float, of_bin: int | None = None) -> int:
        """The x of a position; past the apart bin's left edge (that edge too, as the edge
        of the apart bin itself) half a bin further right."""
        moved = apart is not None and (at > apart or of_bin == apart)
        return left + round((at + (0.5 if moved else 0)) * slot)

    parts = [
        f'<svg class="chart bins" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{bottom + 46}" role="img" aria-label="{escape(title)}">',
        _text(0, 16, title, cls="chart-title"),
        '<g shape-rendering="crispEdges">',
    ]
    for i, (name, count) in enumerate(zip(bins, counts, strict=True)):
        if not count:
            continue
        x0 = x_of(i, i) + 1
        w = max(x_of(i + 1, i) - x0 - 1, 1)
        h = max(round(count / highest * plot_h), 1)
        data = {"data-bin": name, "data-count": count}
        parts.append(
            f'<rect class="bin" x="{x0}" y="{bottom - h}" width="{w}" height="{h}" '
            f'fill="{BINS_COLOUR}"{_attrs(data)}><title>{escape(f"{name}: {count:,}")}</title>'
            "</rect>"
        )
        parts.append(_text(x0 + w / 2, bottom - h - 4, f"{count:,}", cls="value", anchor="middle"))
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{bottom}" y2="{bottom}" '
        f'stroke="{AXIS_COLOUR}"/>'
    )
    for at, label in axis:
        x = x_of(at)
        if at == int(at):
            parts.append(
                f'<line x1="{x}" x2="{x}" y1="{bottom}" y2="{bottom + 4}" stroke="{AXIS_COLOUR}"/>'
            )
        parts.append(_text(x, bottom + 16, label, cls="tick", anchor="middle"))
    parts.append("</g>")
    if marker is not None:
        parts += _marker(x_of(marker), top, bottom, marker_text, left + plot_w)
    parts.append(_text(left + plot_w / 2, bottom + 36, x_title, cls="axis-title", anchor="middle"))
    parts.append(
        f'<text class="axis-title" transform="translate(12 {top + plot_h // 2}) rotate(-90)" '
        'text-anchor="middle">nodes</text></svg>'
    )
    return "".join(parts)


def _marker(x: int, top: int, bottom: int, text: str, right: int) -> list[str]:
    """A dashed vertical line at ``x`` with its text above the plot, on the side with room."""
    end = x > right - 120
    return [
        f'<line class="marker" x1="{x}" x2="{x}" y1="{top - 16}" y2="{bottom}" stroke="#24292f" '
        'stroke-dasharray="4 3"/>',
        _text(x - 5 if end else x + 5, top - 18, text, cls="marker-text",
              anchor="end" if end else "start"),
    ]  # fmt: skip


# ----------------------------------------------------------------------------- bar rows


@dataclass(frozen=True, slots=True)
class BarColumn:
    """One measure of a :func:`bar_rows_chart`: its title, a value per row (``None`` when not
    known), the text shown beside each bar, and the bars' colour.  ``kind`` names the measure
    in the bars' ``data-measure``."""

    title: str
    kind: str
    values: Sequence[int | None]
    texts: Sequence[str]
    colour: str


def bar_rows_chart(names: Sequence[str], columns: Sequence[BarColumn], *, width: int = 1076) -> str:
    """One row per name, one column of horizontal bars per measure, each scaled to its own
    column's largest value: ``<rect class="hbar" data-row=NAME data-measure=KIND
    data-value=N>``.  A row whose value is ``None`` shows its text without a bar."""
    name_w, row_h, head = 200, 28, 30
    col_w = (width - name_w) // max(len(columns), 1)
    height = head + row_h * len(names) + 8
    parts = [
        f'<svg class="chart rows" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="consumer groups compared">'
    ]
    for c, column in enumerate(columns):
        x = name_w + c * col_w
        parts.append(_text(x, 18, column.title, cls="chart-title"))
    for r, name in enumerate(names):
        y = head + r * row_h
        if r % 2 == 0:
            parts.append(
                f'<rect x="0" y="{y}" width="{width}" height="{row_h}" fill="#f6f8fa" '
                f'shape-rendering="crispEdges"/>'
            )
        shown = name if len(name) <= 26 else name[:25] + "…"
        parts.append(
            f'<text x="{name_w - 12}" y="{y + 18}" text-anchor="end" class="row-name">'
            f"{escape(shown)}<title>{escape(name)}</title></text>"
        )
    for c, column in enumerate(columns):
        parts += _column_bars(names, column, name_w + c * col_w, col_w - 24, head, row_h)
    parts.append("</svg>")
    return "".join(parts)


def _column_bars(
    names: Sequence[str], column: BarColumn, x: int, room: int, head: int, row_h: int
) -> list[str]:
    """The bars of one column, leaving 90 pixels of ``room`` for the longest bar's text."""
    highest = max((v for v in column.values if v is not None), default=0) or 1
    parts = []
    for r, (name, value, text) in enumerate(zip(names, column.values, column.texts, strict=True)):
        y = head + r * row_h
        w = 0 if not value else max(round(value / highest * (room - 90)), 2)
        if w:
            data = {"data-row": name, "data-measure": column.kind, "data-value": value}
            parts.append(
                f'<rect class="hbar" x="{x}" y="{y + 6}" width="{w}" height="{row_h - 12}" '
                f'fill="{column.colour}" shape-rendering="crispEdges"{_attrs(data)}/>'
            )
        parts.append(_text(x + w + 6, y + 18, text, cls="value" if value is not None else "none"))
    return parts
