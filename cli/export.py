"""``rstore export``: streams as JSON lines in rstore's envelope, from the store or a dump.

Entries are read a page of nodes at a time (:func:`rstore.batches_from_store`,
:func:`rstore.batches_from_rdb`) and each page is encoded at once
(:func:`rstore.encode_columns`): memory holds one page, and the store's read transactions stay
short.  ``-o FILE`` is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, BinaryIO

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .files import atomic_output, file_errors
from .format import counted, show_path
from .jsonout import dumps, echo_json
from .params import range_bound, to_bytes
from .progress import Progress, progress_option, progress_reporter

__all__ = ["COMMANDS"]

ID = tuple[int, int]


def _bound(text: str, *, is_end: bool, param: str) -> ID:
    ms, _, seq = range_bound(text, is_end=is_end, param=param).partition(b"-")
    return int(ms), int(seq)


class _Tally:
    """What was written, per stream, for the summary."""

    def __init__(self) -> None:
        self.entries = 0
        self.bytes = 0
        self.streams: dict[bytes, list[Any]] = {}  # name -> [entries, first id, last id]

    def add(self, key: bytes, cols: rstore.Columns, size: int) -> None:
        first = bytes(cols.id_data[: int.from_bytes(cols.id_offsets[4:8], "little")])
        start = int.from_bytes(cols.id_offsets[-8:-4], "little")
        last = bytes(cols.id_data[start:])
        seen = self.streams.get(key)
        if seen is None:
            self.streams[key] = [cols.count, first, last]
        else:
            seen[0] += cols.count
            seen[2] = last
        self.entries += cols.count
        self.bytes += size

    def report(self, output: str | None, seconds: float) -> dict[str, Any]:
        return {
            "output": output,
            "streams": [
                {"stream": k, "entries": n, "first-id": a, "last-id": b}
                for k, (n, a, b) in self.streams.items()
            ],
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(seconds, 3),
        }


def _store_total(
    store: rstore.Store, keys: list[bytes] | None, low: ID, high: ID
) -> tuple[int, list[bytes]]:
    """Entries (about: whole nodes at both ends) the export will write, for the progress bar."""

    def plan(view: rstore.StoreView) -> tuple[int, list[bytes]]:
        chosen = rstore.select_streams(view.keys(), keys)
        return sum(n.entries for k in chosen for n in view.node_index(k, low, high)), chosen

    return store.view(plan)


def _export(
    batches: Iterator[tuple[bytes, rstore.Columns]],
    out: BinaryIO,
    tally: _Tally,
    report: Progress | None,
    total: int | None,
) -> None:
    write = out.write
    for key, cols in batches:
        data = rstore.encode_columns(key, cols)
        write(data)
        tally.add(key, cols, len(data))
        if report is not None:
            report(tally.entries, max(total or 0, tally.entries))
    if report is not None and tally.entries:
        report(tally.entries, tally.entries)  # the totals counted whole nodes or streams


@click.command("export", short_help="Write streams' entries as JSON lines (lossless).")
@click.argument("streams", nargs=-1, metavar="[STREAM|GLOB]...")
@click.option("--start", default="-", metavar="ID|TIME", help="The first ID or time (default -).")
@click.option("--end", default="+", metavar="ID|TIME", help="The last ID or time (default +).")
@click.option(
    "--from-dump",
    "dump_file",
    type=click.Path(dir_okay=False),
    help="Read the streams from this RDB file instead of the store.",
)
@click.option(
    "--db",
    type=click.IntRange(min=0),
    help="The database (default 0): the file's with --from-dump, else the store's.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to this file (complete or not at all) instead of stdout.",
)
@click.option("--force", is_flag=True, help="With -o: replace FILE if it exists.")
@progress_option
@json_option
@unescape_option
@pass_opener
def export_command(
    opener: StoreOpener,
    streams: tuple[str, ...],
    start: str,
    end: str,
    dump_file: str | None,
    db: int | None,
    output: str | None,
    force: bool,
    progress: bool | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Write the entries of the selected streams as JSON lines, one entry a line:
    {"stream": ..., "id": "MS-SEQ", "fields": [[field, value], ...]} with fields in stored
    order (repeats kept) and bytes that are not UTF-8 as {"base64": ...}.  `rstore import`
    reads it back byte for byte; docs/replay.md describes the format.

    Each argument is a stream name, or a glob (holding *, ?, [ or \\) as KEYS takes it; no
    argument exports every stream.  Streams come one after another in name order, each in ID
    order.  A name that is not a stream, or a glob that matches none, is an error.  --start and
    --end are IDs or times as `range` takes them (1h, 2026-11-01T10:00, (ID), inclusive
    unless written (ID.

    With -o FILE the file appears only once complete, and a summary line is printed (--json:
    a JSON report on stdout); without, the lines go to stdout and --json prints the report on
    stderr at the end.

    \b
    Examples:
      rstore export > all.jsonl
      rstore export events 'orders:*' --start 2h -o recent.jsonl
      rstore export --from-dump dump.rdb --db 1 events | gzip > events.jsonl.gz
    """
    if db is not None and dump_file is None:  # export's own --db: the store's database
        opener = opener.with_db(db)
    keys = [to_bytes(s, unescape, "STREAM") for s in streams] or None
    low = _bound(start, is_end=False, param="--start")
    high = _bound(end, is_end=True, param="--end")
    began = time.perf_counter()
    tally = _Tally()
    with progress_reporter("exporting", progress) as report:
        if dump_file is not None:
            with file_errors(dump_file, "read"):
                index = rstore.index_rdb(dump_file)
            total = None
            if report is not None:
                chosen = rstore.select_streams([s.key for s in index if s.db == (db or 0)], keys)
                total = sum(s.state.length for s in index if s.db == (db or 0) and s.key in chosen)
            batches = rstore.batches_from_rdb(dump_file, keys, low, high, db=db or 0, index=index)
            with atomic_output(output, force) as out:
                _export(batches, out, tally, report, total)
        else:
            with opener.open(create=False) as store:
                total = _store_total(store, keys, low, high)[0] if report is not None else None
                batches = rstore.batches_from_store(store, keys, low, high)
                with atomic_output(output, force) as out:
                    _export(batches, out, tally, report, total)
    _summary(tally, output, time.perf_counter() - began, as_json)


def _summary(tally: _Tally, output: str | None, seconds: float, as_json: bool) -> None:
    to_file = output not in (None, "-")
    if as_json:
        report = tally.report(output if to_file else None, seconds)
        if to_file:
            echo_json(report)
        else:
            click.echo(dumps(report).encode("utf-8"), err=True)
    elif to_file:
        assert output is not None
        streams = counted(len(tally.streams), "stream")
        click.echo(
            f"exported {counted(tally.entries, 'entry', 'entries')} of {streams} to "
            f"{show_path(output)} ({tally.bytes} bytes, {seconds:.2f} s)"
        )
    if not tally.entries:
        click.echo("note: no entries in the selected streams and range", err=True)


COMMANDS: list[click.Command] = [export_command]
