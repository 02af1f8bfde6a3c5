"""What ``rstore replay`` and ``rstore import`` print: stdout line formats, the progress bar
with rate, ETA and lag, the dry-run plan and the summaries."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import click

import rstore

from .format import counted, quote_bytes, token
from .jsonout import dumps, echo_json
from .timefmt import human_time

__all__ = ["LineFormat", "echo_plan", "line_format", "replay_progress", "summary"]

ID = tuple[int, int]
LineFormat = Callable[[bytes, ID, Sequence[bytes]], bytes]
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _iso(ms: int) -> str:
    try:
        moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def _xadd(stream: bytes, entry_id: ID, flat: Sequence[bytes]) -> bytes:
    words = ["XADD", quote_bytes(stream), f"{entry_id[0]}-{entry_id[1]}"]
    words += [quote_bytes(x) for x in flat]
    return " ".join(words).encode("utf-8", "surrogateescape")


def _template(text: str) -> LineFormat:
    """A ``--format`` template: ``{stream}``, ``{id}``, ``{ms}``, ``{time}`` (ISO-8601 UTC),
    ``{fields}`` (``field=value`` pairs, quoted when needed), any other ``{NAME}`` the value of
    field NAME (empty when absent); ``{{``/``}}`` for braces; ``\\t`` for a tab."""
    raw = text.replace("\\t", "\t").replace("{{", "\0").replace("}}", "\1")
    pieces = _PLACEHOLDER.split(raw)
    consts = [p.replace("\0", "{").replace("\1", "}").encode() for p in pieces[0::2]]
    names = [p.encode() for p in pieces[1::2]]

    def render(stream: bytes, entry_id: ID, flat: Sequence[bytes]) -> bytes:
        out = [consts[0]]
        for name, const in zip(names, consts[1:]):
            if name == b"stream":
                out.append(stream)
            elif name == b"id":
                out.append(b"%d-%d" % entry_id)
            elif name == b"ms":
                out.append(b"%d" % entry_id[0])
            elif name == b"time":
                out.append(_iso(entry_id[0]).encode())
            elif name == b"fields":
                out.append(
                    b" ".join(
                        flat[i] + b"=" + quote_bytes(flat[i + 1]).encode("utf-8", "surrogateescape")
                        for i in range(0, len(flat), 2)
                    )
                )
            else:
                value = next((flat[i + 1] for i in range(0, len(flat), 2) if flat[i] == name), b"")
                out.append(value)
            out.append(const)
        return b"".join(out)

    return render


def line_format(fmt: str | None) -> LineFormat:
    """The line of an entry on stdout: ``json`` (the envelope, default), ``xadd`` (an XADD
    command as redis-cli reads it), or a template."""
    if fmt is None or fmt == "json":
        return rstore.encode_entry
    if fmt == "xadd":
        return _xadd
    return _template(fmt)


@contextmanager
def replay_progress(
    label: str, wanted: bool | None, total: int | None, paced: bool = False
) -> Iterator[Callable[[rstore.ReplayReport], None] | None]:
    """A progress bar on stderr (by default only on a terminal) fed with the engine's report:
    entries (of ``total`` when known), rate, ETA (click's) and, when ``paced``, the lag behind
    the pace schedule."""
    if wanted is None:
        wanted = sys.stderr.isatty()
    if not wanted:
        yield None
        return
    began = time.perf_counter()
    shown = [0]
    text = [""]
    bar: Any = click.progressbar(
        length=total or 0,
        label=label,
        file=sys.stderr,
        item_show_func=lambda _: text[0] or None,
        show_pos=True,
    )
    with bar:

        def report(r: rstore.ReplayReport) -> None:
            done = r.delivered + r.skipped
            rate = done / max(time.perf_counter() - began, 1e-9)
            text[0] = f"{rate:,.0f}/s" + (f" lag {r.mean_lag * 1000:.1f} ms" if paced else "")
            if not total:
                bar.length = max(bar.length or 0, done)
            bar.update(done - shown[0], None)
            shown[0] = done

        yield report


def _id_text(entry_id: ID | None) -> str | None:
    return None if entry_id is None else f"{entry_id[0]}-{entry_id[1]}"


def echo_plan(
    plans: dict[bytes, rstore.StreamPlan], seconds: float, target: str, as_json: bool, paced: bool
) -> None:
    """The plan of ``--dry-run``: a block per stream, then the totals."""
    if as_json:
        echo_json(
            {
                "target": target,
                "streams": [
                    {
                        "stream": name,
                        "target": p.target,
                        "entries": p.entries,
                        "first-id": _id_text(p.first_id),
                        "last-id": _id_text(p.last_id),
                        "bytes": p.bytes,
                        "target-last-id": _id_text(p.target_last_id),
                        "conflicts": p.conflicts,
                    }
                    for name, p in plans.items()
                ],
                "entries": sum(p.entries for p in plans.values()),
                "paced-seconds": round(seconds, 3) if paced else None,
            }
        )
        return
    for name, p in plans.items():
        assert p.first_id is not None and p.last_id is not None
        click.echo(f"{_show(name)} -> {_show(p.target)} ({target})")
        click.echo(f"  entries:   {p.entries} ({p.bytes} bytes of fields and values)")
        click.echo(f"  first:     {_id_text(p.first_id)} {human_time(p.first_id[0])}")
        click.echo(f"  last:      {_id_text(p.last_id)} {human_time(p.last_id[0])}")
        if p.target_last_id is not None:
            click.echo(f"  target:    last ID {_id_text(p.target_last_id)}")
        click.echo(f"  conflicts: {p.conflicts}")
    total = sum(p.entries for p in plans.values())
    streams = len(plans)
    line = f"{counted(total, 'entry', 'entries')} of {counted(streams, 'stream')}"
    line += f"; paced replay: {seconds:.3f} s" if paced else "; at top speed"
    click.echo(line + " (dry run: nothing written)")


def _show(name: bytes) -> str:
    return token(name)


def summary(
    verb: str, report: rstore.ReplayReport, as_json: bool, to_stdout: bool, target: str
) -> None:
    """The closing line (none when the entries went to stdout), or the JSON report (on stderr
    when the entries went to stdout)."""
    data: dict[str, Any] = {
        "target": target,
        "delivered": report.delivered,
        "skipped": report.skipped,
        "renumbered": report.renumbered,
        "resumed": report.resumed,
        "streams": [
            {
                "stream": name,
                "target": t.target,
                "entries": t.entries,
                "first-id": _id_text(t.first_id),
                "last-id": _id_text(t.last_id),
                "conflicts": t.conflicts,
            }
            for name, t in report.streams.items()
        ],
        "seconds": round(report.seconds, 3),
        "mean-lag-ms": round(report.mean_lag * 1000, 3),
        "max-lag-ms": round(report.max_lag * 1000, 3),
        "interrupted": report.interrupted,
    }
    if as_json:
        if to_stdout:
            click.echo(dumps(data).encode("utf-8"), err=True)
        else:
            echo_json(data)
        return
    delivered = counted(report.delivered, "entry", "entries")
    parts = [f"{verb} {delivered} to {target} in {report.seconds:.2f} s"]
    if report.skipped:
        parts.append(f"{report.skipped} skipped (conflicts)")
    if report.renumbered:
        parts.append(f"{report.renumbered} given new IDs (conflicts)")
    if report.resumed:
        parts.append(f"{report.resumed} delivered before (bookmark)")
    if report.interrupted:
        parts.append("interrupted")
    if not to_stdout:
        click.echo("; ".join(parts))
