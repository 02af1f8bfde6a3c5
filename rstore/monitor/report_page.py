"""The HTML page of ``rstore report`` (:mod:`rstore.monitor.report`): its head and style sheet,
a header with the source and the totals, a table of the streams, and a section per stream with
its size, its history, its node fill and its consumer groups.

The page is written in pieces -- :func:`page_start`, a :func:`stream_section` per stream,
:func:`page_end` -- so that a report of many streams is never held whole.  Every name from the
data (streams, groups: any bytes) is shown as text decoded with ``\\xHH`` escapes for bytes that
are not UTF-8, then HTML-escaped.  Elements carry ``data-*`` attributes with the raw numbers
(IDs as ``ms-seq``, times and durations in ms), for tests and for tools that read the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

import rstore

from .charts import (
    BarColumn,
    bar_rows_chart,
    bins_chart,
    duration_text,
    history_chart,
    rate_text,
    utc_text,
    width_text,
)

if TYPE_CHECKING:
    from rstore import StreamInfo

    from .report import GroupReport, NodeFill, ReportSource, StreamReport

__all__ = ["page_end", "page_start", "shown_name", "stream_section"]

ID = tuple[int, int]

#: Colours of the groups' bars: lag, pending entries, age of the oldest pending entry.
LAG_COLOUR = "#d9822b"
PENDING_COLOUR = "#8250df"
AGE_COLOUR = "#cf222e"

# No fetch of any kind: what the page shows is in it.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_STYLE = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f3f4f6; color: #1f2328;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
    "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono",
  "Liberation Mono", monospace; font-size: 13px; }
header.top { background: #1f2a37; color: #f6f8fa; }
header.top .inner, main { max-width: 1180px; margin: 0 auto; padding: 0 22px; }
header.top .inner { padding-top: 18px; padding-bottom: 16px; }
header.top h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; letter-spacing: .01em; }
header.top h1 span { color: #9fb3c8; font-weight: 400; }
header.top p { margin: 2px 0; color: #c9d4df; }
header.top code { color: #fff; background: rgba(255,255,255,.1); padding: 1px 5px;
  border-radius: 4px; }
main { padding-bottom: 40px; }
h2 { font-size: 19px; margin: 0 0 12px; font-weight: 600; }
h2 .kind { color: #57606a; font-weight: 400; font-size: 15px; margin-right: 4px; }
h2 code { font-size: 18px; background: #eef1f4; padding: 1px 6px; border-radius: 4px; }
h3 { font-size: 15px; margin: 22px 0 8px; font-weight: 600; color: #24292f; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(165px, 1fr));
  gap: 10px; margin: 18px 0; }
.card { background: #fff; border: 1px solid #d8dee4; border-radius: 6px; padding: 9px 12px; }
section .card { background: #f8f9fb; }
.card .label { font-size: 11.5px; color: #57606a; text-transform: uppercase;
  letter-spacing: .05em; }
.card .value { font-size: 19px; font-weight: 600; font-variant-numeric: tabular-nums;
  overflow-wrap: anywhere; }
.card .sub { font-size: 12px; color: #57606a; overflow-wrap: anywhere; }
section.stream, section.streams, p.empty { background: #fff; border: 1px solid #d8dee4;
  border-radius: 8px; padding: 18px 20px; margin-top: 20px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid #eaeef2; text-align: right;
  white-space: nowrap; }
th { font-size: 12px; color: #57606a; font-weight: 600; background: #f6f8fa; }
th:first-child, td:first-child, td.name { text-align: left; }
td.name { white-space: normal; overflow-wrap: anywhere; }
a { color: #0969da; text-decoration: none; }
figure { margin: 0; }
figcaption, .note { color: #57606a; font-size: 12.5px; margin: 4px 0 0; }
.pair { display: flex; gap: 20px; flex-wrap: wrap; }
svg { display: block; overflow: visible; }
svg text { fill: #57606a; font-size: 12px; }
svg text.chart-title { fill: #24292f; font-size: 13px; font-weight: 600; }
svg text.axis-title, svg text.note { fill: #6e7781; font-size: 11.5px; }
svg text.value { fill: #24292f; font-size: 11.5px; }
svg text.none { fill: #8c959f; font-size: 11.5px; font-style: italic; }
svg text.row-name { fill: #24292f; font-size: 12.5px; }
svg text.marker-text { fill: #24292f; font-size: 11.5px; }
.muted { color: #8c959f; }
footer { max-width: 1180px; margin: 0 auto; padding: 0 22px 30px; color: #6e7781;
  font-size: 12px; }
"""


def shown_name(name: bytes) -> str:
    """A stream or group name as the page shows it, HTML-escaped: bytes that are not UTF-8 as
    ``\\xHH``."""
    return escape(name.decode("utf-8", "backslashreplace"))


def _id(value: ID | None) -> str:
    return "-" if value is None else f"{value[0]}-{value[1]}"


def _num(value: int | None) -> str:
    return '<span class="muted">unknown</span>' if value is None else f"{value:,}"


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _ago(now_ms: int, ms: int) -> str:
    """How long before the report's time ``ms`` is."""
    return f"{duration_text(now_ms - ms)} ago" if ms <= now_ms else "after the report's time"


def _counted(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _card(label: str, value: str, sub: str = "", name: str = "", raw: object = None) -> str:
    data = f' data-name="{name}"' if name else ""
    data += f' data-value="{escape(str(raw))}"' if raw is not None else ""
    extra = f'<div class="sub">{sub}</div>' if sub else ""
    return (
        f'<div class="card"{data}><div class="label">{label}</div>'
        f'<div class="value">{value}</div>{extra}</div>'
    )


# ----------------------------------------------------------------------------- page start


def page_start(
    source: ReportSource, infos: Sequence[StreamInfo], made_ms: int, pattern: bytes | None
) -> str:
    """The page up to the first stream's section: head, header, totals, table of streams (or
    the sentence saying there are none)."""
    title = f"rstore report: {source.kind} {source.location}"
    chosen = f" · streams matching <code>{shown_name(pattern)}</code>" if pattern else ""
    details = f" · {escape(source.details)}" if source.details else ""
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="rstore {escape(rstore.__version__)}">\n'
        f"<title>{escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n",
        f'<header class="top"><div class="inner"><h1>rstore report <span>· queue health</span>'
        f'</h1><p>{escape(source.kind)} <code class="source">{escape(source.location)}</code>'
        f"{details}{chosen}</p>"
        f'<p>made <time data-ms="{made_ms}">{utc_text(made_ms, seconds=False)}</time> '
        f"by rstore {escape(rstore.__version__)}</p></div></header>\n<main>\n",
        _totals(infos),
    ]
    if not infos:
        what = "no stream matches this pattern" if pattern else "there are no streams"
        parts.append(f'<p class="empty" data-streams="0">No streams: {what} in the '
                     f"{escape(source.kind)}.</p>\n")  # fmt: skip
    elif len(infos) > 1:
        parts.append(_stream_table(infos, made_ms))
    return "".join(parts)


def _totals(infos: Sequence[StreamInfo]) -> str:
    entries = sum(i.state.length for i in infos)
    groups = sum(len(i.groups) for i in infos)
    pending = sum(g.state.pel_count for i in infos for g in i.groups)
    nodes = sum(i.nodes for i in infos)
    firsts = [i.first_entry_id[0] for i in infos if i.first_entry_id and i.state.length]
    lasts = [i.last_entry_id[0] for i in infos if i.last_entry_id and i.state.length]
    span = (
        _card("History", duration_text(max(lasts) - min(firsts)),
              f"{utc_text(min(firsts), seconds=False)} → {utc_text(max(lasts), seconds=False)}")
        if firsts and lasts else _card("History", "none")
    )  # fmt: skip
    return (
        '<section class="cards totals">'
        + _card("Streams", f"{len(infos):,}", name="streams", raw=len(infos))
        + _card("Entries", f"{entries:,}", name="entries", raw=entries)
        + _card("Consumer groups", f"{groups:,}", name="groups", raw=groups)
        + _card("Pending entries", f"{pending:,}", name="pending", raw=pending)
        + _card("Nodes", f"{nodes:,}", name="nodes", raw=nodes)
        + span
        + "</section>\n"
    )


def _stream_table(infos: Sequence[StreamInfo], made_ms: int) -> str:
    rows = []
    for number, info in enumerate(infos, start=1):
        lags = [g.lag for g in info.groups]
        known = [lag for lag in lags if lag is not None]
        lag = f"{max(known):,}" if known else ("unknown" if lags else "-")
        pending = sum(g.state.pel_count for g in info.groups)
        last = info.last_entry_id
        latest = "-" if last is None or not info.state.length else _ago(made_ms, last[0])
        db = f'<span class="muted"> db {info.db}</span>' if info.db else ""
        rows.append(
            f'<tr><td class="name"><a href="#stream-{number}"><code>{shown_name(info.key)}'
            f"</code></a>{db}</td><td>{info.state.length:,}</td><td>{len(info.groups)}</td>"
            f"<td>{pending:,}</td><td>{lag}</td><td>{latest}</td></tr>"
        )
    return (
        '<section class="streams"><h2>Streams</h2><table><thead><tr><th>stream</th>'
        "<th>length</th><th>groups</th><th>pending</th><th>largest lag</th>"
        "<th>last entry</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></section>\n"
    )


def page_end() -> str:
    """The rest of the page after the last stream's section."""
    return (
        "</main>\n<footer>Times are UTC; entry times are their IDs' milliseconds, and ages are "
        "counted from the report's time. Entries per minute "
        "are the mean over each bucket. Lag: entries not yet delivered to the group; pending: "
        "delivered, not yet acknowledged.</footer>\n</body>\n</html>\n"
    )


# ----------------------------------------------------------------------------- a stream


def stream_section(number: int, report: StreamReport, source: ReportSource, made_ms: int) -> str:
    """One stream's section: its facts, history chart, node fill and groups."""
    info = report.info
    db = f' <span class="kind">(db {info.db})</span>' if info.db else ""
    attrs = (
        f'id="stream-{number}" data-key="{shown_name(info.key)}" data-db="{info.db}" '
        f'data-length="{info.state.length}" data-nodes="{report.fill.nodes}" '
        f'data-node-bytes="{report.fill.bytes}"'
    )
    if report.history is not None:
        attrs += f' data-bucket-ms="{report.history.width_ms}"'
    return "".join(
        [
            f'<section class="stream" {attrs}>\n<h2><span class="kind">stream</span> '
            f"<code>{shown_name(info.key)}</code>{db}</h2>\n",
            _stream_cards(report, made_ms),
            _history_part(report),
            _fill_part(report.fill, source),
            _groups_part(report.groups, made_ms),
            "</section>\n",
        ]
    )


def _stream_cards(report: StreamReport, made_ms: int) -> str:
    info, fill = report.info, report.fill
    state = info.state
    first = info.first_entry_id if state.length else None
    last = info.last_entry_id if state.length else None

    def edge(label: str, name: str, entry: ID | None) -> str:
        if entry is None:
            return _card(label, "-", "no entries", name=name)
        when = f"{utc_text(entry[0])}<br>{_ago(made_ms, entry[0])}"
        return _card(label, f'<span class="mono">{_id(entry)}</span>', when, name, _id(entry))

    mean = f"{fill.bytes / fill.nodes:,.0f} bytes per node" if fill.nodes else ""
    per_node = f"{fill.entries / fill.nodes:,.1f} entries per node" if fill.nodes else ""
    deleted = state.max_deleted_entry_id
    facts = f"Last generated ID <code>{_id(state.last_id)}</code>" + (
        f" · max deleted ID <code>{_id(deleted)}</code>" if deleted and deleted != (0, 0) else ""
    )
    return (
        '<div class="cards">'
        + _card("Length", f"{state.length:,}", "entries now", "length", state.length)
        + _card(
            "Entries added",
            _num(state.entries_added),
            "ever, deleted ones too",
            "entries-added",
            state.entries_added,
        )
        + edge("First entry", "first-entry", first)
        + edge("Last entry", "last-entry", last)
        + _card("Nodes", f"{fill.nodes:,}", per_node, "nodes", fill.nodes)
        + _card("Listpack bytes", _size(fill.bytes), mean, "node-bytes", fill.bytes)
        + f'</div>\n<p class="note facts">{facts}</p>\n'
    )


def _history_part(report: StreamReport) -> str:
    history = report.history
    if history is None or not any(history.counts):
        return '<h3>Entries over time</h3><p class="note">No entries.</p>\n'
    counts, width = history.counts, history.width_ms
    peak = max(range(len(counts)), key=counts.__getitem__)
    peak_ms = history.origin_ms + peak * width
    per_minute = 60_000 / width
    buckets = "one bar per minute" if width == 60_000 else (
        f"one bar per {width_text(width)}, its height the mean number of entries per minute in it"
    )  # fmt: skip
    caption = (
        f"{_counted(len(counts), 'bucket')} from {utc_text(history.origin_ms, seconds=False)} to "
        f"{utc_text(history.origin_ms + len(counts) * width, seconds=False)}: {buckets}. "
        f"Peak: {rate_text(counts[peak] * per_minute)} entries per minute "
        f"({counts[peak]:,} entries) in the bucket of {utc_text(peak_ms, seconds=False)}."
    )
    return (
        '<h3>Entries over time</h3><figure class="history">'
        + history_chart(counts, history.origin_ms, width)
        + f"<figcaption>{escape(caption)}</figcaption></figure>\n"
    )


_BIN_NAMES = [f"{10 * i}-{10 * (i + 1)} %" for i in range(10)] + ["over 100 %"]
_BIN_AXIS = [(float(i), str(10 * i)) for i in range(11)] + [(10.5, ">100")]


def _fill_chart(
    bins: list[int], total: int, nodes: int, limit: int, what: tuple[str, str, str]
) -> str:
    """A node fill chart; ``what``: its title, the setting that limits it, the unit."""
    title, setting, unit = what
    mean = total / nodes if nodes else 0.0
    if limit <= 0:
        return f'<p class="note">{title}: no limit ({setting} 0); mean {mean:,.1f} per node.</p>'
    return bins_chart(
        _BIN_NAMES,
        bins,
        axis=_BIN_AXIS,
        title=f"{title} (limit {limit:,})",
        x_title=f"% of {setting} ({limit:,})",
        apart=len(_BIN_NAMES) - 1,
        marker=min(mean / limit * 10, len(_BIN_NAMES)),
        marker_text=f"mean {mean:,.{1 if unit == 'entries' else 0}f} {unit}",
    )


def _fill_part(fill: NodeFill, source: ReportSource) -> str:
    if not fill.nodes:
        return '<h3>Node fill</h3><p class="note">No nodes.</p>\n'
    max_entries, max_bytes = fill.max_entries, fill.max_bytes
    entries = _fill_chart(
        fill.entry_bins, fill.entries, fill.nodes, max_entries,
        ("Live entries per node", "stream-node-max-entries", "entries"),
    )  # fmt: skip
    sizes = _fill_chart(
        fill.byte_bins, fill.bytes, fill.nodes, max_bytes,
        ("Listpack bytes per node", "stream-node-max-bytes", "bytes"),
    )  # fmt: skip
    caption = (
        f"{_counted(fill.nodes, 'node')}, {fill.entries / fill.nodes:,.1f} live entries and "
        f"{fill.bytes / fill.nodes:,.0f} bytes per node on average; limits: "
        f"{escape(source.limits_origin)}. A node is closed when it reaches either limit; "
        "deleted entries stay in their node until it empties."
    )
    return (
        f'<h3>Node fill</h3><figure class="fill"><div class="pair">{entries}{sizes}</div>'
        f"<figcaption>{caption}</figcaption></figure>\n"
    )


def _groups_part(groups: Sequence[GroupReport], made_ms: int) -> str:
    if not groups:
        return '<h3>Consumer groups</h3><p class="note">No consumer groups.</p>\n'
    rows = []
    ages: list[int | None] = []
    for group in groups:
        oldest = group.oldest_pending_id
        age = None if oldest is None else max(made_ms - oldest[0], 0)
        ages.append(age)
        rows.append(_group_row(group, age))
    names = [g.name.decode("utf-8", "backslashreplace") for g in groups]
    columns = [
        BarColumn("Lag (not yet delivered)", "lag", [g.lag for g in groups],
                  [_plain(g.lag) for g in groups], LAG_COLOUR),
        BarColumn("Pending (delivered, not acked)", "pending", [g.pending for g in groups],
                  [f"{g.pending:,}" for g in groups], PENDING_COLOUR),
        BarColumn("Oldest pending entry's age", "age", ages,
                  ["-" if a is None else duration_text(a) for a in ages], AGE_COLOUR),
    ]  # fmt: skip
    return (
        f'<h3>Consumer groups ({len(groups)})</h3><table class="groups"><thead><tr>'
        "<th>group</th><th>consumers</th><th>last delivered</th><th>entries read</th>"
        "<th>lag</th><th>pending</th><th>oldest pending</th><th>its age</th>"
        "<th>last delivery</th></tr></thead><tbody>"
        + "".join(rows)
        + '</tbody></table><figure class="groups" style="margin-top:14px">'
        + bar_rows_chart(names, columns)
        + "<figcaption>Each column is scaled to its own largest value. Age: since the oldest "
        "pending entry was added (its ID's time); last delivery: since it was last delivered."
        "</figcaption></figure>\n"
    )


def _plain(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _group_row(group: GroupReport, age_ms: int | None) -> str:
    oldest, idle = group.oldest_pending_id, group.oldest_pending_idle_ms
    data = {
        "data-group": shown_name(group.name),
        "data-consumers": group.consumers,
        "data-last-delivered": _id(group.last_delivered_id),
        "data-entries-read": group.entries_read,
        "data-lag": group.lag,
        "data-pending": group.pending,
        "data-oldest-pending": None if oldest is None else _id(oldest),
        "data-oldest-age-ms": age_ms,
        "data-idle-ms": idle,
    }
    attrs = "".join(f' {k}="{v}"' for k, v in data.items() if v is not None)
    if oldest is None:
        since = "-"
    elif idle is None:
        since = '<span class="muted">released</span>'
    else:
        since = f"{duration_text(idle)} ago"
    return (
        f'<tr class="group"{attrs}><td class="name"><code>{shown_name(group.name)}</code></td>'
        f'<td>{group.consumers:,}</td><td class="mono">{_id(group.last_delivered_id)}</td>'
        f"<td>{_num(group.entries_read)}</td><td>{_num(group.lag)}</td>"
        f'<td>{group.pending:,}</td><td class="mono">{_id(oldest) if oldest else "-"}</td>'
        f"<td>{'-' if age_ms is None else duration_text(age_ms)}</td><td>{since}</td></tr>"
    )
