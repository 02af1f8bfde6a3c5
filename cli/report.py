"""``report``: one self-contained HTML file with charts of a store's streams, or a dump's --
their size, their history (entries per minute), how full their nodes are, and their consumer
groups (:func:`rstore.monitor.report.write_report`)."""

from __future__ import annotations

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .files import atomic_output, file_errors
from .format import counted, show_path
from .jsonout import echo_json
from .params import to_bytes
from .progress import progress_option, progress_reporter

__all__ = ["COMMANDS", "DEFAULT_OUTPUT"]

#: Where the report goes without ``-o``.
DEFAULT_OUTPUT = "rstore-report.html"


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"


@click.command("report", short_help="Write an HTML report of the streams, with charts.")
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=DEFAULT_OUTPUT,
    show_default=True,
    help="The HTML file to write, replaced if it exists (written whole or not at all); - "
    "writes to stdout.",
)
@click.option(
    "--rdb",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Report on this RDB file (from rstore save, Redis or Valkey) instead of the store: "
    "every database of it, or database N alone with --db N.",
)
@click.option(
    "--match",
    "pattern",
    metavar="PATTERN",
    help="Only the streams whose name matches this glob (KEYS's syntax: *, ?, [a-z], \\).",
)
@progress_option
@json_option
@unescape_option
@pass_opener
def report_command(
    opener: StoreOpener,
    output: str,
    rdb: str | None,
    pattern: str | None,
    progress: bool | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Write one self-contained HTML file about the streams of the store (opened read-only),
    or of an RDB file with --rdb: per stream its size, its whole history as entries per minute
    (from the entry IDs' times; wider buckets for long histories), how full its nodes are, and
    its consumer groups with their lag, pending entries and the age of the oldest.  The page
    needs no network and no script: open it in any browser, attach it to a ticket.

    Every stream's entries are read once, in bounded memory, with a progress bar on a
    terminal.  Prints what it wrote (--json: as JSON).

    \b
    Examples:
      rstore report
      rstore report -o /tmp/queue.html --match 'orders:*'
      rstore report --rdb dump.rdb --json
      rstore --store /var/lib/queue report -o - > report.html
    """
    opener.note_deprecated()
    if as_json and output == "-":
        raise click.UsageError("--json prints to stdout, and so does -o -: give -o FILE")
    match = None if pattern is None else to_bytes(pattern, unescape, "--match")
    with progress_reporter("reading", progress) as report:
        if rdb is not None:
            with file_errors(rdb, "read"), atomic_output(output, force=True) as out:
                summary = rstore.write_report(
                    out, rdb=rdb, pattern=match, db=opener.db, progress=report
                )
        else:
            with (
                opener._replace(readonly=True).open(create=False) as store,
                atomic_output(output, force=True) as out,
            ):
                summary = rstore.write_report(out, store=store, pattern=match, progress=report)
    _show(output, summary, as_json)


def _show(output: str, summary: rstore.ReportSummary, as_json: bool) -> None:
    if as_json:
        echo_json({
            "path": output, "source": summary.source, "streams": summary.streams,
            "entries": summary.entries, "groups": summary.groups, "pending": summary.pending,
            "bytes": summary.bytes, "made-time": summary.made_ms,
        })  # fmt: skip
    elif output != "-":
        click.echo(
            f"wrote {show_path(output)} ({_size(summary.bytes)}): "
            f"{counted(summary.streams, 'stream')}, "
            f"{counted(summary.entries, 'entry', 'entries')}, "
            f"{counted(summary.groups, 'consumer group')}"
        )


COMMANDS: list[click.Command] = [report_command]
