"""``rstore salvage SRC DST``: copy what can be read of a damaged store into a new one."""

from __future__ import annotations

from typing import Any

import click

import rstore

from .context import StoreOpener, json_option, pass_opener
from .format import show_path
from .jsonout import echo_json
from .progress import progress_option, progress_reporter

__all__ = ["COMMANDS", "EXIT_INCOMPLETE"]

#: Exit status of a salvage that could not copy everything (the report lists what).
EXIT_INCOMPLETE = 3


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def _counts(report: rstore.SalvageReport) -> str:
    return ", ".join((
        _count(len(report.streams), "stream"),
        _count(report.entries, "entry", "entries"),
        _count(report.groups, "group"),
        _count(report.consumers, "consumer"),
        _count(report.pending, "pending entry", "pending entries"),
    ))  # fmt: skip


def _id(entry_id: tuple[int, int] | None) -> str | None:
    return None if entry_id is None else f"{entry_id[0]}-{entry_id[1]}"


def _stream_json(s: rstore.StreamSalvage) -> dict[str, Any]:
    return {
        "name": s.name,
        "original-name": s.original_name,
        "entries": s.entries,
        "stored-length": s.stored_length,
        "groups": s.groups,
        "consumers": s.consumers,
        "pending": s.pending,
        "lost-entries": [
            {"from": _id(r.first), "before": _id(r.before), "cause": r.cause}
            for r in s.lost_entries
        ],
        "lost": s.lost,
    }


def _json(report: rstore.SalvageReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source": report.source,
        "target": report.target,
        "complete": report.complete,
        "format": report.format,
        "snapshot": report.snapshot,
        "seconds": round(report.seconds, 3),
        "entries": report.entries,
        "groups": report.groups,
        "consumers": report.consumers,
        "pending": report.pending,
        "streams": [_stream_json(s) for s in report.streams],
        "lost": report.losses(),
        "damaged": report.damaged,
        "notes": report.notes,
    }
    if report.db == 0:
        out["databases"] = {str(n): _json(d) for n, d in report.databases.items()}
    return out


def _text(report: rstore.SalvageReport) -> None:
    source, target = show_path(report.source), show_path(report.target)
    fmt = "unknown" if report.format is None else str(report.format)
    click.echo(
        f"salvaged {source} into {target}: {_counts(report)} (transaction {report.snapshot}, "
        f"store format {fmt}), {report.seconds:.2f} s"
    )
    for note in report.notes:
        click.echo(f"note: {note}")
    for loss in report.losses():
        click.echo(f"lost: {loss}")
    for n, db in report.databases.items():
        click.echo(f"db {n}: {_counts(db)}")
        for note in db.notes:
            click.echo(f"  note: {note}")
        for loss in db.losses():
            click.echo(f"  lost: {loss}")


@click.command("salvage", short_help="Copy what can be read of a damaged store.")
@click.argument("src", type=click.Path(path_type=str))
@click.argument("dst", type=click.Path(path_type=str))
@click.option(
    "--previous",
    is_flag=True,
    help="Read the older of LMDB's two snapshots (one commit older) instead of choosing.",
)
@progress_option
@json_option
@pass_opener
def salvage_command(
    opener: StoreOpener, src: str, dst: str, previous: bool, progress: bool | None, as_json: bool
) -> None:
    """Copy every stream, entry, group, consumer and pending entry of the store SRC that can
    be read into a new store DST, and list what could not be read: per stream, the ranges of
    entry IDs lost.  SRC may be too damaged to open (a damaged page of LMDB's trees makes
    every other command refuse it); it is only read, never written.  Its databases (SRC/dbN)
    go to DST/dbN.  DST must not exist or be an empty directory.

    Exit status 0 when everything was copied, 3 when something could not be (the `lost:`
    lines), 1 when nothing was salvaged (SRC is not a store, DST is not empty, ...).

    \b
    Examples:
      rstore salvage /var/lib/queue /var/lib/queue-salvaged
      rstore salvage damaged-store new-store --json
    """
    if opener.db is not None:
        raise click.UsageError("salvage copies every database of SRC (SRC/dbN to DST/dbN): no --db")
    opener.note_deprecated()
    with progress_reporter("salvaging", progress) as report_progress:
        report = rstore.salvage_store(src, dst, previous=previous, progress=report_progress)
    if as_json:
        echo_json(_json(report))
    else:
        _text(report)
    if not report.complete:
        lost = len(report.losses()) + sum(len(d.losses()) for d in report.databases.values())
        click.echo(
            f"Error: salvage incomplete: {_count(lost, 'loss', 'losses')}; "
            f"{show_path(dst)} holds everything that could be read",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_INCOMPLETE)


COMMANDS: list[click.Command] = [salvage_command]
