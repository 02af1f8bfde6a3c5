"""``rstore check`` (verify the store's files, checksums and counters), ``rstore upgrade``
(rewrite a store of an older on-disk format) and ``rstore compact`` (give the space of deleted
data back to the file system)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

import rstore

from .context import StoreOpener, json_option, pass_opener
from .format import counted
from .jsonout import echo_json
from .progress import progress_option, progress_reporter

if TYPE_CHECKING:
    from rstore import CompactReport

__all__ = ["COMMANDS"]


@click.command("check", short_help="Verify the store's integrity.")
@json_option
@pass_opener
def check_command(opener: StoreOpener, as_json: bool) -> None:
    """Verify the whole store (rstore.check_store): LMDB's structure walked from the file,
    every record's checksum, every stream node's structure and every stored counter --
    stream lengths, node counts, first IDs, the groups' pending and consumer counts and both
    indexes of their pending lists.  It only reads, on one consistent snapshot, so it may run
    while other processes use the store; it also answers for a store too damaged to open,
    naming each damaged page with its sub-database and the streams it held.

    Prints OK (exit status 0), or each problem found on its own line followed by a one-line
    error on stderr (exit status 1).  --json prints {"ok": true|false, "problems": [...]}.

    \b
    Examples:
      rstore check
      rstore check --json
      rstore --store /var/lib/queue check
    """
    problems = rstore.check_store(rstore.database_path(opener.store_path, opener.db or 0))
    if as_json:
        echo_json({"ok": not problems, "problems": problems})
    elif not problems:
        click.echo("OK")
    else:
        for problem in problems:
            click.echo(" ".join(problem.split()))
    if problems:
        click.echo(f"Error: the store has {counted(len(problems), 'problem')}", err=True)
        raise click.exceptions.Exit(1)


@click.command("upgrade", short_help="Rewrite a store of an older format.")
@json_option
@pass_opener
def upgrade_command(opener: StoreOpener, as_json: bool) -> None:
    """Rewrite the store in the current on-disk format (format 2: a checksum on every
    record), in one transaction: all or nothing.  A store of an older format is read by this
    rstore but not written until it is upgraded; a current store is left as it is.  Other
    processes may keep the store open; they see the upgraded store on their next command.

    \b
    Examples:
      rstore upgrade --json
      rstore upgrade --store /var/lib/queue
    """
    with opener.open(create=False) as store, progress_reporter("upgrading", None) as report:
        records = store.upgrade(progress=report)
    if as_json:
        echo_json({"upgraded": records > 0, "records": records})
    elif records:
        click.echo(f"upgraded: {counted(records, 'record')} rewritten with checksums")
    else:
        click.echo("already current: nothing to do")


@click.command("compact", short_help="Give the space of deleted data back to the disk.")
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="When other processes have the store open, wait up to SECONDS for them to close it "
    "(default: fail at once, naming them).",
)
@progress_option
@json_option
@pass_opener
def compact_command(
    opener: StoreOpener, wait_s: float, progress: bool | None, as_json: bool
) -> None:
    """Rewrite the store's files with only the pages in use (rstore.compact_store): LMDB
    reuses the pages that deleted and trimmed entries leave, but never shrinks data.mdb, and
    the write-ahead log keeps its size too.  Every database of the store is compacted
    (<store>/db<N> too); nothing else changes.  Safe against a crash or power loss at any
    point: the store is then the old one or the compacted one.

    It needs the store to itself: when other processes have it open it fails at once, naming
    them and changing nothing (--wait SECONDS waits for them instead); processes that open the
    store meanwhile wait until it is done.  The disk needs room for the copy (about the size of
    the live data).  Prints each database's sizes before and after; a progress bar on a
    terminal.

    \b
    Examples:
      rstore compact
      rstore compact --wait 30 --json
      rstore --store /var/lib/queue compact
    """
    if opener.readonly:
        raise click.UsageError("compact rewrites the store's files: it cannot run with --read-only")
    if opener.db is not None:
        raise click.UsageError("compact compacts every database of the store: no --db")
    with progress_reporter("compacting", progress) as report:
        done = rstore.compact_store(opener.store_path, wait=wait_s, progress=report)
    if as_json:
        echo_json(_compact_json(opener.store_path, done))
        return
    for db in done.databases:
        line = f"db{db.db}: data.mdb {_size(db.bytes_before)} -> {_size(db.bytes_after)} "
        line += f"({db.pages_before} -> {db.pages_after} pages)"
        if db.log_bytes_before:
            line += f", wal.log {_size(db.log_bytes_before)} -> {_size(db.log_bytes_after)}"
        click.echo(line)
    click.echo(
        f"compacted: {_size(done.bytes_before)} -> {_size(done.bytes_after)} "
        f"in {done.seconds:.2f} s"
    )


def _compact_json(path: str, done: CompactReport) -> dict[str, Any]:
    return {
        "path": path,
        "bytes-before": done.bytes_before,
        "bytes-after": done.bytes_after,
        "seconds": round(done.seconds, 6),
        "databases": [
            {
                "db": db.db,
                "path": db.path,
                "format": db.format,
                "bytes-before": db.bytes_before,
                "bytes-after": db.bytes_after,
                "pages-before": db.pages_before,
                "pages-after": db.pages_after,
                "log-bytes-before": db.log_bytes_before,
                "log-bytes-after": db.log_bytes_after,
            }
            for db in done.databases
        ],
    }


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


COMMANDS: list[click.Command] = [check_command, upgrade_command, compact_command]
